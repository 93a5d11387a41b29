"""What the agent pool needs from the coordination layer, and nothing more: a cheap look for
news, who waits on a person, and what a launching agent should read first; and the agents'
clocks paused while they wait on a person. The launcher gives the pool its coordinator
(coordination/follower.py); tests and dry runs give it none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ...state.lifecycle import AgentState
from ..agent.run import AgentRun


class Messages(Protocol):
    """The coordination layer as the pool sees it (coordination/follower.py implements it)."""

    def tick(self) -> bool: ...

    def waiting_human(self) -> frozenset[str]: ...

    def prompt_context(self, agent_id: str) -> str: ...

    def flush(self) -> None: ...

    def tell_person(self, payload: dict[str, Any]) -> None: ...


class NoMessages:
    def tick(self) -> bool:
        return False

    def waiting_human(self) -> frozenset[str]:
        return frozenset()

    def prompt_context(self, agent_id: str) -> str:
        return ""

    def flush(self) -> None:
        return None

    def tell_person(self, payload: dict[str, Any]) -> None:
        return None


def follow_questions(runs: Iterable[AgentRun], waiting: frozenset[str], now: float) -> bool:
    """An agent waiting on a person's answer: its budget and stall clocks are paused, and
    start again (the budget extended by the wait) once it stops waiting. True if any
    agent's state changed."""
    changed = False
    for run in runs:
        asking = run.state not in (AgentState.WAITING_HUMAN, AgentState.QUEUED)
        if run.active and run.id in waiting and asking:
            run.wait_on_person(now)
            changed = True
        elif run.state is AgentState.WAITING_HUMAN and run.id not in waiting:
            run.answered(now)
            changed = True
    return changed
