"""git work for an agent pool, off its main loop: a worktree made before an agent starts, its
work committed after it ends. A big commit or a slow ``setup.command`` takes its time on a
worker thread while the loop goes on enforcing budgets, noticing finishes and serving stops.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..definitions.model import AgentDef
    from .agent_run import AgentRun

WORKERS = 4
GIT_DONE = "<git>"  # the wake-up a finished job sends: never the name of an agent's file


class Workspace(Protocol):
    """Where agents work (``runtime.workspaces.Workspaces``)."""

    enabled: bool

    def needs_prepare(self, agent: AgentDef) -> bool: ...
    def prepare(self, agent: AgentDef) -> str: ...
    def settle(self, run: AgentRun) -> str: ...


class GitJobs:
    """A few worker threads, made on first use: git changes take turns on the repository's
    lock (``Isolation.lock``), while setup commands of several worktrees run side by side."""

    def __init__(self) -> None:
        self.executor: ThreadPoolExecutor | None = None
        self.wake: Callable[[str], None] = lambda agent_id: None  # set by the pool's loop

    def submit(self, agent_id: str, work: Callable[[], str]) -> Future[str]:
        if self.executor is None:
            self.executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="wave-git")
        future = self.executor.submit(work)
        future.add_done_callback(lambda _: self.wake(agent_id))
        return future

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)


def outcome(future: Future[str]) -> str:
    """What a job said: "" when all went well, else why not (never an exception)."""
    try:
        return future.result()
    except Exception as exc:  # a bug in git handling fails one agent, never the launcher
        return f"wave's git failed: {exc!r}"
