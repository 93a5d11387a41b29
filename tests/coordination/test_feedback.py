"""Questions to a person: ask, answer once, expire, wait, and the mirror in the coordination log."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from wave_orchestrator.coordination.feedback import (
    FeedbackRequest,
    FeedbackStore,
    FeedbackTimeout,
)
from wave_orchestrator.coordination.log import CoordLog
from wave_orchestrator.errors import UsageError


def _store(tmp_path: Path) -> FeedbackStore:
    return FeedbackStore(
        tmp_path / "feedback.jsonl", "main", lambda wave: tmp_path / f"wave-{wave}.jsonl"
    )


def test_answer_once_then_only_with_force(tmp_path: Path) -> None:
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?", "clients X and Y use it")
    assert (asked.status, asked.response) == ("pending", None)
    got = store.respond(asked.id, "yes", "ana")
    assert got.status == "answered" and got.response is not None
    assert (got.response.operator, got.response.text) == ("ana", "yes")
    with pytest.raises(UsageError, match="already answered by ana") as err:
        store.respond(asked.id, "no", "bob")
    assert err.value.exit_code == 2
    replaced = store.respond(asked.id, "no", "bob", force=True)
    assert replaced.response is not None and replaced.response.text == "no"
    with pytest.raises(UsageError, match="no feedback request"):
        store.respond("q-missing", "x", "ana")


def test_the_question_and_its_answer_reach_the_coordination_log(tmp_path: Path) -> None:
    store = _store(tmp_path)
    asked = store.ask(2, "api", "keep v1?")
    item = CoordLog(tmp_path / "wave-2.jsonl", 2).records()[asked.id]
    assert (item.kind, item.status, item.targets) == ("human-feedback", "open", ("human",))
    store.respond(asked.id, "yes", "ana")
    item = CoordLog(tmp_path / "wave-2.jsonl", 2).records()[asked.id]
    assert item.status == "resolved" and "api" in item.targets and "yes" in item.detail


def answered_while_waiting(
    store: FeedbackStore, tmp_path: Path, request_id: str
) -> FeedbackRequest:
    """``store.wait`` on a question that a person (another store) answers "keep" meanwhile."""
    answer = threading.Timer(0.3, lambda: _store(tmp_path).respond(request_id, "keep", "ana"))
    answer.start()
    try:
        return store.wait(request_id, timeout=20, poll=0.05)
    finally:
        answer.join()


def test_wait_returns_the_answer_given_meanwhile(tmp_path: Path) -> None:
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    got = answered_while_waiting(store, tmp_path, asked.id)
    assert got.response is not None and got.response.text == "keep"


def test_wait_timeout_expires_the_request_and_exits_4(tmp_path: Path) -> None:
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    with pytest.raises(FeedbackTimeout) as err:
        store.wait(asked.id, timeout=0.2, poll=0.05)
    assert err.value.exit_code == 4
    assert store.get(asked.id).status == "expired"
    assert store.pending() == []
    assert CoordLog(tmp_path / "wave-1.jsonl", 1).records()[asked.id].status == "cancelled"


def test_a_question_whose_mirror_cannot_be_written_is_not_left_pending(tmp_path: Path) -> None:
    """The coordination log cannot take the mirror item (a FIFO planted in its place): `ask`
    fails, and no question waits for an answer that nobody was shown how to give."""
    import os

    store = _store(tmp_path)
    os.mkfifo(tmp_path / "wave-1.jsonl")
    with pytest.raises(OSError, match="FIFO"):
        store.ask(1, "api", "keep v1?")
    assert store.requests() == {}


def test_a_question_that_cannot_be_saved_leaves_no_open_mirror(tmp_path: Path) -> None:
    """feedback.jsonl cannot be written (a link in its place): `ask` fails, and the mirror
    item it already posted is cancelled, so it holds no integration gate."""
    store = _store(tmp_path)
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "feedback.jsonl").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="link"):
        store.ask(1, "api", "keep v1?")
    assert [
        (r.kind, r.is_open) for r in CoordLog(tmp_path / "wave-1.jsonl", 1).records().values()
    ] == [("human-feedback", False)]
    assert (tmp_path / "elsewhere").read_text() == ""


def test_ask_wait_still_waits_when_its_wait_cannot_be_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question is asked; the line saying its asker waits cannot be written: `--wait`
    goes on waiting and returns the answer, rather than exit 1 with the question pending."""
    from wave_orchestrator.coordination import feedback

    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    real = feedback.append_record

    def no_wait_line(path: Path, record: dict[str, object]) -> None:
        if "wait_pid" in record:
            raise OSError(28, "No space left on device")
        real(path, record)

    monkeypatch.setattr(feedback, "append_record", no_wait_line)
    got = answered_while_waiting(store, tmp_path, asked.id)
    assert got.status == "answered"
