"""The local placement: each agent in a detached tmux session on the lane's private socket.

What an agent is, to signal and to wait for: its pane's process group, and every process that
carries its token (``WAVE_AGENT_TOKEN``) wherever it went (``processes.py``); zombies are not
alive, whoever is slow to reap them."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import PlacementError
from ..state.layout import agent_token
from . import processes
from .base import AgentJob, HereDefaults, PaneInfo, start_each
from .tmux import TmuxServer, process_running, signal_process_group


class LocalPlacement(HereDefaults):
    kind = "local"
    queues = False
    unreachable_since: float | None = None  # tmux here: the pool handles a lost socket

    def __init__(self, tmux: TmuxServer) -> None:
        self.tmux = tmux
        self.session_of: dict[int, str] = {}  # handle (pane pid) -> session, for its token

    def check(self) -> None:
        """Nothing to check: tmux was found by the launcher's own checks."""

    def start(self, job: AgentJob) -> int | None:
        pid = self.tmux.start_session(job.session, list(job.argv), job.cwd)
        if pid is not None:
            self.session_of[pid] = job.session
        return pid

    def start_many(self, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        """One tmux invocation for the whole burst; what it did not start (tmux stops at a
        failing session) is started one by one, each failure its own."""
        if len(jobs) < 2:
            return start_each(self, jobs)
        try:
            pids = self.tmux.start_sessions([(j.session, list(j.argv), j.cwd) for j in jobs])
        except (PlacementError, OSError):
            pids = []  # nothing started: one by one says why for each
        for job, pid in zip(jobs, pids, strict=False):
            if pid is not None:
                self.session_of[pid] = job.session
        return [*pids, *start_each(self, jobs[len(pids) :])]

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        panes = self.tmux.panes(strict=strict)
        for name, info in panes.items():
            if info.pid is not None:
                self.session_of[info.pid] = name
        return panes

    def remove(self, names: Iterable[str]) -> None:
        self.tmux.kill_sessions(names)

    def _token(self, handle: int) -> str | None:
        session = self.session_of.get(handle)
        return agent_token(self.tmux.socket, session) if session else None

    def signal(self, handle: int, signum: int) -> bool:
        sent = signal_process_group(handle, signum)
        if (token := self._token(handle)) is not None:
            sent = processes.signal_tagged(token, signum, self.session_of) > 0 or sent
        processes.forget()
        return sent

    def alive(self, handle: int) -> bool:
        if processes.group_alive(handle):
            return True
        token = self._token(handle)
        return token is not None and processes.carried(token, self.session_of)

    def wrapper_running(self, handle: int) -> bool:
        return process_running(handle)

    def attach_argv(self, session: str, output_log: Path) -> list[str]:
        return self.tmux.attach_argv(session)

    def command_line(self, job: AgentJob) -> list[str]:
        return [
            "tmux",
            "-L",
            self.tmux.socket,
            "new-session",
            "-d",
            "-s",
            job.session,
            "-c",
            job.cwd,
            shlex.join(job.argv),
        ]
