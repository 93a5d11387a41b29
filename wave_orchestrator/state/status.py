"""Reading the status files the wrappers write (SPEC 3.2) and classifying what they say."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fsutil import read_json, write_json_atomic
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


MARKER_TAIL_BYTES = 2 * 1024 * 1024  # of a bigger last try, the end only (from a line start)


def last_try_output(paths: AgentPaths) -> str:
    """The output of the agent's last try: markers are read from it alone (SPEC 7.1).
    The wrapper records where that try began in its log as ``output_offset``. Only its last
    MARKER_TAIL_BYTES are read: an agent that printed 100 MB must not cost that in memory."""
    try:
        data = read_json(paths.status)
        offset = data.get("output_offset", 0) if isinstance(data, dict) else 0
    except (OSError, ValueError):
        offset = 0
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        offset = 0
    try:
        with paths.output_log.open("rb") as fh:
            start = max(offset, os.fstat(fh.fileno()).st_size - MARKER_TAIL_BYTES)
            fh.seek(start)
            data = fh.read(MARKER_TAIL_BYTES)
            if start > offset:  # begin at a line: half a line is no marker
                data = data[data.find(b"\n") + 1 :]
            return data.decode("utf-8", "replace")
    except OSError:
        return ""


NEW_LINES_LIMIT = 256 * 1024  # a log that grew more than this between two reads: its end only


def new_log_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """The complete lines ``path`` gained after ``offset``, and the offset to read from next
    time (a line still being written is left for then). A log that shrank is read again from
    its start; of a log that grew by more than NEW_LINES_LIMIT, only the last lines are read."""
    try:
        size = path.stat().st_size
        if size < offset:
            offset = 0
        if size == offset:
            return [], offset
        start = max(offset, size - NEW_LINES_LIMIT)
        with path.open("rb") as fh:
            fh.seek(start)
            data = fh.read(size - start)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], start
    lines = data[:end].decode("utf-8", "replace").split("\n")
    return (lines[1:] if start > offset else lines), start + end + 1


def write_outcome(path: Path, status: dict[str, Any]) -> None:
    """A status file for an outcome the launcher decided (timeout, stall, ...), so that
    `wave status` and a later resume see it; a status already there is never replaced."""
    if not path.exists():
        write_json_atomic(path, status)


def archive_files(paths: AgentPaths, previous_attempt: int, suffix: str = "") -> None:
    """Keep the previous attempt's log and status as attempt-<k>.* before a relaunch."""
    for src, dst in (
        (paths.output_log, paths.attempt_log(previous_attempt, suffix)),
        (paths.status, paths.attempt_status(previous_attempt, suffix)),
    ):
        if src.exists():
            os.replace(src, dst)
    paths.backoff.unlink(missing_ok=True)
