from __future__ import annotations

import json
from pathlib import Path

from wave_orchestrator.state.fsutil import append_jsonl, read_jsonl, write_json_atomic


def test_jsonl_reader_skips_torn_and_invalid_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_jsonl(path, {"a": 1})
    with path.open("a") as fh:
        fh.write('{"torn": \n[1, 2]\nnot json\n')
    append_jsonl(path, {"b": 2})
    assert list(read_jsonl(path)) == [{"a": 1}, {"b": 2}]
    assert list(read_jsonl(tmp_path / "missing.jsonl")) == []


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    write_json_atomic(path, {"v": 1})
    write_json_atomic(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 2}
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]
