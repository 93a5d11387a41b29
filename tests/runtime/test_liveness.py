"""The pool's noticing half (runtime.pool.liveness), asked without a loop: what the placement,
the budgets, the silences and the launcher's stops say of each agent, as endings."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from wave_orchestrator.errors import PlacementError, PlacementUnreachable
from wave_orchestrator.placement.base import PaneInfo
from wave_orchestrator.placement.tmux import TmuxUnreachable
from wave_orchestrator.runtime.pool.liveness import (
    Ending,
    Liveness,
    Started,
    cancelled,
    spend_stopped,
)
from wave_orchestrator.state.lifecycle import AgentState

ACTIVE = (AgentState.QUEUED, AgentState.RUNNING, AgentState.RATE_LIMITED, AgentState.WAITING_HUMAN)


def run(agent: str, state: AgentState = AgentState.RUNNING, **fields: Any) -> Any:
    """What liveness reads of a run: its state, session, pid, budget and last output."""
    launch = SimpleNamespace(session=f"wave-1-{agent}", deadline_minutes=2.0)
    quiet_since = fields.pop("quiet_since", time.time())
    return SimpleNamespace(
        id=agent,
        state=state,
        active=state in ACTIVE,
        launch=launch,
        pid=fields.pop("pid", None),
        deadline=fields.pop("deadline", None),
        settling=fields.pop("settling", None),
        last_sign_of_life=lambda: quiet_since,
        **fields,
    )


@dataclass
class Panes:
    """A placement that answers ``sessions`` from a table, or fails as told."""

    panes: dict[str, PaneInfo] = field(default_factory=dict)
    error: Exception | None = None
    wrappers: set[int] = field(default_factory=set)  # pids whose wrapper still runs
    kind: str = "local"
    unreachable_since: float | None = None

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        if self.error is not None:
            raise self.error
        return self.panes

    def wrapper_running(self, handle: int) -> bool:
        return handle in self.wrappers


def liveness(placement: Panes, stall: float = 0.0) -> Liveness:
    return Liveness(placement, stall)  # type: ignore[arg-type]


def test_a_dead_pane_and_a_missing_session_end_unless_their_status_says_more() -> None:
    gone, dead, alive = run("A"), run("B"), run("C")
    placement = Panes(
        {
            "wave-1-B": PaneInfo("wave-1-B", True, 3, 42),
            "wave-1-C": PaneInfo("wave-1-C", False, None, 43),
        }
    )
    seen = list(liveness(placement).sessions([gone, dead, alive, run("D", AgentState.PENDING)]))
    assert seen == [
        Ending(
            gone,
            AgentState.SESSION_MISSING,
            None,
            "local session wave-1-A disappeared",
            unless_status=True,
        ),
        Ending(
            dead,
            AgentState.FAILED,
            3,
            "wrapper exited 3 without writing a status file",
            unless_status=True,
        ),
    ]
    assert (dead.pid, alive.pid) == (42, 43)  # followed by the pane's pid from now on


def test_a_queued_job_the_scheduler_runs_is_started_and_one_still_queued_is_not() -> None:
    runs_now, waits = run("A", AgentState.QUEUED), run("B", AgentState.QUEUED)
    placement = Panes(
        {
            "wave-1-A": PaneInfo("wave-1-A", False, None, 7),
            "wave-1-B": PaneInfo("wave-1-B", False, None, 8, queued=True),
        }
    )
    assert list(liveness(placement).sessions([runs_now, waits])) == [Started(runs_now)]


def test_tmux_unreachable_follows_agents_by_pid_and_says_so_once() -> None:
    exited, running, unknown = run("A", pid=11), run("B", pid=12), run("C")
    placement = Panes(error=TmuxUnreachable("no server"), wrappers={12})
    watch = liveness(placement)
    with capture_logs() as logged:
        first = list(watch.sessions([exited, running, unknown]))
        again = list(watch.sessions([exited, running, unknown]))
        placement.error = None
        placement.panes = {
            r.launch.session: PaneInfo(r.launch.session, False, None, 1)
            for r in (exited, running, unknown)
        }
        assert list(watch.sessions([exited, running, unknown])) == []
    died = "wrapper exited without writing a status file (tmux unreachable)"
    assert first == again == [Ending(exited, AgentState.FAILED, detail=died, unless_status=True)]
    assert [line["event"] for line in logged] == [
        "tmux unreachable: agents followed by pid",
        "tmux answers again: agents followed as before",
    ]
    assert not watch.unreachable


def test_a_cluster_out_of_sight_keeps_its_agents_until_the_lane_gives_up_on_it() -> None:
    agent = run("A")
    placement = Panes(error=PlacementUnreachable("controller gone", 1.0, given_up=False))
    assert list(liveness(placement).sessions([agent])) == []
    placement.error = PlacementUnreachable("controller gone for 10m", 1.0, given_up=True)
    [ending] = liveness(placement).sessions([agent])
    assert isinstance(ending, Ending)
    assert (ending.state, ending.unretryable, ending.unseen) == (AgentState.FAILED, True, True)
    assert ending.detail == "controller gone for 10m" and not ending.unless_status


def test_a_placement_error_skips_one_round_without_ending_anyone() -> None:
    placement = Panes(error=PlacementError("squeue timed out"))
    with capture_logs() as logged:
        assert list(liveness(placement).sessions([run("A")])) == []
    assert [line["event"] for line in logged] == ["liveness check skipped"]


def test_budgets_end_when_due_and_never_while_an_agent_waits_on_a_person() -> None:
    now = 1_000.0
    due, early = run("A", deadline=now - 1), run("B", deadline=now + 60)
    asking = run("C", AgentState.WAITING_HUMAN, deadline=now - 1)
    watch = liveness(Panes())
    watch.note_budget(now - 1)
    ends = list(watch.budgets([due, early, asking], now))
    assert ends == [
        Ending(due, AgentState.TIMEOUT, detail="budget 2m", stop=True, unless_status=True)
    ]
    watch.note_budget(now + 60)  # none is due before the earliest budget
    assert list(watch.budgets([due], now)) == []


def test_no_budget_is_enforced_while_the_placement_cannot_reach_its_jobs() -> None:
    watch = liveness(Panes(unreachable_since=1.0))
    assert list(watch.budgets([run("A", deadline=0.0)], 1_000.0)) == []


@pytest.mark.parametrize("state", [AgentState.RUNNING, AgentState.RATE_LIMITED])
def test_a_silent_agent_is_stalled_and_a_waiting_or_recent_one_is_not(state: AgentState) -> None:
    watch = liveness(Panes(), stall=60)
    silent = run("A", state, quiet_since=time.time() - 61)
    ending = watch.stalled(silent)
    assert ending == Ending(silent, AgentState.STALLED, detail="no output for 1m", stop=True)
    assert watch.stalled(run("B", state, quiet_since=time.time() - 30)) is None
    for waiting in (AgentState.WAITING_HUMAN, AgentState.QUEUED):
        assert watch.stalled(run("C", waiting, quiet_since=0.0)) is None
    assert liveness(Panes(), stall=0).stalled(silent) is None  # no stall time: none judged


def test_a_stop_cancels_what_waits_and_stops_what_runs() -> None:
    waiting, parked, running = run("A", AgentState.PENDING), run("B", AgentState.LIMITED), run("C")
    ended = run("D", AgentState.COMPLETED)
    assert [(e.run.id, e.state, e.stop) for e in cancelled([waiting, parked, running, ended])] == [
        ("A", AgentState.CANCELLED, False),
        ("B", AgentState.CANCELLED, False),
        ("C", AgentState.CANCELLED, True),
    ]


def test_the_spend_limit_starts_nothing_more_and_a_hard_one_stops_what_runs() -> None:
    waiting, running = run("A", AgentState.PENDING), run("B")
    soft = list(spend_stopped([waiting, running], "spend limit $5 reached", hard=False))
    assert soft == [
        Ending(
            waiting,
            AgentState.FAILED,
            detail="not started: spend limit $5 reached",
            unretryable=True,
        )
    ]
    hard = list(spend_stopped([waiting, running], "spend limit $5 reached", hard=True))
    assert [(e.run.id, e.stop, e.unretryable) for e in hard] == [
        ("A", False, True),
        ("B", True, True),
    ]
    assert hard[1].detail == "stopped: spend limit $5 reached"


def test_an_agent_whose_end_is_being_committed_is_not_ended_again() -> None:
    """A stop or the spend limit asked on every turn: an agent ended on an earlier turn,
    whose work is being committed, is left to its commit (ending it twice raised)."""
    committing = [run("A", AgentState.LIMITED, settling=object()), run("B", settling=object())]
    assert list(cancelled(committing)) == []
    assert list(spend_stopped(committing, "spend limit $5 reached", hard=True)) == []
