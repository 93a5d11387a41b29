"""The `wave rerun` request files, read as hostile: a request is taken once, its id checked,
its reason bounded and cleaned; anything else is refused and removed."""

from __future__ import annotations

import json
from pathlib import Path

from wave_orchestrator.state.reruns import REASON_LIMIT, Request, reply, take_request


def test_a_request_is_taken_once_with_its_reason_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "A.json"
    path.write_text(json.dumps({"id": "abc", "reason": "flaky\x1b]0;owned\x07 " + "x" * 5000}))
    request = take_request(path)
    assert isinstance(request, Request) and request.id == "abc"
    assert "\x1b" not in request.reason and "\x07" not in request.reason
    assert request.reason.startswith("flaky") and len(request.reason) == REASON_LIMIT
    assert not path.exists() and take_request(path) is None


def test_what_wave_rerun_did_not_write_is_refused_and_removed(tmp_path: Path) -> None:
    bad = [{"id": 7}, {"id": ""}, {"id": "x" * 65}, {"reason": "no id"}, [1, 2]]
    for number, body in enumerate(bad):
        path = tmp_path / f"A{number}.json"
        path.write_text(json.dumps(body))
        assert take_request(path) is None, body
        assert not path.exists()
    huge = tmp_path / "B.json"
    huge.write_text(json.dumps({"id": "abc", "reason": "y" * 20000}))
    assert take_request(huge) is None  # over the size a request can have


def test_a_reply_names_the_request_and_whether_it_was_taken(tmp_path: Path) -> None:
    answer = tmp_path / "A.answer.json"
    reply(answer, "abc", "A is being started: ask again once it runs")
    assert json.loads(answer.read_text()) == {
        "id": "abc",
        "taken": False,
        "detail": "A is being started: ask again once it runs",
    }
    reply(tmp_path / "missing" / "A.answer.json", "abc", None)  # unwritable: no traceback
