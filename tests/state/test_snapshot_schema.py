"""The one schema of dashboard.json: whatever the launcher may write, every reader keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.runtime.wave.snapshot import SnapshotWriter
from wave_orchestrator.state import snapshot_schema as schema
from wave_orchestrator.state.untrusted import clean_snapshot, read_snapshot


def sample(spec: Any, key: str = "x") -> Any:
    """A valid value for ``spec`` (agent ids valid where a row needs one)."""
    if isinstance(spec, schema.Text):
        return "A1" if key == "id" else f"{key} text"
    if isinstance(spec, schema.Count):
        return max(spec.minimum, 3)
    if isinstance(spec, schema.Texts):
        return ["A1", "B2"]
    if isinstance(spec, schema.Amount):
        return 2.5
    if isinstance(spec, schema.Flag):
        return True
    if isinstance(spec, schema.Obj):
        return {k: sample(v, k) for k, v in spec.fields.items()}
    if isinstance(spec, schema.Rows):
        return [{k: sample(v, k) for k, v in spec.fields.items()}]
    raise TypeError(spec)


def test_every_key_a_snapshot_can_hold_round_trips() -> None:
    full = {k: sample(v, k) for k, v in schema.SNAPSHOT.items()}
    assert {"coordination", "gate_failure"} <= set(full)  # the fields views used to drop
    assert set(full["coordination"]) == {"board", "blockers", "requests", "questions"}
    assert clean_snapshot(full) == full


def test_hostile_values_become_none_or_are_dropped() -> None:
    frame = clean_snapshot(
        {
            "wave": "1",
            "attempt": True,
            "launcher_pid": 2**40,
            "title": ["x"],
            "agents": [{"id": "../../etc"}, {"id": "A1", "exit_code": 1e400, "tries": -1}, "row"],
            "coordination": {
                "board": 7,
                "blockers": [{"id": "c-1", "summary": "x" * 5000}],
                "q": 1,
            },
            "gate_failure": ["not", "an", "object"],
            "extra": {"kept": False},
        }
    )
    assert (frame["wave"], frame["attempt"], frame["launcher_pid"], frame["title"]) == (
        None,
        None,
        None,
        None,
    )
    assert frame["agents"] == [{"id": "A1", "exit_code": None, "tries": None}]
    assert frame["coordination"] == {
        "board": None,
        "blockers": [{"id": "c-1", "summary": "x" * 300}],
    }
    assert frame["gate_failure"] is None and "extra" not in frame
    assert frame["events"] == [] and frame["waiting_on"] == []


def test_the_writer_refuses_a_field_no_reader_would_keep(tmp_path: Path) -> None:
    writer = SnapshotWriter(tmp_path / "dashboard.json", {"lane": "main", "wave": 1})
    with pytest.raises(ValueError, match=r"missing from snapshot_schema: \['surprise'\]"):
        writer.write([], [], force=True, surprise=1)
    writer.write(
        [],
        [{"at": "t", "event": "agent_finished", "agent": "A1", "secret": "x"}],
        force=True,
        status="running",
        coordination=sample(schema.SNAPSHOT["coordination"]),
    )
    frame = read_snapshot(tmp_path / "dashboard.json")
    assert frame is not None
    assert frame["events"] == [{"at": "t", "event": "agent_finished", "agent": "A1"}]
    assert frame["coordination"]["questions"][0]["question"] == "question text"
