from __future__ import annotations

import json
from pathlib import Path

import pytest

from wave_orchestrator.state.lifecycle import AgentState
from wave_orchestrator.state.status import StatusUnreadable, read_status


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "status.json"
    path.write_text(body)
    return path


def test_missing_file_means_not_finished(tmp_path: Path) -> None:
    assert read_status(tmp_path / "status.json") is None


@pytest.mark.parametrize(
    "body", ["", "{", "[]", '{"code": "0"}', '{"code": true}', "null", '{"tries": 1}']
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
        ({"code": 0, "outcome": "nonsense"}, AgentState.FAILED),
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
