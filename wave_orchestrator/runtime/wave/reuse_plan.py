"""What a new run of a wave runs again and what it reuses, and why: one plan, taken by the
launcher as it starts the run and shown by `wave rerun` (and the console's `r`, which asks the
same command) before anything is spent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...definitions.model import LaneDef, WaveDef
from ...errors import WaveError
from ...state.layout import StateLayout
from ...state.ledger import LedgerView, ledger_path, read_ledger
from .base_moves import BaseMoves, earlier_bases
from .reuse import fingerprint, judge_reuse
from .workspaces import Workspaces

SHOWN_REASONS = 3


@dataclass(frozen=True)
class ReusePlan:
    """A new run's plan: the agents a person asked for, the implementation agents it reuses,
    and those it runs again beyond what was asked, each with why."""

    asked: tuple[str, ...]
    reused: tuple[str, ...]
    again: Mapping[str, str]  # agent -> why it runs again
    follows: frozenset[str] = frozenset()  # of ``again``: only as they depend on one asked
    sweep: tuple[str, ...] = ()  # the closure agents not asked for: the closure sweep runs them

    @property
    def more_than_asked(self) -> bool:
        """Whether it runs implementation agents again for reasons of their own."""
        return bool(set(self.again) - self.follows)

    def words(self) -> str:
        """The plan in one line, naming every agent that runs: "reruns QA (and the closure
        sweep: sec); reuses A, B", "reruns everything: the base moved since A ran (A.txt
        changed)"."""
        runs = [*self.asked, *(a for a in self.again if a not in self.asked)]
        if self.again and not self.reused:
            text = "reruns everything"
        else:
            text = "reruns " + ", ".join(runs)
            sweep = [a for a in self.sweep if a not in runs]
            if sweep:
                text += f" (and the closure sweep: {', '.join(sweep)})"
        if self.reused:
            text += "; reuses " + ", ".join(self.reused)
        why = list(dict.fromkeys(self.again[a] for a in self.again if a not in self.follows))
        if why:
            more = (
                f" (and {len(why) - SHOWN_REASONS} more reasons)"
                if len(why) > SHOWN_REASONS
                else ""
            )
            text += ": " + "; ".join(why[:SHOWN_REASONS]) + more
        return text


def plan_reuse(
    wave: WaveDef,
    layout: StateLayout,
    ledger: LedgerView | None,
    previous: Mapping[str, Any],
    workspaces: Workspaces,
    fresh: bool = False,
) -> ReusePlan:
    """The plan of a new run of ``wave`` (not ``--resume``), before it sets the earlier run
    aside: ``previous`` is the wave's run-state (its gate's ``rejected_agents``, and the
    agents `wave rerun` asked for). In worktree mode an agent whose branch is gone runs
    again, and the base its work stands on is judged (``BaseMoves``)."""
    from .reuse import rerun_notes

    asked = tuple(rerun_notes(previous))
    impl = wave.implementation_agents
    sweep = tuple(a.id for a in wave.agents if a.is_closure and a.id not in asked)
    if fresh:
        again = {a.id: "--fresh reuses nothing" for a in impl if a.id not in asked}
        return ReusePlan(asked, (), again, sweep=sweep)
    try:
        base = workspaces.reuse_base()
    except WaveError as exc:  # no base to compare with: nothing reused
        why = {a.id: f"no base to start from: {exc}" for a in impl}
        return ReusePlan(asked, (), why, sweep=sweep)
    moves = None
    if workspaces.enabled:
        moves = BaseMoves(
            workspaces.isolation, wave.number, base, earlier_bases(layout, wave.number)
        )
    prints = {a.id: fingerprint(a, a.executor.id, base) for a in impl}
    earlier = {a.id: layout.agent(wave.number, a.id) for a in impl if workspaces.has_branch(a.id)}
    rejected = previous.get("rejected_agents")
    rejected = [*(rejected if isinstance(rejected, list) else ()), *asked]
    again = judge_reuse(impl, prints, earlier, ledger, wave.number, rejected, moves)
    for a in asked:
        if a in again:
            again[a] = "a person asked for it"
    follows = _following(wave, set(asked), again)
    reused = tuple(a.id for a in impl if a.id not in again)
    again = {a: w for a, w in again.items() if a not in asked}
    return ReusePlan(asked, reused, again, follows, sweep)


def _following(wave: WaveDef, asked: set[str], again: Mapping[str, str]) -> frozenset[str]:
    """The agents that run again only because they depend (maybe through others) on one a
    person asked for."""
    follows: set[str] = set()
    grew = True
    while grew:
        more = {
            a.id
            for a in wave.implementation_agents
            if a.id in again
            and a.id not in asked | follows
            and (asked | follows) & set(a.depends_on)
            and again[a.id].startswith("it depends on")
        }
        grew = bool(more)
        follows |= more
    return frozenset(follows)


def plan_for_rerun(
    lane: LaneDef, layout: StateLayout, wave: int, agents: Sequence[str], fresh: bool = False
) -> ReusePlan:
    """What `wave rerun` of ``agents`` in ``wave`` would run and reuse, with no launcher on
    the lane: the plan its launch will take, read from the same files."""
    from ...state.run_state import RunState
    from .reuse import rerun_notes

    definition = lane.wave(wave)
    previous = dict(RunState(layout.run_state, lane.name).wave(wave))
    asked = sorted({*rerun_notes(previous), *agents})  # as `RunState.ask_rerun` will keep them
    previous["rerun"] = {"agents": asked, "reason": ""}
    ledger = read_ledger(ledger_path(lane.repo, lane.name))
    workspaces = Workspaces(lane, layout, definition)
    return plan_reuse(definition, layout, ledger, previous, workspaces, fresh)
