"""The run state's one reader of wave states, over a file anyone can write."""

from __future__ import annotations

import json
from pathlib import Path

from wave_orchestrator.state.run_state import RunState


def test_waves_in_reads_only_checked_entries_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run-state.json"
    waves = {
        "10": {"state": "running"},
        "2": {"state": "running"},
        "3": {"state": "completed"},
        "x": {"state": "running"},  # no wave number
        "4": ["running"],  # no entry
        "5": {"state": ["running"]},  # no state word
    }
    path.write_text(json.dumps({"lane": "main", "waves": waves}))
    state = RunState(path, "main")
    assert state.waves_in("running") == [2, 10]
    assert state.waves_in("completed") == [3]
    assert 3 in state.waves_in() and 10 in state.waves_in()
