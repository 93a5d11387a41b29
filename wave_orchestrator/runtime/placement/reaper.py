"""Stopping agents' sessions: SIGTERM to the pane's process group now, SIGKILL after a grace
period (SPEC 3.3), then the session is killed unless it is to be kept for inspection."""

from __future__ import annotations

import signal
import time

from ...state.layout import AGENT_SESSION_RE
from .tmux import TmuxServer, process_group_alive, signal_process_group

KILL_GRACE_SECONDS = 10.0  # SIGTERM, then SIGKILL this long after


class Reaper:
    """The sessions being stopped, each with its process group and when SIGKILL is due."""

    def __init__(self, tmux: TmuxServer, keep_sessions: bool = False) -> None:
        self.tmux = tmux
        self.keep_sessions = keep_sessions
        self.sessions: dict[str, tuple[int | None, float]] = {}

    def __len__(self) -> int:
        return len(self.sessions)

    def start(self, session: str, pid: int | None, now: float) -> None:
        """SIGTERM the group of ``pid`` (the pane's process) now; SIGKILL it at the deadline."""
        if pid is not None:
            signal_process_group(pid, signal.SIGTERM)
        self.sessions[session] = (pid, now + KILL_GRACE_SECONDS)

    def deadlines(self) -> list[float]:
        return [kill_at for _, kill_at in self.sessions.values()]

    def reap(self, now: float) -> None:
        """Forget every session whose processes are gone, SIGKILLing those past the grace."""
        if not self.sessions:
            return
        panes = self.tmux.panes()
        for session, (pid, kill_at) in list(self.sessions.items()):
            info = panes.get(session)
            # Gone means every process of the group: the wrapper dies at once on SIGTERM,
            # a CLI under it may take its time (or ignore the signal until SIGKILL).
            gone = not process_group_alive(pid) if pid is not None else info is None or info.dead
            if not gone and now < kill_at:
                continue
            if not gone and pid is not None:
                signal_process_group(pid, signal.SIGKILL)
            if not self.keep_sessions:
                self.tmux.kill_sessions([session])
            del self.sessions[session]


def stop_agent_sessions(tmux: TmuxServer, grace: float = KILL_GRACE_SECONDS) -> int:
    """Stop every agent session on ``tmux`` now (SIGTERM, grace, SIGKILL, kill): what a
    launcher that can no longer keep its records does before it exits. Returns how many."""
    panes = tmux.panes()
    agents = {  # a dead pane's group may live on (`nohup cmd &`): signal every group
        name: info.pid
        for name, info in panes.items()
        if AGENT_SESSION_RE.fullmatch(name)
        and info.pid is not None
        and process_group_alive(info.pid)
    }
    for pid in agents.values():
        signal_process_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(process_group_alive(p) for p in agents.values()):
        time.sleep(0.1)
    for pid in agents.values():
        if process_group_alive(pid):
            signal_process_group(pid, signal.SIGKILL)
    tmux.kill_sessions([n for n in panes if AGENT_SESSION_RE.fullmatch(n)])
    return len(agents)
