"""The launcher's ledger: what it writes reads back, the last record of a key counts, and a
hostile file (torn, forged fields, a link) is read as such and never written through."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from wave_orchestrator.state.ledger import (
    COMPACT_AT,
    Ledger,
    end_doubt,
    ledger_home,
    ledger_path,
    read_ledger,
    success_doubt,
)

DIGEST = "a" * 64


def test_it_lives_outside_the_repository_in_a_private_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    ledger = Ledger.for_lane(repo, "main")
    assert ledger.path.is_relative_to(ledger_home()) and not ledger.path.is_relative_to(repo)
    assert ledger.path != ledger_path(tmp_path / "other", "main")  # one per repository
    assert ledger.open() is None  # no ledger yet
    for folder in (ledger_home(), ledger.path.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    with pytest.raises(ValueError):
        ledger_path(repo, "../main")


def test_what_it_writes_reads_back_and_the_last_record_counts(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "main.jsonl")
    ledger.agents(1, [("A", 1, DIGEST, "launched"), ("B", 1, None, "launched")])
    ledger.agents(1, [("A", 1, DIGEST, "completed")])
    ledger.wave_state(1, "running")
    ledger.wave_state(1, "failed")
    ledger.governor({"spent_usd": 2.5})
    view = read_ledger(ledger.path)
    assert view is not None
    a, b = view.agent(1, "A"), view.agent(1, "B")
    assert a is not None and (a.attempt, a.outcome, a.fingerprint) == (1, "completed", DIGEST)
    assert b is not None and b.outcome == "launched" and b.fingerprint is None
    assert view.wave_state(1) == "failed" and view.governor == {"spent_usd": 2.5}
    assert success_doubt(view, 1, "A", DIGEST) is None
    assert success_doubt(view, 1, "A", "b" * 64) == "what shapes its work changed"
    assert success_doubt(view, 1, "B", DIGEST) == "the launcher saw it end launched"
    assert end_doubt(view, 1, "B", 1, "completed") is None  # ended with no launcher watching
    assert end_doubt(view, 1, "A", 1, "failed") is not None
    assert end_doubt(view, 1, "A", 2, "completed") == "no launcher launched its attempt 2"


@pytest.mark.parametrize(
    "line",
    [
        '{"kind": "agent", "wave": 1, "agent": "A", "attempt": 1, "outcome": "comple',  # torn
        '{"kind": "agent", "wave": 1, "agent": "A", "attempt": 1, "outcome": "won"}',
        '{"kind": "agent", "wave": 1, "agent": "../A", "attempt": 1, "outcome": "completed"}',
        '{"kind": "agent", "wave": 1e400, "agent": "A", "attempt": 1, "outcome": "completed"}',
        '{"kind": "agent", "wave": 1, "agent": "A", "attempt": true, "outcome": "completed"}',
        '{"kind": "agent", "wave": 1, "agent": "A", "attempt": NaN, "outcome": "completed"}',
        '{"kind": "wave", "wave": 1, "state": ["completed"]}',
        "[" * 100000,
        "\xff\xfe not utf-8",
    ],
)
def test_a_hostile_line_is_skipped_and_the_next_one_kept(tmp_path: Path, line: str) -> None:
    path = tmp_path / "main.jsonl"
    path.write_text(line + "\n", errors="surrogateescape")
    Ledger(path).agents(1, [("B", 1, None, "failed")])
    view = read_ledger(path)
    assert view is not None and view.agent(1, "A") is None and view.waves == {}
    assert view.agent(1, "B") is not None


def test_a_bad_fingerprint_is_no_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "main.jsonl"
    record = {"kind": "agent", "wave": 1, "agent": "A", "attempt": 1, "outcome": "completed"}
    path.write_text(json.dumps({**record, "fingerprint": "not a digest"}) + "\n")
    view = read_ledger(path)
    assert view is not None and success_doubt(view, 1, "A", "not a digest") is not None


def test_a_link_in_its_place_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_text(json.dumps({"kind": "wave", "wave": 1, "state": "completed"}) + "\n")
    path = tmp_path / "main.jsonl"
    path.symlink_to(target)
    view = read_ledger(path)
    assert view is not None and view.waves == {}  # the link is not followed
    ledger = Ledger(path)
    ledger.wave_state(2, "completed")
    assert ledger.broken and '"wave":2' not in target.read_text()


def test_a_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = ledger_home()
    home.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, home)
    ledger = Ledger.for_lane(tmp_path, "main")
    assert ledger.open() is None and ledger.broken


def test_an_overgrown_ledger_is_compacted_to_what_counts(tmp_path: Path) -> None:
    path = tmp_path / "main.jsonl"
    ledger = Ledger(path)
    line = [("A", 1, DIGEST, "launched")] * 1000
    while not path.exists() or path.stat().st_size <= COMPACT_AT:
        ledger.agents(1, line)
    ledger.agents(1, [("A", 2, DIGEST, "completed")])
    ledger.wave_state(1, "completed")
    before = read_ledger(path)
    assert Ledger(path).open() == before  # the same word, from far fewer lines
    assert path.stat().st_size < 1000
