"""The agent lifecycle as an explicit state machine; the dashboard and status read it."""

from __future__ import annotations

from enum import StrEnum


class AgentState(StrEnum):
    PENDING = "pending"
    LAUNCHING = "launching"
    QUEUED = "queued"  # submitted to a scheduler that has not run it yet; no budget counts
    RUNNING = "running"
    RATE_LIMITED = "rate-limited"
    WAITING_HUMAN = "waiting-human"  # asked a person a question; budget and stall clocks paused
    LIMITED = "limited"  # hit a usage limit that resets soon: not running, relaunched after it
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    STALLED = "stalled"
    SESSION_MISSING = "session-missing"
    USAGE_LIMIT = "usage-limit"
    STATUS_UNREADABLE = "status-unreadable"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def outcome(self) -> str:
        """The status word of the ``agent_finished`` event."""
        return "success" if self is AgentState.COMPLETED else self.value


TERMINAL = frozenset(
    {
        AgentState.COMPLETED,
        AgentState.FAILED,
        AgentState.TIMEOUT,
        AgentState.STALLED,
        AgentState.SESSION_MISSING,
        AgentState.USAGE_LIMIT,
        AgentState.STATUS_UNREADABLE,
        AgentState.CANCELLED,
    }
)
_ENDS = TERMINAL
_FORWARD: dict[AgentState, frozenset[AgentState]] = {
    # A pending agent can fail without launching when an agent it depends on failed.
    # ... or, its account out of quota with no reset to wait for, as usage-limit.
    AgentState.PENDING: frozenset(
        {AgentState.LAUNCHING, AgentState.FAILED, AgentState.CANCELLED, AgentState.USAGE_LIMIT}
    ),
    AgentState.LAUNCHING: frozenset(
        {AgentState.QUEUED, AgentState.RUNNING, AgentState.FAILED, AgentState.CANCELLED}
    ),
    AgentState.QUEUED: _ENDS | {AgentState.RUNNING, AgentState.LIMITED},
    AgentState.RUNNING: _ENDS
    | {AgentState.RATE_LIMITED, AgentState.WAITING_HUMAN, AgentState.LIMITED},
    AgentState.RATE_LIMITED: _ENDS
    | {AgentState.RUNNING, AgentState.WAITING_HUMAN, AgentState.LIMITED},
    # Parked until its account's reset: then renewed (below), or ended.
    AgentState.LIMITED: frozenset(
        {AgentState.FAILED, AgentState.USAGE_LIMIT, AgentState.CANCELLED}
    ),
    # Its process may end on a usage limit while its question is open: parked like any other.
    AgentState.WAITING_HUMAN: _ENDS | {AgentState.RUNNING, AgentState.LIMITED},
}
# Renewal: pending again as a new try of the same attempt (a parked agent after its account's
# reset or on its fallback executor, `wave rerun`), from any state but launching: a burst may
# be starting that very try, and would start a stale one. The only way back to pending, and
# only as a renewal (AgentRun.renew, which starts the try's fields over): an end is final to
# every other move.
RENEWABLE = frozenset(AgentState) - {AgentState.LAUNCHING}
_BACK = frozenset({AgentState.PENDING})
TRANSITIONS: dict[AgentState, frozenset[AgentState]] = {
    state: _FORWARD.get(state, frozenset()) | (_BACK if state in RENEWABLE else frozenset())
    for state in AgentState
}


class IllegalTransition(RuntimeError):
    pass


def check_renewal(current: AgentState) -> None:
    """Raises unless an agent in ``current`` may be renewed (pending again, as a new try)."""
    check_transition(current, AgentState.PENDING, renewal=True)


def check_transition(current: AgentState, target: AgentState, *, renewal: bool = False) -> None:
    """Raises unless the table allows the move; back to pending is a renewal, and only that."""
    if target in TRANSITIONS[current] and (target is AgentState.PENDING) == renewal:
        return
    if renewal:
        raise IllegalTransition(f"agent cannot be renewed while {current}")
    raise IllegalTransition(f"agent cannot go from {current} to {target}")
