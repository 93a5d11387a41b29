"""git work for an agent pool, off its main loop: a worktree made before an agent starts, its
work committed after it ends. A big commit or a slow ``setup.command`` takes its time on a
worker thread while the loop goes on enforcing budgets, noticing finishes and serving stops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

from ...state.lifecycle import AgentState
from ...state.logs import in_context

if TYPE_CHECKING:
    from ...definitions.model import AgentDef
    from ..agent.run import AgentRun

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

    def __init__(self, order: Callable[[AgentRun], int]) -> None:
        """``order``: each run's place in its pool; jobs done together are taken in by it."""
        # Two queues: a finished agent's commit never waits behind worktrees still to be made.
        self.executors: dict[str, ThreadPoolExecutor] = {}
        self.wake: Callable[[str], None] = lambda agent_id: None  # set by the pool's loop
        self.order = order
        self._busy: dict[int, AgentRun] = {}  # runs with a job not taken in yet, by id()

    def submit(self, agent_id: str, work: Callable[[], str], queue: str) -> Future[str]:
        if queue not in self.executors:
            self.executors[queue] = ThreadPoolExecutor(WORKERS, f"wave-git-{queue}")
        future = self.executors[queue].submit(in_context(work))
        future.add_done_callback(lambda _: self.wake(agent_id))
        return future

    def preparing(self, run: AgentRun, ws: Workspace) -> bool:
        """True while the agent's worktree is being made (started here when it is not)."""
        if run.prepared or not ws.needs_prepare(run.launch.agent):
            return False
        if run.preparing is None:
            agent = run.launch.agent
            run.preparing = self.submit(run.id, lambda: ws.prepare(agent), "prepare")
            self._busy[id(run)] = run
        return True

    def settling(
        self, run: AgentRun, ws: Workspace, state: AgentState, code: int | None, detail: str
    ) -> bool:
        """An agent that ran has ended: commit its work first (True), its end said after."""
        if not ws.enabled or run.launched_wall is None:
            return False
        run.ending = (state, code, detail)
        run.settling = self.submit(run.id, lambda: ws.settle(run), "commit")
        self._busy[id(run)] = run
        return True

    def collect(self) -> Iterator[tuple[AgentRun, AgentState, int | None, str]]:
        """Agents whose worktree could not be made, and agents whose work is now committed,
        with how each ended: a commit that failed fails an agent that had succeeded."""
        for run in sorted(filter(_done, self._busy.values()), key=self.order):
            if run.preparing is not None and run.preparing.done():
                detail, run.preparing = outcome(run.preparing), None
                if run.state is AgentState.PENDING:
                    run.prepared = not detail
                    if detail:
                        yield run, AgentState.FAILED, None, detail
            if run.settling is not None and run.settling.done() and run.ending is not None:
                problem, (state, code, detail) = outcome(run.settling), run.ending
                if problem and state is AgentState.COMPLETED:
                    state, detail, run.overruled = AgentState.FAILED, problem, True
                elif problem:
                    detail = f"{detail}; {problem}" if detail else problem
                run.ending = None
                yield run, state, code, detail
            if run.preparing is None and run.ending is None:
                del self._busy[id(run)]

    def close(self) -> None:
        for executor in self.executors.values():
            executor.shutdown(wait=True)


def _done(run: AgentRun) -> bool:
    """Whether a job of ``run`` has ended and waits to be taken in."""
    made = run.preparing is not None and run.preparing.done()
    return made or (run.settling is not None and run.settling.done() and run.ending is not None)


def outcome(future: Future[str]) -> str:
    """What a job said: "" when all went well, else why not (never an exception)."""
    try:
        return future.result()
    except Exception as exc:  # a bug in git handling fails one agent, never the launcher
        return f"wave's git failed: {exc!r}"
