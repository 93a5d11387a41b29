"""The one line `wave rerun` and the console's `r` show for a new run's plan, and when it is
more than a person asked for (so that the command asks first)."""

from __future__ import annotations

from wave_orchestrator.runtime.wave.reuse_plan import ReusePlan


def test_a_plan_that_reuses_the_others_names_them() -> None:
    plan = ReusePlan(("QA",), ("A", "B"), {})
    assert plan.words() == "reruns QA; reuses A, B"
    assert not plan.more_than_asked


def test_a_plan_that_reuses_nothing_says_everything_and_why_once() -> None:
    why = "the base moved since A ran (notes.md changed)"
    plan = ReusePlan(("QA",), (), {"A": why, "B": why})
    assert plan.words() == f"reruns everything: {why}"
    assert plan.more_than_asked


def test_agents_that_only_follow_the_asked_one_do_not_count_as_more() -> None:
    plan = ReusePlan(("A",), ("B",), {"C": "it depends on A, which runs again"}, frozenset({"C"}))
    assert plan.words() == "reruns A, C; reuses B"
    assert not plan.more_than_asked


def test_an_agent_run_again_for_its_own_reason_says_it() -> None:
    plan = ReusePlan(("QA",), ("B",), {"A": "the launcher saw it end failed"})
    assert plan.words() == "reruns QA, A; reuses B: the launcher saw it end failed"
    assert plan.more_than_asked


def test_the_closure_agents_that_run_again_are_named() -> None:
    """The closure sweep runs every closure agent again: those not asked for are named too."""
    plan = ReusePlan(("qa",), ("core", "cli", "util"), {}, sweep=("sec",))
    assert plan.words() == "reruns qa (and the closure sweep: sec); reuses core, cli, util"
    assert not plan.more_than_asked
    both = ReusePlan(("A",), ("B",), {}, sweep=("sec", "qa"))
    assert both.words() == "reruns A (and the closure sweep: sec, qa); reuses B"
