"""Reading the status files the wrappers write and classifying what they say."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from .events import utc_now
from .fsutil import open_read, read_json, write_json_atomic
from .layout import AgentPaths
from .lifecycle import TERMINAL, AgentState
from .untrusted import count, epoch


class StatusFile(NamedTuple):
    """An agent's status.json after every field was checked (the agent could write it)."""

    code: int
    tries: int
    rate_limited: int
    started_at: str | None
    finished_at: str | None
    detail: str | None
    usage_limit: bool
    outcome: str | None
    raw: dict[str, Any]
    attempt: int | None = None  # which attempt wrote it; None in a status of an older wave
    limited_until: float | None = None  # the launcher parked it on a usage limit until then

    @property
    def state(self) -> AgentState:
        if self.outcome:
            return AgentState(self.outcome)  # read_status admits final states only
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
    if not isinstance(data, dict):
        raise StatusUnreadable(f"{path}: not a JSON object")
    problem = _status_problem(data)
    if problem:
        raise StatusUnreadable(f"{path}: {problem}")
    return StatusFile(
        code=data["code"],
        tries=data.get("tries") or 0,
        rate_limited=data.get("rate_limited") or 0,
        started_at=_stamp(data.get("started_at")),
        finished_at=_stamp(data.get("finished_at")),
        detail=data["detail"][:2000] if isinstance(data.get("detail"), str) else None,
        usage_limit=data.get("usage_limit") is True,
        outcome=data.get("outcome"),
        raw=data,
        attempt=data.get("attempt"),
        limited_until=epoch(data.get("limited_until")),
    )


def _stamp(value: Any) -> str | None:
    """A time stamp as text, cut: a wrapper writes 24 characters, not megabytes."""
    return value[:64] if isinstance(value, str) else None


FINAL_OUTCOMES = frozenset(s.value for s in TERMINAL)
_TEXT_FIELDS = ("started_at", "finished_at", "detail", "stopped_by", "orchestrator_id")


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _status_problem(data: dict[str, Any]) -> str | None:
    """What makes ``data`` not a status a wrapper (or the launcher) writes, if anything:
    every field present must have its type and range, so a status is never half believed."""
    if count(data.get("code"), minimum=-(2**31), maximum=2**31) is None:
        return f"'code' is {_show(data.get('code'))}, not an exit code"
    for key in ("tries", "rate_limited"):
        if data.get(key) is not None and count(data[key]) is None:
            return f"{key!r} is {_show(data[key])}, not a count"
    if "attempt" in data and count(data["attempt"], minimum=1) is None:
        return f"'attempt' is {_show(data['attempt'])}, not an attempt number (1 or more)"
    outcome = data.get("outcome")
    if outcome is not None and (not isinstance(outcome, str) or outcome not in FINAL_OUTCOMES):
        return f"'outcome' is {_show(outcome)}, not a final state"
    for key in _TEXT_FIELDS:
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"{key!r} is {_show(data[key])}, not text"
    until = data.get("limited_until")
    if until is not None and epoch(until) is None:  # one that any clock shows (before 5138)
        return f"'limited_until' is {_show(until)}, not a time"
    if data.get("usage_limit") is not None and not isinstance(data["usage_limit"], bool):
        return f"'usage_limit' is {_show(data['usage_limit'])}, not true or false"
    return None


MARKER_TAIL_BYTES = 2 * 1024 * 1024  # of a bigger last try, the end only (from a line start)


def last_try_output(paths: AgentPaths) -> str:
    """The output of the agent's last try: markers are read from it alone.
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
        with open_read(paths.output_log) as fh:
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
        with open_read(path) as fh:
            fh.seek(start)
            data = fh.read(size - start)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], start
    lines = data[:end].decode("utf-8", "replace").split("\n")
    return (lines[1:] if start > offset else lines), start + end + 1


def launcher_outcome(
    agent: str,
    wave: int,
    lane: str,
    attempt: int,
    outcome: str,
    *,
    detail: str | None,
    code: int = -1,
    tries: int = 0,
    rate_limited: int = 0,
    started_at: str | None = None,
    finished_at: str | None = None,
    stopped_by: str | None = None,
    orchestrator_id: str | None = None,
) -> dict[str, Any]:
    """The status.json of an end the wrapper did not write: one the launcher decided (timeout,
    stall, ...) or a person's `wave stop --agent`. It has the wrapper's fields, with the
    ``outcome`` and, for a cancelled agent, who stopped it (``--resume`` launches again what
    the launcher stopped, never what a person stopped)."""
    status: dict[str, Any] = {
        "agent": agent,
        "wave": wave,
        "lane": lane,
        "attempt": attempt,
        "code": code,
        "tries": tries,
        "rate_limited": rate_limited,
    }
    if started_at is not None:
        status["started_at"] = started_at
    status |= {"finished_at": finished_at or utc_now(), "outcome": outcome, "detail": detail}
    if stopped_by is not None:
        status["stopped_by"] = stopped_by
    if orchestrator_id is not None:
        status["orchestrator_id"] = orchestrator_id
    return status


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
