"""Questions to a person: ask, answer once, expire, wait, and the mirror in the coordination log."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from wave_orchestrator.coordination.feedback import FeedbackStore, FeedbackTimeout
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


def test_wait_returns_the_answer_given_meanwhile(tmp_path: Path) -> None:
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    answer = threading.Timer(0.3, lambda: _store(tmp_path).respond(asked.id, "keep", "ana"))
    answer.start()
    try:
        got = store.wait(asked.id, timeout=20, poll=0.05)
    finally:
        answer.join()
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
