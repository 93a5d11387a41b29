"""The launcher's heartbeat: one line at most every 30 s while agents run, so a person watching
a long wave sees it is alive and who takes longest ("3 running, 2 done, longest A4 4m12s")."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from ...state.logs import Logger
from ..agent.run import AgentRun

log = Logger(__name__)

DEFAULT_SECONDS = 30.0


def interval() -> float:
    """30 s; WAVE_HEARTBEAT_SECONDS changes it (tests, or a quieter log with a larger value)."""
    try:
        return max(0.5, float(os.environ.get("WAVE_HEARTBEAT_SECONDS", DEFAULT_SECONDS)))
    except ValueError:
        return DEFAULT_SECONDS


def heartbeat_text(runs: Sequence[AgentRun], now_wall: float, done_before: int = 0) -> str | None:
    """The line for these runs, or None when none runs (nothing to report). ``done_before``:
    agents of the wave that finished outside these runs (adopted finished by --resume)."""
    active = [r for r in runs if r.active and r.launched_wall is not None]
    if not active:
        return None
    done = done_before + sum(1 for r in runs if r.state.terminal)
    waiting = sum(1 for r in runs if r.launched_wall is None and not r.state.terminal)
    longest = min(active, key=lambda r: r.launched_wall or now_wall)
    seconds = int(now_wall - (longest.launched_wall or now_wall))
    parts = [f"{len(active)} running", f"{done} done"]
    if waiting:
        parts.append(f"{waiting} waiting")
    return ", ".join(parts) + f", longest {longest.id} {seconds // 60}m{seconds % 60:02d}s"


class Heartbeat:
    """Logs ``heartbeat_text`` when its interval has passed since the last line (or the start)."""

    def __init__(self, every: float | None = None) -> None:
        self.every = interval() if every is None else every
        self.next = time.monotonic() + self.every
        self.done_before = 0  # finished agents of the wave not among the runs it is given

    def beat(self, runs: Sequence[AgentRun], wave: int) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.every
        text = heartbeat_text(runs, time.time(), self.done_before)
        if text:
            log.info(f"wave {wave}: {text}")
