"""One choke point for an agent's state (runtime.agent.run): each move is checked against the
lifecycle's table and said in events.jsonl by the same call; back to pending is a renewal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.pool import plan_runs

from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.lifecycle import (
    TRANSITIONS,
    AgentState,
    IllegalTransition,
    check_transition,
)


@pytest.fixture
def run(tmp_path: Path) -> AgentRun:
    planned: AgentRun = plan_runs(tmp_path, 1)[0]
    return planned


@pytest.fixture
def events(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "events.jsonl")


def said(events: EventLog) -> list[dict[str, Any]]:
    if not events.path.exists():
        return []
    lines = events.path.read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "at"} for line in lines]


def test_a_move_is_said_with_its_event_by_the_same_call(run: AgentRun, events: EventLog) -> None:
    run.to(AgentState.LAUNCHING)  # no event named: nothing said
    run.begin(100.0, events, session="s", executor="local")
    assert run.state is AgentState.RUNNING
    assert run.deadline == 100.0 + run.launch.deadline_minutes * 60
    assert said(events) == [
        {"event": "agent_launched", "wave": 1, "agent": "A0", "session": "s", "executor": "local"}
    ]


def test_a_forbidden_move_raises_and_changes_nothing(run: AgentRun, events: EventLog) -> None:
    with pytest.raises(IllegalTransition, match="from pending to running"):
        run.to(AgentState.RUNNING, events, "agent_launched")
    assert run.state is AgentState.PENDING and said(events) == []
    with pytest.raises(IllegalTransition):  # an end the table does not allow: nothing written
        run.end(AgentState.TIMEOUT, events, code=3, detail="budget 1m")
    assert (run.state, run.code, run.detail) == (AgentState.PENDING, None, "")
    assert said(events) == [] and not run.launch.paths.status.exists()


@pytest.mark.parametrize("state", sorted(AgentState))
def test_back_to_pending_is_a_renewal_and_nothing_else(state: AgentState) -> None:
    """The table lists the way back (a parked agent's reset, `wave rerun`), but only a renewal
    takes it: a plain move there would keep the old try's clocks and pid."""
    with pytest.raises(IllegalTransition):
        check_transition(state, AgentState.PENDING)
    assert (AgentState.PENDING in TRANSITIONS[state]) == (state is not AgentState.LAUNCHING)
    if state is not AgentState.LAUNCHING:
        check_transition(state, AgentState.PENDING, renewal=True)
    with pytest.raises(IllegalTransition):  # a renewal goes to pending, nowhere else
        check_transition(AgentState.RUNNING, AgentState.COMPLETED, renewal=True)


def test_a_running_agent_renewed_starts_over_and_says_why(run: AgentRun, events: EventLog) -> None:
    """`wave rerun` of a running agent: RUNNING -> PENDING, as a renewal."""
    run.to(AgentState.LAUNCHING)
    run.begin(100.0)
    run.pid, run.launched_wall, run.reruns, run.parked = 4242, 5.0, 1, 2
    with pytest.raises(IllegalTransition):
        run.to(AgentState.PENDING)
    run.renew(events, "agent_rerun", reason="flaky")
    after: tuple[object, ...] = (run.state, run.pid, run.deadline, run.launched_wall)
    assert after == (AgentState.PENDING, None, None, None)  # its try's clocks start over
    assert (run.reruns, run.parked) == (1, 2)  # how often it was rerun or parked is kept
    assert said(events) == [{"event": "agent_rerun", "wave": 1, "agent": "A0", "reason": "flaky"}]


def test_an_agent_being_launched_is_not_renewed(run: AgentRun, events: EventLog) -> None:
    run.to(AgentState.LAUNCHING)
    run.pid = 7
    with pytest.raises(IllegalTransition, match="renewed while launching"):
        run.renew(events, "agent_rerun", reason="flaky")
    assert (run.state, run.pid, said(events)) == (AgentState.LAUNCHING, 7, [])


def test_an_end_the_launcher_decided_is_written_then_said(run: AgentRun, events: EventLog) -> None:
    run.to(AgentState.LAUNCHING)
    run.begin(100.0)
    run.launched_wall = run.finished_wall = 1_900_000_000.0
    run.end(AgentState.CANCELLED, events, detail="launcher stopped")
    status = json.loads(run.launch.paths.status.read_text())
    assert (status["outcome"], status["stopped_by"], status["code"]) == (
        "cancelled",
        "launcher",
        -1,
    )
    [finished] = said(events)
    assert (finished["event"], finished["status"], finished["detail"]) == (
        "agent_finished",
        "cancelled",
        "launcher stopped",
    )
    assert run.state is AgentState.CANCELLED


def test_a_park_is_said_only_when_asked(run: AgentRun, events: EventLog) -> None:
    """Parked on a usage limit it is said (agent_limited); parked on the way to its fallback
    executor it is not (the fallback is said instead)."""
    run.to(AgentState.LAUNCHING)
    run.begin(100.0)
    run.park(2_000_000_000.0, events, account="work")
    assert (run.state, run.limited_until, run.parked) == (AgentState.LIMITED, 2e9, 1)
    run.unpark()
    run.to(AgentState.LAUNCHING)
    run.begin(100.0)
    run.park(2_000_000_000.0)
    assert [e["event"] for e in said(events)] == ["agent_limited"]
    assert run.parked == 2


def test_an_agent_waiting_on_a_person_that_hits_a_usage_limit_is_parked(
    run: AgentRun, events: EventLog
) -> None:
    """Its CLI ended on a usage limit while its question was open: parked until the reset,
    then pending again, as any limited agent (the move was missing and the loop raised)."""
    run.to(AgentState.LAUNCHING)
    run.begin(100.0, events, session="s", executor="local")
    run.to(AgentState.WAITING_HUMAN)
    run.park(5000.0, events, until="09:40")
    assert run.state is AgentState.LIMITED and run.limited_until == 5000.0
    assert said(events)[-1]["event"] == "agent_limited"
    run.unpark()
    assert run.state is AgentState.PENDING and run.parked == 1
