"""Floods and faults in coordination: a notification storm, a lone surrogate, a torn write, a
huge line, a reused id, a question without its mirror item, a lock someone keeps."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane, wait_for
from structlog.testing import capture_logs

from wave_orchestrator.coordination.feedback import FeedbackStore
from wave_orchestrator.coordination.log import CoordLog
from wave_orchestrator.errors import WaveError
from wave_orchestrator.notify.sinks import NOTIFY_QUEUE, Notifier
from wave_orchestrator.state import fsutil, jsonl


def test_a_flood_of_questions_notifies_one_at_a_time_and_coalesces_the_rest(
    tmp_path: Path,
) -> None:
    out = tmp_path / "got"
    script = tmp_path / "notify.sh"  # fails if two ever run at once
    script.write_text(
        f'mkdir "{tmp_path}/busy" || echo overlap >> "{tmp_path}/overlaps"; '
        f'cat >> "{out}"; echo >> "{out}"; sleep 0.02; rmdir "{tmp_path}/busy"\n'
    )
    notifier = Notifier(["bash", str(script)])
    threads = threading.active_count()
    with capture_logs() as logged:
        for n in range(200):
            notifier.send({"id": f"q-{n:016x}", "question": "\udcff lone surrogate"})
        assert threading.active_count() <= threads + 1  # one worker, not one per question
        lines = wait_for(
            lambda: (
                [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
                if out.exists() and '"coalesced"' in out.read_text()
                else None
            ),
            seconds=60,
            what="the coalesced notification",
        )
    assert not (tmp_path / "overlaps").exists()
    coalesced = [x["coalesced"] for x in lines if "coalesced" in x]
    singles = [x for x in lines if "id" in x]
    assert len(singles) + sum(coalesced) == 200 and len(singles) <= NOTIFY_QUEUE + 1
    assert singles[0]["question"] == "\udcff lone surrogate"  # escaped on the way, read back
    assert [e for e in logged if e["log_level"] == "warning"] == []


def test_a_notifier_that_fails_or_cannot_start_is_only_logged(tmp_path: Path) -> None:
    with capture_logs() as logged:
        Notifier([str(tmp_path / "missing")]).send({"id": "q-0000000000000001"})
        wait_for(lambda: logged, seconds=10, what="the warning")
    assert logged[0]["event"] == "notify command failed"


def test_a_short_write_fails_the_post_and_tears_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = CoordLog(tmp_path / "wave-1.jsonl", 1)
    first = log.post(kind="evidence", summary="one", agent="A")
    real = os.write
    monkeypatch.setattr(fsutil.os, "write", lambda fd, data: real(fd, data[:10]))
    with pytest.raises(OSError, match="only 10 of"):
        log.post(kind="evidence", summary="torn", agent="A")
    monkeypatch.setattr(fsutil.os, "write", real)
    third = log.post(kind="evidence", summary="three", agent="A")
    assert [r.summary for r in log.records().values()] == ["one", "three"]
    assert list(log.records()) == [first, third]


def test_a_huge_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "wave-1.jsonl"
    log = CoordLog(path, 1)
    log.post(kind="evidence", summary="before", agent="A")
    huge = b'{"id": "c-0000000000000001", "summary": "' + b"x" * (3 * jsonl.MAX_LINE) + b'"}\n'
    with path.open("ab") as fh:
        fh.write(huge)
    log.post(kind="evidence", summary="after", agent="A")
    skipped: list[int] = []
    got = [r for r, _ in jsonl.read_jsonl_from(path, on_skip=skipped.append) if r]
    assert [r["summary"] for r in got] == ["before", "after"]
    assert skipped == [len(huge)]
    assert [r.summary for r in log.records().values()] == ["before", "after"]


def test_a_reused_id_does_not_merge_two_posts(tmp_path: Path) -> None:
    log = CoordLog(tmp_path / "wave-1.jsonl", 1)
    rid = log.post(kind="decision", summary="use SQLite", agent="A")
    with (tmp_path / "wave-1.jsonl").open("a") as fh:  # another post that drew the same id
        fh.write(
            json.dumps(
                {
                    "id": rid,
                    "wave": 1,
                    "kind": "blocker",
                    "summary": "other",
                    "agent": "B",
                    "created_at": "2099-01-01T00:00:00.000Z",
                }
            )
            + "\n"
        )
    log.update(rid, status="resolved")
    (item,) = log.records().values()
    assert (item.kind, item.summary, item.agent, item.status) == (
        "decision",
        "use SQLite",
        "A",
        "resolved",
    )


def test_the_feedback_lock_waits_a_bounded_time_and_names_its_holder(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.jsonl", "main", lambda w: tmp_path / f"{w}.jsonl")
    asked = store.ask(1, "A", "keep v1?")
    with store._locked():  # it writes who it is into the lock file
        pass
    holder = os.open(tmp_path / "feedback.jsonl.lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a leftover that keeps it
    try:
        held = rf"held by another process \(pid {os.getpid()}"
        with pytest.raises(WaveError, match=held), store._locked(timeout=0.3):
            pass
    finally:
        os.close(holder)
    assert store.respond(asked.id, "yes", "ana").status == "answered"


def test_a_question_without_its_mirror_item_does_not_stop_the_next_run(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    state = tmux_repo.state("main")
    with (state / "feedback.jsonl").open("a") as fh:  # `ask` killed between its two appends
        fh.write(
            json.dumps(
                {
                    "id": "q-00000000000000aa",
                    "lane": "main",
                    "wave": 1,
                    "agent": "A",
                    "question": "left?",
                    "status": "pending",
                }
            )
            + "\n"
        )
    CoordLog(state / "coordination" / "wave-1.jsonl", 1).post(
        kind="blocker", summary="old run's blocker", agent="A", priority="high"
    )
    again = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert again.returncode == 0, again.stderr  # the old blocker stayed with the old run
    archived = list((state / "coordination").glob("wave-1.*.jsonl"))
    assert len(archived) == 1 and "old run's blocker" in archived[0].read_text()
    (request,) = json.loads(tmux_repo.wave("feedback", "list", "--lane", "main", "--json").stdout)
    assert request["status"] == "expired"
