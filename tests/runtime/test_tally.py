"""The pool's counts kept as agents move (runtime.pool.tally): after any legal moves they are
what a walk over every agent would count, so that no turn of the loop has to walk them."""

from __future__ import annotations

import random
from concurrent.futures import Future
from pathlib import Path

import pytest
from fakes.pool import plan_runs

from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.runtime.pool.tally import Tally
from wave_orchestrator.state.lifecycle import TRANSITIONS, AgentState


def recount(runs: list[AgentRun]) -> tuple[int, int, list[str], float | None]:
    """What the tally stands for, counted the slow way."""
    budgets = [
        r.deadline
        for r in runs
        if r.active and r.state is not AgentState.WAITING_HUMAN and r.deadline is not None
    ]
    return (
        sum(1 for r in runs if not r.state.terminal),
        sum(1 for r in runs if r.active),
        [r.id for r in runs if r.state is AgentState.PENDING],
        min(budgets, default=None),
    )


def counted(tally: Tally) -> tuple[int, int, list[str], float | None]:
    return (
        tally.unfinished,
        tally.active,
        [r.id for r in tally.pending()],
        tally.earliest_budget(),
    )


settled: list[AgentRun] = []  # runs whose work began to be committed, for the tally to hear


def step(run: AgentRun, rng: random.Random, now: float) -> None:
    """One legal move of ``run``, as the pool and its services make them."""
    if run.state is AgentState.LAUNCHING:
        run.begin(now + rng.uniform(0, 100))
    elif run.state is AgentState.WAITING_HUMAN and rng.random() < 0.5:
        run.answered(now)
    elif run.state is AgentState.RUNNING and rng.random() < 0.2:
        run.wait_on_person(now)
    elif run.state is AgentState.RUNNING and rng.random() < 0.1:
        run.settling = Future()  # its work being committed: it stops counting first
        run.ending = (AgentState.COMPLETED, 0, "")
        settled.append(run)
    elif run.state is not AgentState.LAUNCHING and rng.random() < 0.1:
        run.renew()  # `wave rerun`, or a parked agent's reset
    else:
        targets = sorted(TRANSITIONS[run.state] - {AgentState.PENDING})
        if targets:
            run.to(rng.choice(targets))


@pytest.mark.parametrize("seed", range(5))
def test_the_counts_stay_what_a_walk_would_count(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    runs = plan_runs(tmp_path, 12)
    tally = Tally(runs)
    assert counted(tally) == recount(runs)
    for turn in range(400):
        run = rng.choice(runs)
        if run.settling is None:
            step(run, rng, float(turn))
        if settled:
            tally.settled(settled.pop())
        assert counted(tally) == recount(runs), (turn, run.id, run.state)


def test_pending_runs_keep_their_order_when_one_comes_back(tmp_path: Path) -> None:
    runs = plan_runs(tmp_path, 4)
    tally = Tally(runs)
    runs[1].to(AgentState.LAUNCHING)
    runs[1].begin(10.0)
    assert [r.id for r in tally.pending()] == ["A0", "A2", "A3"]
    runs[1].renew()  # `wave rerun`: back in its place, not at the end
    assert [r.id for r in tally.pending()] == ["A0", "A1", "A2", "A3"]


def test_a_budget_that_moved_on_is_not_the_earliest_any_more(tmp_path: Path) -> None:
    """A wait on a person lengthens the budget by the wait: the old end no longer counts."""
    first, second = plan_runs(tmp_path, 2)
    tally = Tally([first, second])
    for run, now in ((first, 0.0), (second, 30.0)):
        run.to(AgentState.LAUNCHING)
        run.begin(now)
    assert tally.earliest_budget() == first.deadline
    first.wait_on_person(10.0)
    first.answered(70.0)  # waited 60 s: its budget ends 60 s later
    assert tally.earliest_budget() == second.deadline
    second.to(AgentState.COMPLETED)
    assert tally.earliest_budget() == first.deadline
    first.to(AgentState.TIMEOUT)
    assert (tally.earliest_budget(), tally.active, tally.unfinished) == (None, 0, 0)


def test_a_budget_paused_for_a_person_wakes_no_turn_until_the_answer(tmp_path: Path) -> None:
    """An agent past its budget's old end while it waits on a person: the loop is not woken
    by it (it spun at once on every turn); answered, its budget counts again, moved on by
    the wait."""
    runs = plan_runs(tmp_path, 2)
    tally = Tally(runs)
    waiting, other = runs
    for run, deadline in ((waiting, 100.0), (other, 500.0)):
        run.to(AgentState.LAUNCHING)
        run.begin(deadline - run.launch.deadline_minutes * 60)
    assert tally.earliest_budget() == 100.0
    waiting.to(AgentState.WAITING_HUMAN)
    waiting.paused_at = 90.0
    assert tally.earliest_budget() == 500.0
    waiting.answered(now=300.0)
    assert waiting.deadline == 310.0 and tally.earliest_budget() == 310.0
