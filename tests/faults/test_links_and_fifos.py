"""Fault class 1: writes through links, FIFOs. A state dir holding a symlink, a FIFO or a folder
where a file belongs never makes wave write, truncate, append or delete outside it, and never
makes it wait; a prompt_file that is a FIFO is refused at once."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libtmux
import pytest
from helpers import Repo, local_lane

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.desk.claims import Desk
from wave_orchestrator.runtime.agent.materialize import materialize
from wave_orchestrator.runtime.agent.plan import plan_agent
from wave_orchestrator.state.fsutil import UnsafePath, read_json, write_json_atomic
from wave_orchestrator.state.jsonl import append_jsonl, read_jsonl
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.lock import LaneLock
from wave_orchestrator.state.status import StatusUnreadable, read_status

WAVE = "agents:\n  - {id: A1, prompt: work, executor: {local: {command: 'echo hi'}}}\n"


def finishes(fn: Callable[[], Any], seconds: float = 5.0) -> Any:
    """Run ``fn`` in a thread: it must return (or raise) within ``seconds``, never block."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} blocked for more than {seconds}s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def outside_file(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "precious.txt"
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text("precious\n")
    return victim


# -- the fsutil seam --------------------------------------------------------------------------
def test_append_and_atomic_write_refuse_a_symlinked_state_file(tmp_path: Path) -> None:
    victim = outside_file(tmp_path)
    events = tmp_path / "state" / "events.jsonl"
    events.parent.mkdir()
    events.symlink_to(victim)
    with pytest.raises(UnsafePath, match="symbolic link"):
        append_jsonl(events, {"event": "x"})
    with pytest.raises(UnsafePath, match="symbolic link"):
        write_json_atomic(events, {"x": 1})
    assert victim.read_text() == "precious\n" and events.is_symlink()


def test_reads_of_fifos_and_folders_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "status.json"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePath, match="FIFO"):
        finishes(lambda: read_json(fifo))
    with pytest.raises(StatusUnreadable, match="FIFO"):
        finishes(lambda: read_status(fifo))
    assert finishes(lambda: list(read_jsonl(fifo))) == []
    folder = tmp_path / "run-state.json"
    folder.mkdir()
    with pytest.raises(UnsafePath, match="folder"):
        read_json(folder)
    with pytest.raises(UnsafePath, match="FIFO"):
        finishes(lambda: append_jsonl(fifo, {"event": "x"}))


def test_lock_file_that_is_a_symlink_is_not_written_through(tmp_path: Path) -> None:
    victim = outside_file(tmp_path)
    lock = tmp_path / "state" / "launcher.lock"
    lock.parent.mkdir()
    lock.symlink_to(victim)
    with pytest.raises(UnsafePath, match="symbolic link"):
        LaneLock(lock, "main").acquire()
    assert victim.read_text() == "precious\n"


def test_files_the_wrapper_writes_must_not_be_links_when_an_agent_is_launched(
    repo: Repo, tmp_path: Path
) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    lane = load_lane(repo.root, "main")
    wave = lane.wave(1)
    launch = plan_agent(lane, StateLayout(lane.state_dir, "main"), wave, wave.agent("A1"))
    victim = outside_file(tmp_path)
    launch.paths.dir.mkdir(parents=True)
    launch.paths.output_log.symlink_to(victim)  # run.sh appends the agent's output here
    with pytest.raises(UnsafePath, match=r"output\.log is a symbolic link"):
        materialize(launch)
    assert victim.read_text() == "precious\n" and not launch.paths.run_script.exists()


def test_desk_database_that_is_a_link_is_refused(tmp_path: Path) -> None:
    victim = outside_file(tmp_path)
    db = tmp_path / "state" / "desk.sqlite3"
    db.parent.mkdir()
    db.symlink_to(victim)
    with pytest.raises(UnsafePath, match=r"desk\.sqlite3 is a symbolic link"):
        Desk(db, tmp_path, 1)
    assert victim.read_text() == "precious\n"


# -- the dry run -----------------------------------------------------------------------------
def test_dry_run_through_a_symlinked_dry_run_folder_deletes_nothing(
    repo: Repo, tmp_path: Path
) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    outside = tmp_path / "outside"
    (outside / "waves").mkdir(parents=True)
    (outside / "waves" / "keep.txt").write_text("keep\n")
    state = repo.state("main")
    state.mkdir(parents=True)
    (state / "dry-run").symlink_to(outside)
    result = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
    assert result.returncode != 0
    assert "dry-run is a symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert (outside / "waves" / "keep.txt").read_text() == "keep\n"
    assert sorted(p.name for p in outside.iterdir()) == ["waves"]


