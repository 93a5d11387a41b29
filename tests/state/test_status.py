from __future__ import annotations

import json
from pathlib import Path

import pytest

from wave_orchestrator.state.lifecycle import AgentState
from wave_orchestrator.state.status import (
    NEW_LINES_LIMIT,
    StatusUnreadable,
    launcher_outcome,
    new_log_lines,
    read_status,
)


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "status.json"
    path.write_text(body)
    return path


def test_missing_file_means_not_finished(tmp_path: Path) -> None:
    assert read_status(tmp_path / "status.json") is None


@pytest.mark.parametrize(
    "body",
    [
        "",
        "{",
        "[]",
        '{"code": "0"}',
        '{"code": true}',
        "null",
        '{"tries": 1}',
        '{"code": 0, "outcome": "nonsense"}',  # an outcome must be a final state
    ],
)
def test_garbage_is_unreadable_never_success(tmp_path: Path, body: str) -> None:
    with pytest.raises(StatusUnreadable):
        read_status(write(tmp_path, body))


@pytest.mark.parametrize(
    ("data", "state"),
    [
        ({"code": 0}, AgentState.COMPLETED),
        ({"code": 1}, AgentState.FAILED),
        ({"code": 1, "usage_limit": True}, AgentState.USAGE_LIMIT),
        ({"code": -1, "outcome": "timeout"}, AgentState.TIMEOUT),
    ],
)
def test_classification(tmp_path: Path, data: dict, state: AgentState) -> None:
    status = read_status(write(tmp_path, json.dumps(data)))
    assert status is not None and status.state is state


def test_fields_are_read(tmp_path: Path) -> None:
    status = read_status(
        write(
            tmp_path,
            json.dumps(
                {
                    "code": 0,
                    "tries": 3,
                    "rate_limited": 2,
                    "detail": "x",
                    "started_at": "a",
                    "finished_at": "b",
                }
            ),
        )
    )
    assert status is not None
    assert (status.tries, status.rate_limited, status.detail, status.started_at) == (3, 2, "x", "a")


def test_new_log_lines_reads_complete_lines_once(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    assert new_log_lines(log, 0) == ([], 0)  # no log yet
    log.write_bytes(b"one\ntwo\nthr")
    lines, offset = new_log_lines(log, 0)
    assert (lines, offset) == (["one", "two"], 8)
    assert new_log_lines(log, offset) == ([], 8)  # the torn line waits for its end
    with log.open("ab") as fh:
        fh.write(b"ee\n")
    assert new_log_lines(log, offset) == (["three"], 14)
    log.write_bytes(b"new\n")  # rewritten shorter: read again from the start
    assert new_log_lines(log, 14) == (["new"], 4)


def test_new_log_lines_keeps_only_the_end_of_a_huge_growth(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"x" * (NEW_LINES_LIMIT + 10) + b"\nlast\n")
    lines, offset = new_log_lines(log, 0)
    assert lines == ["last"] and offset == log.stat().st_size


@pytest.mark.parametrize(
    ("outcome", "stopped_by", "state"),
    [
        ("timeout", None, AgentState.TIMEOUT),
        ("cancelled", "person", AgentState.CANCELLED),
        ("cancelled", "launcher", AgentState.CANCELLED),
    ],
)
def test_a_status_the_wrapper_did_not_write_reads_back_as_its_outcome(
    tmp_path: Path, outcome: str, stopped_by: str | None, state: AgentState
) -> None:
    """The launcher's (and `wave stop --agent`'s) status passes the checks a wrapper's does,
    and says who stopped a cancelled agent: `--resume` reruns only what the launcher stopped."""
    body = launcher_outcome(
        "A1", 2, "main", 3, outcome, detail="over its budget", stopped_by=stopped_by
    )
    status = read_status(write(tmp_path, json.dumps(body)))
    assert status is not None
    assert (status.state, status.attempt, status.code) == (state, 3, -1)
    assert status.detail == "over its budget" and status.finished_at
    assert status.raw.get("stopped_by") == stopped_by
    assert "started_at" not in status.raw  # none given: none made up
