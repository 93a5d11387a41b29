from __future__ import annotations

import pytest

from wave_orchestrator.state.lifecycle import (
    TERMINAL,
    AgentState,
    IllegalTransition,
    check_renewal,
    check_transition,
)


def test_happy_path_and_rate_limit_round_trip() -> None:
    for a, b in [
        ("pending", "launching"),
        ("launching", "running"),
        ("running", "rate-limited"),
        ("rate-limited", "running"),
        ("running", "completed"),
    ]:
        check_transition(AgentState(a), AgentState(b))


@pytest.mark.parametrize("end", sorted(TERMINAL))
def test_terminal_states_are_final(end: AgentState) -> None:
    for target in AgentState:
        with pytest.raises(IllegalTransition):
            check_transition(end, target)


def test_pending_cannot_jump_to_running_or_timeout() -> None:
    with pytest.raises(IllegalTransition):
        check_transition(AgentState.PENDING, AgentState.RUNNING)
    with pytest.raises(IllegalTransition):
        check_transition(AgentState.PENDING, AgentState.TIMEOUT)


def test_outcome_words_match_the_events_spec() -> None:
    assert AgentState.COMPLETED.outcome == "success"
    assert AgentState.SESSION_MISSING.outcome == "session-missing"
    assert {s.outcome for s in TERMINAL} == {
        "success",
        "failed",
        "timeout",
        "stalled",
        "session-missing",
        "usage-limit",
        "status-unreadable",
        "cancelled",
    }


@pytest.mark.parametrize("state", sorted(AgentState))
def test_renewal_is_checked_and_never_under_a_launch(state: AgentState) -> None:
    """Pending again (a parked agent's reset, `wave rerun`) from any state but launching."""
    if state is AgentState.LAUNCHING:
        with pytest.raises(IllegalTransition):
            check_renewal(state)
    else:
        check_renewal(state)