def test_dry_run_never_removes_a_waves_tree_it_did_not_create(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    foreign = repo.state("main") / "dry-run" / "waves"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine\n")
    result = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
    assert result.returncode == 1
    assert "wave did not create it" in result.stderr and "Traceback" not in result.stderr
    assert (foreign / "notes.txt").read_text() == "mine\n"
    # A tree wave made itself is remade (kept where the same) by the next dry run.
    (foreign / "notes.txt").unlink()
    foreign.rmdir()
    for _ in range(2):
        again = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
        assert again.returncode == 0, again.stderr
    assert (repo.state("main") / "dry-run/waves/wave-1/agents/A1/launch-preview.json").is_file()


def test_dry_run_refuses_a_symlinked_preview_and_a_symlinked_state_root(
    repo: Repo, tmp_path: Path
) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    victim = outside_file(tmp_path)
    base = repo.state("main") / "dry-run"
    base.mkdir(parents=True)
    (base / "launch-preview.json").symlink_to(victim)
    result = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
    assert result.returncode == 1 and "launch-preview.json is a symbolic link" in result.stderr
    assert victim.read_text() == "precious\n"
    # `.wave` itself linked out of the repository: refused before anything is written.
    (repo.root / ".wave").rename(tmp_path / "moved")
    (repo.root / ".wave").symlink_to(victim.parent)
    result = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
    assert result.returncode == 1 and ".wave is a symbolic link" in result.stderr
    assert sorted(p.name for p in victim.parent.iterdir()) == ["precious.txt"]


def test_a_dry_run_again_removes_links_and_fifos_in_its_tree_and_writes_through_none(
    repo: Repo, tmp_path: Path
) -> None:
    """An earlier dry run's tree is kept where it is the same; a link or FIFO found in it where
    a file or folder belongs is removed (never followed, never waited on) and made anew."""
    two = WAVE + "  - {id: A2, prompt: work, executor: {local: {command: 'echo hi'}}}\n"
    repo.lane("main", local_lane(), {1: two})
    assert repo.wave("launch", "--lane", "main", "--dry-run", timeout=30).returncode == 0
    victim, elsewhere = outside_file(tmp_path), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "run.sh").write_text("theirs\n")
    agents = repo.state("main") / "dry-run/waves/wave-1/agents"
    for name in ("prompt.md", "run.sh"):
        (agents / "A1" / name).unlink()
        (agents / "A1" / name).symlink_to(victim)
    os.unlink(agents / "A1" / "launch-preview.json")
    os.mkfifo(agents / "A1" / "launch-preview.json")
    shutil.rmtree(agents / "A2")
    (agents / "A2").symlink_to(elsewhere)
    result = repo.wave("launch", "--lane", "main", "--dry-run", timeout=30)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["run.sh"]
    assert (elsewhere / "run.sh").read_text() == "theirs\n"
    for agent in ("A1", "A2"):
        assert not (agents / agent).is_symlink()
        for name in ("prompt.md", "run.sh", "launch-preview.json"):
            path = agents / agent / name
            assert path.is_file() and not path.is_symlink(), path
    assert "work" in (agents / "A1" / "prompt.md").read_text()


def test_prompt_file_that_is_a_fifo_is_refused_at_once(repo: Repo) -> None:
    repo.lane(
        "main",
        local_lane(),
        {1: "agents:\n  - {id: A1, prompt_file: task.md, executor: {local: {command: 'true'}}}\n"},
    )
    os.mkfifo(repo.root / "task.md")
    for command in (("validate", "--lane", "main"), ("launch", "--lane", "main", "--dry-run")):
        result = repo.wave(*command, timeout=20)  # a blocking open would hit the timeout
        assert result.returncode == 2, result.stderr
        assert "prompt_file: cannot use 'task.md'" in result.stderr and "FIFO" in result.stderr


# -- a live launch on real tmux ----------------------------------------------------------------
@pytest.mark.e2e
def test_live_launch_with_a_symlinked_event_log_stops_before_any_agent(
    tmux_repo: Repo, server: libtmux.Server, tmp_path: Path
) -> None:
    tmux_repo.lane("main", local_lane(), {1: WAVE})
    victim = outside_file(tmp_path)
    state = tmux_repo.state("main")
    state.mkdir(parents=True)
    (state / "events.jsonl").symlink_to(victim)
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=60)
    assert result.returncode == 1
    assert "events.jsonl is a symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert victim.read_text() == "precious\n"
    assert not server.sessions  # no agent was started
    assert not (state / "launcher.lock").exists()  # and the lock was released
    metrics = state / "metrics.jsonl"
    assert not metrics.exists() or not json.loads(metrics.read_text() or "null")
