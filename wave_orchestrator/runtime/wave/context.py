"""What a wave run shares with its launcher (``WaveContext``), the attempt under way (shared by
the runner, the stage and the gates) and what it hands back: the outcome of the wave, and of
each attempt."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...closure.gates import GateResult
from ...coordination.follower import Coordinator
from ...definitions.model import AgentDef, LaneDef
from ...governor.governor import Governor
from ...placement.base import Placement
from ...placement.reaper import Reaper
from ...state.events import EventLog
from ...state.layout import StateLayout
from ...state.ledger import LAUNCHED, REJECTED, Ledger
from ...state.lifecycle import AgentState
from ..agent.continuation import Carried
from ..agent.plan import Planner
from ..agent.run import AgentRun


@dataclass
class WaveOutcome:
    wave: int
    state: str
    attempts: int
    failures: list[AgentRun] = field(default_factory=list)
    gate: GateResult | None = None  # the gate that failed the last attempt, if one did
    blocked: bool = False  # failed with nothing safe left to retry (exit 4)
    note: str = ""  # why it is blocked, when a person's answer is what it waited for
    runs: list[dict[str, Any]] = field(default_factory=list)  # every run that ended, in order


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class Attempt:
    """The attempt under way, as the runner's loop sets it; the stage that launches its agents
    and the gates that judge them read it."""

    number: int = 0
    reason: str = ""  # why it runs: one line for status views
    notes: dict[str, str] = field(default_factory=dict)  # agent id -> "why you run again"
    carried: dict[str, Carried] = field(default_factory=dict)  # `wave rerun --continue`
    adopting: bool = False  # rejoining what a dead launcher left
    retrying: bool = False  # resuming with the dead launcher's retry plan (its targets)


@dataclass
class AttemptResult:
    failed: list[AgentRun] = field(default_factory=list)  # agents that did not succeed
    gate: GateResult | None = None
    gate_agents: list[AgentDef] = field(default_factory=list)  # agents the gate failed
    failed_stage: int | None = None

    @property
    def ok(self) -> bool:
        return not self.failed and self.gate is None


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class WaveContext:
    """What a wave run shares with its launcher."""

    lane: LaneDef
    layout: StateLayout
    placement: Placement  # where agents run: tmux here (local), or Slurm jobs
    events: EventLog
    stop: threading.Event
    planner: Planner  # plans each attempt of an agent of the lane
    keep_sessions: bool
    coordinator: Coordinator  # the coordination log's board, inboxes and questions to a person
    resume: bool = False  # adopt a dead launcher's sessions and status files
    fresh: bool = False  # a new run reuses no finished work of an earlier one (reuse.py)
    keep_worktrees: bool = False  # isolation: worktree: leave agent worktrees at wave end
    reaper: Reaper | None = None  # ends agents' process groups; the launcher's, if it has one
    governor: Governor | None = None  # asked before each launch, told of limits and costs
    ledger: Ledger | None = None  # the launcher's own record, which decisions are taken from

    def record_agents(self, wave: int, runs: Iterable[AgentRun], outcome: str = "") -> None:
        """Tell the ledger how these agents stand (``outcome``, else each run's state)."""
        if self.ledger is not None:
            self.ledger.agents(
                wave,
                (
                    (r.id, r.launch.attempt, r.launch.fingerprint, outcome or r.state.value)
                    for r in runs
                ),
            )

    def record_ends(self, wave: int, runs: Iterable[AgentRun]) -> None:
        """The runs that ended, as the launcher judged them (others are left out); one it
        gave up on without seeing its end stays launched: its status, later, may tell."""
        ended = [r for r in runs if r.state.terminal]
        self.record_agents(wave, [r for r in ended if not r.unseen])
        self.record_agents(wave, [r for r in ended if r.unseen], LAUNCHED)

    def record_launches(self, wave: int, runs: Iterable[AgentRun]) -> None:
        """The runs about to be launched (not those adopted): one ledger write for them all."""
        self.record_agents(wave, [r for r in runs if r.state is AgentState.PENDING], LAUNCHED)

    def record_wave(
        self,
        wave: int,
        state: str,
        runs: Mapping[str, AgentRun] | None = None,
        rejected: Iterable[str] = (),
    ) -> None:
        """Tell the ledger how the wave stands, and which of its agents its gate failed."""
        runs = runs or {}
        self.record_agents(wave, [runs[a] for a in rejected if a in runs], REJECTED)
        if self.ledger is not None:
            self.ledger.wave_state(wave, state)
