"""What the placement, the budgets and the silences say of each active agent, and what a stop
of the launcher or the spend limit means for each: noticed here, yielded as endings (and
starts) that the pool's loop applies, so that each question can be asked, and tested, without
a loop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ...errors import PlacementError, PlacementUnreachable
from ...placement.base import PaneInfo, Placement, ended_state
from ...placement.tmux import TmuxUnreachable
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ..agent.run import AgentRun, describe_budget

log = Logger(__name__)


class Ending(NamedTuple):
    """How an agent ended, as noticed; the loop makes it so."""

    run: AgentRun
    state: AgentState
    code: int | None = None
    detail: str = ""
    stop: bool = False  # its process group is ended (SIGTERM, then SIGKILL)
    # Its wrapper may have written how it ended (it does before it exits): that file decides.
    unless_status: bool = False
    unretryable: bool = False  # no retry mends it (a refused job, the spend limit)
    unseen: bool = False  # ended without its end seen (its cluster gone from view)


class Started(NamedTuple):
    """A queued job the scheduler now runs: its budget counts from now."""

    run: AgentRun


class Liveness:
    """Asks the placement about the active agents, and the clocks about budgets and stalls."""

    def __init__(self, placement: Placement, stall_seconds: float) -> None:
        self.placement = placement
        self.stall = stall_seconds
        self.unreachable = False  # tmux lost its socket: agents followed by pid meanwhile
        self.next_due = 0.0  # no agent's budget runs out before this (the loop's timers)

    def sessions(self, runs: Iterable[AgentRun]) -> Iterator[Ending | Started]:
        """What the placement says of each active agent: still there, started, or gone."""
        active = [r for r in runs if r.active]
        if not active:
            return
        try:
            panes = self.placement.sessions(strict=True)
        except TmuxUnreachable as exc:  # the server runs: its sessions are unknown, not gone
            if not self.unreachable:
                log.warning("tmux unreachable: agents followed by pid", error=str(exc))
            self.unreachable = True
            yield from self._by_pid(active)
            return
        except PlacementUnreachable as exc:  # agents kept as they are up to the lane's bound,
            for run in active if exc.given_up else ():  # then fail (nothing could be submitted)
                yield Ending(run, AgentState.FAILED, detail=str(exc), unretryable=True, unseen=True)
            return
        except PlacementError as exc:  # try again next round rather than fail every agent
            log.warning("liveness check skipped", error=str(exc))
            return
        if self.unreachable:
            log.warning("tmux answers again: agents followed as before")
        self.unreachable = False
        for run in active:
            info = panes.get(run.launch.session)
            if info is not None:
                run.pid = info.pid
            if info is not None and not info.dead:
                if run.state is AgentState.QUEUED and not info.queued:
                    yield Started(run)
                continue
            state, code, detail = ended_unsaid(info, self.placement.kind, run.launch.session)
            yield Ending(run, state, code, detail, unless_status=True)

    def _by_pid(self, active: list[AgentRun]) -> Iterator[Ending]:
        """tmux does not answer: an agent is followed by its wrapper's pid, never launched a
        second time."""
        died = "wrapper exited without writing a status file (tmux unreachable)"
        for run in active:
            if run.pid is not None and not self.placement.wrapper_running(run.pid):
                yield Ending(run, AgentState.FAILED, detail=died, unless_status=True)

    def note_budget(self, earliest: float | None) -> None:
        """The earliest budget's end (None: no budget runs): none is looked at before it."""
        self.next_due = math.inf if earliest is None else earliest

    def budgets(self, runs: Iterable[AgentRun], now: float) -> Iterator[Ending]:
        """Agents whose budget ran out (a wait on a person does not count)."""
        # No kill reaches a job meanwhile (budgets enforced once it answers), or none is due
        # yet: next_due is the earliest budget, and a budget set since ends later still.
        if self.placement.unreachable_since is not None or now < self.next_due:
            return
        for run in runs:
            waiting = run.state is AgentState.WAITING_HUMAN
            due = run.active and not waiting and run.deadline is not None and now >= run.deadline
            if due:
                budget = describe_budget(run.launch.deadline_minutes)
                detail = f"budget {budget}"
                yield Ending(run, AgentState.TIMEOUT, detail=detail, stop=True, unless_status=True)

    def stalled(self, run: AgentRun) -> Ending | None:
        """An agent silent for the lane's stall time (not while it waits on a person, or on
        its scheduler)."""
        if self.stall <= 0 or run.state in (AgentState.WAITING_HUMAN, AgentState.QUEUED):
            return None
        if time.time() - run.last_sign_of_life() < self.stall:
            return None
        detail = f"no output for {describe_budget(self.stall / 60)}"
        return Ending(run, AgentState.STALLED, detail=detail, stop=True)


def cancelled(runs: Iterable[AgentRun]) -> Iterator[Ending]:
    """The launcher stops: nothing more starts, and what runs is stopped. An agent whose end
    is being committed has been ended already: its commit's return says it."""
    for run in runs:
        if run.settling is not None:
            continue
        if run.state in (AgentState.PENDING, AgentState.LIMITED):
            yield Ending(run, AgentState.CANCELLED, detail="launcher stopped")
        elif run.active:
            yield Ending(run, AgentState.CANCELLED, detail="launcher stopped", stop=True)


def spend_stopped(runs: Iterable[AgentRun], reason: str, hard: bool) -> Iterator[Ending]:
    """At the spend limit nothing more starts (``hard``: nothing runs on); no retry mends it.
    An agent whose end is being committed is left to its commit, as by a stop."""
    for run in runs:
        if run.settling is not None:
            continue
        if run.state in (AgentState.PENDING, AgentState.LIMITED):
            detail = f"not started: {reason}"
            yield Ending(run, AgentState.FAILED, detail=detail, unretryable=True)
        elif run.active and hard:
            detail = f"stopped: {reason}"
            yield Ending(run, AgentState.FAILED, detail=detail, stop=True, unretryable=True)


def ended_unsaid(
    info: PaneInfo | None, kind: str, session: str
) -> tuple[AgentState, int | None, str]:
    """How an agent whose wrapper wrote no status ended, as its placement saw it: its state,
    exit code and the words for it."""
    if info is not None and info.ended == "host-lost":  # its SSH host stopped answering
        return AgentState.FAILED, None, f"host-lost: its host {info.host} stopped answering"
    if info is not None and info.ended is not None:  # the scheduler ended it
        job = f"Slurm job {info.pid}" if info.pid else "its Slurm job"
        return (
            ended_state(info.ended),
            info.dead_status,
            f"{job} ended {info.ended} without a status file",
        )
    if info is None:
        return AgentState.SESSION_MISSING, None, f"{kind} session {session} disappeared"
    died = f"wrapper exited {info.dead_status} without writing a status file"
    return AgentState.FAILED, info.dead_status, died
