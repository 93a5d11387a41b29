"""The local placement: each agent in a detached tmux session on the lane's private socket,
exactly as before the seam existed (every call goes straight to ``tmux.py``)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from .base import AgentJob, PaneInfo
from .tmux import TmuxServer, process_group_alive, process_running, signal_process_group


class LocalPlacement:
    kind = "local"
    queues = False
    unreachable_since: float | None = None  # tmux here: the pool handles a lost socket

    def __init__(self, tmux: TmuxServer) -> None:
        self.tmux = tmux

    def check(self) -> None:
        """Nothing to check: tmux was found by the launcher's own checks."""

    def start(self, job: AgentJob) -> int | None:
        return self.tmux.start_session(job.session, list(job.argv), job.cwd)

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        return self.tmux.panes(strict=strict)

    def remove(self, names: Iterable[str]) -> None:
        self.tmux.kill_sessions(names)

    def signal(self, handle: int, signum: int) -> bool:
        return signal_process_group(handle, signum)

    def alive(self, handle: int) -> bool:
        return process_group_alive(handle)

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
