"""The agents folder's file events: a status file renamed into place is seen, and soon."""

from __future__ import annotations

import os
import time
from pathlib import Path

from wave_orchestrator.runtime.pool.watcher import AgentFolderWatcher


def rename_into_place(folder: Path, name: str) -> None:
    """As run.sh and wave's atomic writes do: a temporary file beside it, then a rename."""
    tmp = folder / f".{name}.{os.getpid()}"
    tmp.write_text("{}\n")
    os.replace(tmp, folder / name)


def test_a_status_renamed_into_place_is_an_event_and_other_names_are_not(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    (agents / "A1").mkdir(parents=True)
    watcher = AgentFolderWatcher(agents)
    assert watcher.start() and watcher.start()  # a second start is the same watch
    try:
        rename_into_place(agents / "A1", "launch.json")
        rename_into_place(agents / "A1", "status.json")
        assert watcher.get(5) == ("A1", "status.json")
        assert watcher.drain() == []
    finally:
        watcher.stop()


def test_a_rename_out_of_the_folder_does_not_hold_up_the_events_behind_it(
    tmp_path: Path,
) -> None:
    """watchdog keeps a rename's first half up to 0.5 s to pair it, and its queue sleeps on
    it: a file moved out (no second half here) held every later event for that long."""
    agents, elsewhere = tmp_path / "agents", tmp_path / "elsewhere"
    (agents / "A1").mkdir(parents=True)
    elsewhere.mkdir()
    watcher = AgentFolderWatcher(agents)
    assert watcher.start()
    try:
        (agents / "A1" / "old.log").write_text("x")
        os.replace(agents / "A1" / "old.log", elsewhere / "old.log")
        began = time.monotonic()
        rename_into_place(agents / "A1", "status.json")
        assert watcher.get(5) == ("A1", "status.json")
        assert time.monotonic() - began < 0.4  # held, it takes 0.5 s or more
    finally:
        watcher.stop()
