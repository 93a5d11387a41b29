"""The coordination log: posts, merges by id, refusals naming the valid set, untrusted lines,
and many writers at once."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from wave_orchestrator.coordination.log import KINDS, CoordLog
from wave_orchestrator.errors import UsageError


def test_post_then_update_merges_by_id_with_later_fields_winning(tmp_path: Path) -> None:
    log = CoordLog(tmp_path / "wave-1.jsonl", 1)
    rid = log.post(kind="request", summary="expose GET /items", agent="api", targets=["agent:ui"])
    log.update(rid, status="acknowledged", detail="on it")
    log.update(rid, status="resolved")
    (item,) = log.records().values()
    assert (item.id, item.kind, item.agent, item.targets) == (rid, "request", "api", ("ui",))
    assert (item.status, item.detail, item.is_open) == ("resolved", "on it", False)
    assert item.created_at <= item.updated_at
    assert len((tmp_path / "wave-1.jsonl").read_text().splitlines()) == 3  # appended, not rewritten


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"kind": "question"}, "request, ack, claim"),
        ({"status": "done"}, "open, acknowledged, in_progress, resolved, closed, cancelled"),
        ({"priority": "asap"}, "low, normal, high, urgent"),
        ({"targets": ["../etc"]}, "agent:ID or ID"),
        ({"summary": "  "}, "summary is empty"),
    ],
)
def test_invalid_values_are_refused_with_the_valid_set(
    tmp_path: Path, fields: dict[str, object], named: str
) -> None:
    log = CoordLog(tmp_path / "wave-1.jsonl", 1)
    values = {"kind": "request", "summary": "x", **fields}
    with pytest.raises(UsageError, match=named) as err:
        log.post(agent="api", **values)  # type: ignore[arg-type]
    assert err.value.exit_code == 2
    assert not (tmp_path / "wave-1.jsonl").exists()


def test_updating_an_unknown_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no coordination item"):
        CoordLog(tmp_path / "w.jsonl", 1).update("c-nothere", status="resolved")


def test_untrusted_lines_are_checked_field_by_field(tmp_path: Path) -> None:
    path = tmp_path / "wave-1.jsonl"
    log = CoordLog(path, 1)
    rid = log.post(kind="blocker", summary="schema undecided", agent="db", priority="high")
    with path.open("a") as fh:
        fh.write("not json\n")
        fh.write(json.dumps([1, 2]) + "\n")
        fh.write(json.dumps({"id": rid, "status": "running", "priority": 7}) + "\n")
        fh.write(json.dumps({"id": "c-x", "kind": "rumour", "summary": "s", "agent": "a"}) + "\n")
        fh.write(json.dumps({"id": "c-y", "summary": "only an update"}) + "\n")
        fh.write('{"id": "c-z", "kind": "ack", "summary": "s", "agent": "a", "wave": 1e400}\n')
    items = log.records()
    assert items[rid].status == "open" and items[rid].priority == "high"  # bad values ignored
    assert "c-x" not in items and "c-y" not in items  # no valid kind: not an item
    assert "c-z" not in items  # 1e400 is not JSON wave reads: the whole line is refused


def _post_many(path: str, worker: int) -> None:
    log = CoordLog(Path(path), 1)
    log.post(kind="evidence", summary=f"worker {worker}", detail="x" * 3900, agent=f"a{worker}")


def test_fifty_processes_posting_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "wave-1.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_post_many, args=(str(path), n)) for n in range(50)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    items = CoordLog(path, 1).records()
    assert sorted(r.agent for r in items.values()) == sorted(f"a{n}" for n in range(50))
    # No torn line: every line whole JSON (a blank one, left by the guard against a torn last
    # line when it reads the file mid-append, is no line to a reader).
    assert all(json.loads(line) for line in path.read_text().splitlines() if line)


def test_every_kind_can_be_posted(tmp_path: Path) -> None:
    log = CoordLog(tmp_path / "w.jsonl", 1)
    for kind in KINDS:
        log.post(kind=kind, summary=kind, agent="a")
    assert sorted(r.kind for r in log.records().values()) == sorted(KINDS)


def test_a_post_after_a_line_torn_by_a_full_disk_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short write whose newline the full disk refuses too leaves a torn line: the post
    fails, and the next post (once there is room) is read back, not swallowed by it."""
    import errno
    import os

    from wave_orchestrator.state import fsutil

    log = CoordLog(tmp_path / "wave-1.jsonl", 1)
    first = log.post(kind="evidence", summary="one", agent="A")
    real = os.write

    def full(fd: int, data: bytes) -> int:
        if data == b"\n":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data[:10])

    monkeypatch.setattr(fsutil.os, "write", full)
    with pytest.raises(OSError, match="only 10 of"):
        log.post(kind="evidence", summary="torn", agent="A")
    monkeypatch.setattr(fsutil.os, "write", real)
    assert not (tmp_path / "wave-1.jsonl").read_bytes().endswith(b"\n")
    third = log.post(kind="evidence", summary="three", agent="A")
    log.update(third, status="resolved")
    assert list(log.records()) == [first, third]
    assert log.records()[third].status == "resolved"
