"""``events.jsonl``: the lane's append-only record of what happened."""

from __future__ import annotations

import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .jsonl import append_jsonl


def utc_now() -> str:
    """UTC to the millisecond, ``2026-12-02T08:00:00.123Z``."""
    return utc_stamp(time.time())


def utc_stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def local_clock(stamp: str) -> str:
    """``HH:MM:SS`` on this machine's clock of a ``utc_stamp`` (the stamp itself if odd)."""
    try:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return when.astimezone().strftime("%H:%M:%S")


def short_clock(epoch: float) -> str:
    """``09:40`` on this machine's clock (with the date when it is not today)."""
    at = datetime.fromtimestamp(epoch).astimezone()
    today = datetime.now().astimezone().date()
    return at.strftime("%H:%M") if at.date() == today else at.strftime("%b %d %H:%M")


def iso_time(epoch: float) -> str:
    """``2026-12-04T23:43:33+00:00``: a time as `--json` and events give it."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


class EventLog:
    """Appends events as the launcher notices facts; keeps the newest 100 for the dashboard."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.recent: deque[dict[str, Any]] = deque(maxlen=100)
        self.best_effort = False  # once the launcher runs, a failed append is not fatal
        self.failed: OSError | None = None  # the first append that failed, for a warning
        self.orchestrator_id = ""  # a launcher's: in each event it writes

    def emit(
        self, event: str, wave: int | None = None, agent: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"at": utc_now(), "event": event}
        if wave is not None:
            record["wave"] = wave
        if agent is not None:
            record["agent"] = agent
        record.update({k: v for k, v in fields.items() if v is not None})
        if self.orchestrator_id:
            record["orchestrator_id"] = self.orchestrator_id
        try:
            append_jsonl(self.path, record)
        except OSError as exc:
            if not self.best_effort:
                raise
            self.failed = self.failed or exc
        self.recent.append(record)
        return record
