"""``dashboard.json``: the launcher's live picture of one wave (SPEC 8), for `wave status`
and the dashboard. Written atomically, at most a few times a second."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .agent_pool import AgentRun
from .events import utc_now
from .fsutil import write_json_atomic
from .lifecycle import AgentState
from .markers import ANSI_RE, Marker, parse_line

MIN_INTERVAL = 0.25


def tail_text(path: Path, limit: int = 4096) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def last_line(text: str) -> str:
    lines = [
        ln.strip() for ln in ANSI_RE.sub("", text).replace("\r", "\n").splitlines() if ln.strip()
    ]
    return lines[-1][:200] if lines else ""


def last_phase(text: str) -> str | None:
    """The agent's latest `[wave-phase]`, shown as its state while it runs."""
    phase = None
    for line in text.splitlines():
        marker = parse_line(line)
        if isinstance(marker, Marker) and marker.kind == "phase":
            phase = str(marker.get("value"))
    return phase


def agent_row(run: AgentRun) -> dict[str, Any]:
    launch = run.launch
    tail = tail_text(launch.paths.output_log) if run.launched_wall else ""
    state = run.state.value
    if run.state is AgentState.RUNNING:
        state = last_phase(tail) or state
    return {
        "id": run.id,
        "role": launch.agent.role,
        "executor": launch.executor,
        "model": launch.model,
        "state": state,
        "attempt": launch.attempt,
        "tries": run.tries,
        "exit_code": run.code,
        "elapsed_ms": run.duration_ms,
        "last_line": last_line(tail),
        "session": launch.session,
        "detail": run.detail or None,
    }


class SnapshotWriter:
    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.header = header
        self.started_at = utc_now()
        self._last = 0.0

    def write(
        self,
        runs: Iterable[AgentRun],
        events: Iterable[dict[str, Any]],
        *,
        force: bool = False,
        **extra: Any,
    ) -> bool:
        """Write the frame; returns True when it was deferred (written too recently)."""
        now = time.monotonic()
        if not force and now - self._last < MIN_INTERVAL:
            return True
        self._last = now
        data = {
            **self.header,
            **extra,
            "started_at": self.started_at,
            "updated_at": utc_now(),
            "agents": [agent_row(r) for r in runs],
            "events": list(events),
        }
        write_json_atomic(self.path, data)
        return False
