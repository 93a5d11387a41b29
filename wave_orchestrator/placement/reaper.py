"""Ending agents' process groups: SIGTERM to the pane's process group, SIGKILL after a grace
period, then the session is killed unless it is to be kept for inspection.

Every way an agent ends goes through here, not only a stop: an agent that succeeded, whose
session vanished or whose wrapper died may leave processes behind (``nohup sleep &``, a child
that ignores SIGHUP), and those must not outlive their wave nor run beside the next attempt.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..state.layout import AGENT_SESSION_RE
from . import processes
from .base import Placement

KILL_GRACE_SECONDS = 10.0  # SIGTERM, then SIGKILL this long after
LINGER_SECONDS = 5.0  # a finished wrapper's own wind-down (showing the last output) before TERM
DRAIN_POLL_SECONDS = 0.01  # a wave's end looks this often whether its agents are gone


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class _Ending:
    pid: int | None
    kill_at: float | None  # None while the finished wrapper winds down on its own
    linger_until: float
    stopping: bool  # stopped by the launcher (its session goes too), not ended on its own


class Reaper:
    """The process groups being ended, each with when SIGKILL is due."""

    def __init__(self, placement: Placement, keep_sessions: bool = False) -> None:
        self.placement = placement
        self.keep_sessions = keep_sessions
        self.sessions: dict[str, _Ending] = {}
        self.subreaper = False  # set by the launcher once it is one

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def stopping(self) -> int:
        """How many groups the launcher is stopping (each still holds a place)."""
        return sum(1 for e in self.sessions.values() if e.stopping)

    def start(self, session: str, pid: int | None, now: float) -> None:
        """Stop: SIGTERM the group of ``pid`` (the pane's process) now, SIGKILL at the deadline."""
        if pid is not None:
            self.placement.signal(pid, signal.SIGTERM)
        self.sessions[session] = _Ending(pid, now + KILL_GRACE_SECONDS, now, stopping=True)

    def settle(self, session: str, pid: int | None, now: float) -> None:
        """An agent ended on its own: once its wrapper has exited (or LINGER_SECONDS passed),
        SIGTERM what is left of its group, then SIGKILL after the grace."""
        if pid is None or session in self.sessions:
            return
        self.sessions[session] = _Ending(pid, None, now + LINGER_SECONDS, stopping=False)

    def holds(self, session: str) -> bool:
        """Whether processes of ``session``'s last attempt may still run: no relaunch yet."""
        return session in self.sessions

    def deadlines(self) -> list[float]:
        return [e.linger_until if e.kill_at is None else e.kill_at for e in self.sessions.values()]

    def reap(self, now: float) -> None:
        """Forget every group that is gone, SIGTERMing lingerers and SIGKILLing those past
        the grace. The placement is asked only about sessions whose pid is unknown. Orphans
        reparented to the launcher (a subreaper) are reaped here too."""
        if self.subreaper:
            processes.reap_adopted()
        if not self.sessions:
            return
        unknown = any(e.pid is None for e in self.sessions.values())
        panes = self.placement.sessions() if unknown else {}
        for session, ending in list(self.sessions.items()):
            pid = ending.pid
            if pid is None:
                info = panes.get(session)
                gone = info is None or info.dead
            else:
                # Gone means every process of the group: the wrapper dies at once on SIGTERM,
                # a CLI under it may take its time (or ignore the signal until SIGKILL).
                gone = not self.placement.alive(pid)
            if not gone and pid is not None and ending.kill_at is None:
                if self.placement.wrapper_running(pid) and now < ending.linger_until:
                    continue
                self.placement.signal(pid, signal.SIGTERM)
                ending.kill_at = now + KILL_GRACE_SECONDS
                continue
            if not gone and ending.kill_at is not None and now < ending.kill_at:
                continue
            if not gone and pid is not None:
                self.placement.signal(pid, signal.SIGKILL)
            if ending.stopping and not self.keep_sessions:
                self.placement.remove([session])
            del self.sessions[session]

    def drain(self, timeout: float = LINGER_SECONDS + KILL_GRACE_SECONDS + 5) -> None:
        """Block until every group is ended (a wave's end: nothing it started outlives it)."""
        deadline = time.monotonic() + timeout
        if not self.keep_sessions:  # their panes are gone: no last output to linger for
            for ending in self.sessions.values():
                ending.linger_until = min(ending.linger_until, time.monotonic())
        while self.sessions and time.monotonic() < deadline:
            processes.forget()  # a wave's end asks /proc afresh each round, not 0.1 s late
            self.reap(time.monotonic())
            if self.sessions:
                time.sleep(DRAIN_POLL_SECONDS)


def stop_agent_sessions(placement: Placement, grace: float = KILL_GRACE_SECONDS) -> int:
    """Stop every agent of ``placement`` now (SIGTERM, grace, SIGKILL, remove): what a
    launcher that can no longer keep its records, or `wave stop`, does. Returns how many."""
    panes = placement.sessions()
    agents = {  # a dead pane's group may live on (`nohup cmd &`): signal every group
        name: info.pid
        for name, info in panes.items()
        if AGENT_SESSION_RE.fullmatch(name) and info.pid is not None and placement.alive(info.pid)
    }
    end_groups(placement, agents.values(), grace)
    placement.remove([n for n in panes if AGENT_SESSION_RE.fullmatch(n)])
    return len(agents)


def end_groups(
    placement: Placement, pids: Iterable[int], grace: float = KILL_GRACE_SECONDS
) -> None:
    """The kill escalation, waited for: SIGTERM each process group now, SIGKILL those still
    alive after ``grace`` (the loop's own, which never waits, is ``Reaper``)."""
    pids = list(pids)
    for pid in pids:
        placement.signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(placement.alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if placement.alive(pid):
            placement.signal(pid, signal.SIGKILL)
