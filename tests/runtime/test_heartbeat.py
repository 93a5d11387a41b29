"""The launch's heartbeat line: who runs, who is done, who takes longest (issue 14)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from wave_orchestrator.runtime.pool.heartbeat import Heartbeat, heartbeat_text
from wave_orchestrator.state.lifecycle import AgentState


def run(agent: str, state: AgentState, launched: float | None) -> Any:
    active = state in (AgentState.RUNNING, AgentState.RATE_LIMITED, AgentState.WAITING_HUMAN)
    return SimpleNamespace(id=agent, state=state, launched_wall=launched, active=active)


def test_the_line_names_counts_and_the_longest_runner() -> None:
    runs = [
        run("A1", AgentState.RUNNING, 1000.0),
        run("A4", AgentState.RUNNING, 748.0),  # running longest: 4m12s at t=1000
        run("A2", AgentState.RATE_LIMITED, 990.0),
        run("B1", AgentState.COMPLETED, 500.0),
        run("B2", AgentState.FAILED, 600.0),
        run("C1", AgentState.PENDING, None),
    ]
    assert heartbeat_text(runs, 1000.0) == "3 running, 2 done, 1 waiting, longest A4 4m12s"


def test_agents_finished_before_this_pool_count_as_done() -> None:
    """After --resume, agents that finished while no launcher ran are adopted finished and
    never join the pool: still done, not forgotten."""
    runs = [run("A1", AgentState.RUNNING, 990.0)]
    assert heartbeat_text(runs, 1000.0, done_before=3) == "1 running, 3 done, longest A1 0m10s"


def test_nothing_to_say_when_nothing_runs() -> None:
    assert heartbeat_text([run("A", AgentState.COMPLETED, 1.0)], 10.0) is None


def test_at_most_one_line_per_interval() -> None:
    from structlog.testing import capture_logs

    beat = Heartbeat(every=3600)
    runs = [run("A", AgentState.RUNNING, 1.0)]
    with capture_logs() as logged:
        beat.beat(runs, 1)  # not yet: the first line comes one interval after the start
        assert logged == []
        beat.next = 0.0
        beat.beat(runs, 1)
        beat.beat(runs, 1)
    lines = [line["event"] for line in logged]
    assert len(lines) == 1 and lines[0].startswith("wave 1: 1 running, 0 done, longest A ")
    assert logged[0]["log_level"] == "info"
