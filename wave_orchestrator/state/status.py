"""Reading the status files the wrappers write (SPEC 3.2) and classifying what they say."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fsutil import read_json
from .layout import AgentPaths
from .lifecycle import AgentState


@dataclass(frozen=True)
class StatusFile:
    code: int
    tries: int
    rate_limited: int
    started_at: str | None
    finished_at: str | None
    detail: str | None
    usage_limit: bool
    outcome: str | None
    raw: dict[str, Any]

    @property
    def state(self) -> AgentState:
        if self.outcome:
            try:
                return AgentState(self.outcome)
            except ValueError:
                return AgentState.FAILED
        if self.code == 0:
            return AgentState.COMPLETED
        return AgentState.USAGE_LIMIT if self.usage_limit else AgentState.FAILED


class StatusUnreadable(Exception):
    """A status file exists but is not a status: it counts as a failure, never a success."""


def read_status(path: Path) -> StatusFile | None:
    """None when there is no status file yet; raises StatusUnreadable when it is garbage."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StatusUnreadable(f"{path}: {exc}") from exc
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("code"), int)
        or isinstance(data.get("code"), bool)
    ):
        raise StatusUnreadable(f"{path}: no integer 'code'")

    def num(key: str) -> int:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return StatusFile(
        code=data["code"],
        tries=num("tries"),
        rate_limited=num("rate_limited"),
        started_at=data.get("started_at") if isinstance(data.get("started_at"), str) else None,
        finished_at=data.get("finished_at") if isinstance(data.get("finished_at"), str) else None,
        detail=data.get("detail") if isinstance(data.get("detail"), str) else None,
        usage_limit=data.get("usage_limit") is True,
        outcome=data.get("outcome") if isinstance(data.get("outcome"), str) else None,
        raw=data,
    )


def last_try_output(paths: AgentPaths) -> str:
    """The output of the agent's last try: markers are read from it alone (SPEC 7.1).
    The wrapper records where that try began in its log as ``output_offset``."""
    try:
        data = read_json(paths.status)
        offset = data.get("output_offset", 0) if isinstance(data, dict) else 0
    except (OSError, ValueError):
        offset = 0
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        offset = 0
    try:
        with paths.output_log.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
