"""What the loop asks of its agents every turn, kept up to date as each one moves: how many
have not ended, how many may run, the earliest budget, and the pending ones in order. A turn
per event that walked every agent made the loop's cost grow with the square of the agents
(docs/performance.md); every move goes through ``AgentRun``, which tells the tally.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator

from ...state.lifecycle import AgentState
from ..agent.run import ACTIVE, AgentRun


class Tally:
    """The counts of one pool's runs; ``moved`` is each run's hook (``AgentRun.moved``)."""

    def __init__(self, runs: list[AgentRun]) -> None:
        self.runs = runs
        self._index = {id(run): i for i, run in enumerate(runs)}
        self.unfinished = sum(1 for run in runs if not run.state.terminal)
        self.active = sum(1 for run in runs if run.active)
        self._pending = [i for i, run in enumerate(runs) if run.state is AgentState.PENDING]
        self._budgets: list[tuple[float, int, AgentRun]] = []
        self._order = itertools.count()  # ties in the heap never compare two runs
        for run in runs:
            run.moved = self.moved
            self._note_budget(run)

    def index(self, run: AgentRun) -> int:
        """Its place among the runs: the order in which they are launched and taken in."""
        return self._index[id(run)]

    def moved(self, run: AgentRun, before: AgentState) -> None:
        """``run`` went from ``before`` to its state now."""
        after = run.state
        self.unfinished += before.terminal - after.terminal
        # A run whose work is being committed stopped counting when that began (settled).
        self.active += run.active - (before in ACTIVE and run.settling is None)
        if before is AgentState.PENDING:
            i = self.index(run)
            del self._pending[bisect.bisect_left(self._pending, i)]
        if after is AgentState.PENDING:
            bisect.insort(self._pending, self.index(run))
        self._note_budget(run)

    def settled(self, run: AgentRun) -> None:
        """``run`` ended and its work is being committed: its process no longer runs."""
        if run.state in ACTIVE:
            self.active -= 1

    def pending(self) -> Iterator[AgentRun]:
        """The pending runs in their order (those that move meanwhile are still given)."""
        for i in self._pending[:]:
            yield self.runs[i]

    def earliest_budget(self) -> float | None:
        """When the first budget of a run that may run ends (monotonic), if any has one. A
        run waiting on a person has its budget paused: its old end would wake the loop at
        once on every turn until the answer, which moves the budget and notes it again."""
        heap = self._budgets
        while heap and not _counts(heap[0][2], heap[0][0]):
            heapq.heappop(heap)  # that run ended, waits on a person, or its budget moved on
        return heap[0][0] if heap else None

    def _note_budget(self, run: AgentRun) -> None:
        if run.active and run.deadline is not None:
            heapq.heappush(self._budgets, (run.deadline, next(self._order), run))


def _counts(run: AgentRun, deadline: float) -> bool:
    """Whether a budget noted at ``deadline`` still ends the run's time there."""
    waiting = run.state is AgentState.WAITING_HUMAN
    return run.active and not waiting and run.deadline == deadline
