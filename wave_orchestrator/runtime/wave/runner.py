"""One wave from start to end: start it (or rejoin what a dead launcher left), run it attempt
by attempt (the implementation agents, then the closure sweep stage by stage, each judged)
until it passes, nothing is left to retry or it is stopped, and end it.

The runs a stage hands to the pool are built in stage.py, the gates judged in judging.py,
what a retry reruns planned in retry.py."""

from __future__ import annotations

import functools
import os
import time

from ...agents.prompts import closure_briefing
from ...definitions.model import AgentDef, WaveDef
from ...errors import WaveError
from ...state.events import utc_stamp
from ...state.lifecycle import AgentState
from ...state.logs import Logger, bind_wave
from ...state.run_state import RunState
from ..agent.run import AgentRun, briefing_rows, stopped_by_person
from .context import Attempt, AttemptResult, WaveContext, WaveOutcome
from .desk_handover import open_desk, unenforced_checkouts
from .judging import Judging
from .metrics_writer import MetricsWriter
from .retry import (
    RetryPlan,
    announce_retry,
    failure_reason,
    gate_lines,
    notes_for,
    plan_closure_retry,
    plan_failed_retry,
)
from .reuse import carry_over, rerun_conversations, rerun_notes, reusable_agents
from .snapshot import SnapshotWriter
from .stage import StageLauncher
from .workspaces import Workspaces

log = Logger(__name__)
SUMMARIES_PER_FRAME = 4  # agents' summaries written with one dashboard frame, at most


class WaveRunner:
    """Runs one wave for its launcher: ``run`` returns how it ended (completed, failed,
    blocked or cancelled) after recording it in the run state, the ledger and events."""

    def __init__(self, ctx: WaveContext, wave: WaveDef) -> None:
        self.ctx = ctx
        self.wave = wave
        self.latest: dict[str, AgentRun] = {}  # filled in place, never replaced
        self._listed: set[tuple[object, ...]] = set()  # the runs `wave launch --json` lists
        self._stopped_by_person = functools.partial(stopped_by_person, wave, self.latest)
        self.max_attempts = ctx.lane.defaults.max_retries_per_wave + 1
        self.dashboard = SnapshotWriter(
            ctx.layout.dashboard(wave.number),
            {
                "lane": ctx.lane.name,
                "wave": wave.number,
                "title": wave.title,
                "max_attempts": self.max_attempts,
            },
        )
        self.attempt = Attempt()
        self.started = time.time()  # shared files changed since, unclaimed: named at its end
        self.workspaces = Workspaces(
            ctx.lane, ctx.layout, wave, ctx.keep_worktrees, ctx.placement.bring_back
        )
        add_cost = ctx.governor.add_cost if ctx.governor else None
        self.metrics = MetricsWriter(ctx.layout, ctx.lane.name, wave.number, add_cost)
        shares = ctx.lane.shared_files or bool(wave.shared)
        self.desk = open_desk(ctx.layout.desk, ctx.lane.repo, wave.number) if shares else None
        self.judging = Judging(ctx, wave, self.latest, self.attempt, self.workspaces)
        self.stage = StageLauncher(
            ctx,
            wave,
            self.latest,
            self.attempt,
            self.workspaces,
            self.metrics,
            self.desk,
            self.refresh,
            self.judging.summarize,
        )

    def run(self, run_state: RunState) -> WaveOutcome:
        try:
            return self._run(run_state)
        finally:
            self.stage.watcher.stop()

    def _run(self, run_state: RunState) -> WaveOutcome:
        first, plan = self._start(run_state)
        self.ctx.record_wave(self.wave.number, "running")
        if self.ctx.governor is not None:  # the wave's caps and spend limit
            self.ctx.governor.begin_wave(self.wave)
        if self.attempt.adopting and first > 1:
            self.stage.adopt_the_rest(plan)
        self.ctx.coordinator.begin(self.wave.number, {a.id: a.owns for a in self.wave.agents})
        try:
            self.workspaces.begin(resume=self.attempt.adopting, reused=self.stage.reused)
        except WaveError as exc:  # no worktree can be made: the wave fails, saying why
            run_state.transition(self.wave.number, "failed", str(exc))
            self.ctx.events.emit("wave_failed", self.wave.number, attempts=0, reason=str(exc))
            raise
        outcome = WaveOutcome(self.wave.number, "failed", 0)
        for attempt in range(first, self.max_attempts + 1):
            self.attempt.number = outcome.attempts = attempt
            if attempt > first:  # a resumed attempt is not a retry
                self.attempt.reason, self.attempt.notes = plan.reason, dict(plan.notes)
                announce_retry(self.ctx.events, self.wave, attempt, plan)
            run_state.set_attempts(self.wave.number, attempt, self.attempt.reason, plan.saved())
            result = self._attempt(plan)
            self._note_ended(outcome)
            self.judging.write_summaries()
            self.attempt.adopting = False
            self.refresh(force=True)
            if self.ctx.stop.is_set() or result.ok:
                outcome.state = "cancelled" if self.ctx.stop.is_set() else "completed"
                break
            outcome.failures, outcome.gate = result.failed, result.gate
            if attempt == self.max_attempts:  # no retry left, yet a spend limit still blocks
                if any(r.unretryable for r in self.latest.values()) and self._spend_stop():
                    outcome.blocked, outcome.note = True, self._spend_stop()
                break
            minutes = self.ctx.lane.feedback_timeout_minutes  # a pending question holds it
            outcome.note = self.ctx.coordinator.hold_retry(self.ctx.stop, minutes)
            if outcome.note:
                outcome.blocked = True
                break
            next_plan = self._plan_retry(result, plan)
            if next_plan is None:
                outcome.blocked, outcome.note = True, self._spend_stop()
                break
            plan = next_plan
        self._end(outcome, run_state)
        return outcome

    def _note_ended(self, outcome: WaveOutcome) -> None:
        """Adds the runs that ended in this attempt to the outcome's list, in the order they
        ended (a reused agent once, as reused)."""
        listed = self._listed
        ended = [r for r in self.latest.values() if r.state.terminal and _key(r) not in listed]
        ended.sort(key=lambda run: run.finished_wall or 0.0)
        listed.update(_key(run) for run in ended)
        outcome.runs.extend(run.ended_row() for run in ended)

    def refresh(self, force: bool = False, status: str = "running") -> bool:
        """dashboard.json anew (unless deferred); True when its update was deferred."""
        if not force and self.dashboard.deferred():
            return True
        # a quiet moment: the summaries of a few agents that ended (the rest at the next ones)
        self.judging.write_ended(most=SUMMARIES_PER_FRAME)
        runs = [self.latest[a.id] for a in self.wave.agents if a.id in self.latest]
        unreachable = self.ctx.placement.unreachable_since
        governor = self.ctx.governor
        return self.dashboard.write(
            runs,
            self.ctx.events.recent,
            force=force,
            status=status,
            attempt=self.attempt.number,
            stages=[{"stage": k, "state": v} for k, v in self.judging.stages.items()],
            waiting_on=[r.id for r in runs if r.active],
            launcher_pid=os.getpid(),
            attempt_reason=self.attempt.reason or None,
            gate_failure=self.judging.failure,
            coordination=self.ctx.coordinator.open_items(),
            gaps=self.judging.gaps(),
            cluster_unreachable_since=utc_stamp(unreachable) if unreachable else None,
            governor=governor.view() if governor is not None else None,
        )

    # -- one attempt ------------------------------------------------------------------------
    def _attempt(self, plan: RetryPlan) -> AttemptResult:
        if plan.agents:
            self.judging.stages["implementation"] = "running"
            self.stage.run(plan.agents)
            failed = self._failed(self.wave.implementation_agents)
            if failed or self.ctx.stop.is_set():
                return AttemptResult(failed=failed)
            gate = self.judging.implementation()
            if not gate.passed:
                named = [a for a in self.wave.implementation_agents if a.id in gate.agents]
                return AttemptResult(gate=gate, gate_agents=named)
        result = self._closure(plan.first_stage)
        return result if not result.ok or self.ctx.stop.is_set() else self.judging.infra()

    def _closure(self, first_stage: int) -> AttemptResult:
        """Closure stages one at a time; the first failing gate stops the sweep."""
        for index, (role, members) in enumerate(self.wave.closure_stages()):
            if index < first_stage:
                continue
            self.judging.stages[role] = "running"
            rows = briefing_rows(self.wave, self.latest)
            briefing = closure_briefing(self.wave, rows, self.judging.briefing_for(role))
            self.stage.run(list(members), briefing=briefing)
            if self.ctx.stop.is_set():
                return AttemptResult(failed=self._failed(members), failed_stage=index)
            gate = self.judging.closure_stage(role, members)
            if not gate.passed:
                return AttemptResult(gate=gate, failed_stage=index)
        return AttemptResult()

    def _failed(self, agents: tuple[AgentDef, ...]) -> list[AgentRun]:
        runs = (self.latest[a.id] for a in agents if a.id in self.latest)
        return [r for r in runs if r.state is not AgentState.COMPLETED]

    def _plan_retry(self, result: AttemptResult, plan: RetryPlan) -> RetryPlan | None:
        """What the next attempt relaunches, and why, or None when nothing is safe
        to retry: an agent out of usage quota with no untried fallback would only fail again,
        and a job the scheduler refused (or could not be told about) would be refused again."""
        if any(r.unretryable for r in self.latest.values()):
            return None
        if result.failed_stage is not None:
            return self._plan_closure_retry(result)
        next_attempt = self.attempt.number + 1
        if result.gate is not None and result.gate_agents:
            ids = ", ".join(a.id for a in result.gate_agents)
            text = gate_lines(result.gate, self.wave, result.gate_agents)
            choice = f"rerun {ids}, whose work the implementation gate rejected"
            return RetryPlan(
                result.gate_agents,
                plan.first_stage,
                f"implementation gate failed ({result.gate.code}): rerunning {ids}",
                notes_for(result.gate_agents, self.latest, next_attempt, text, choice),
            )
        return plan_failed_retry(
            result.failed,
            self.stage.next_executor_of,
            self._stopped_by_person,
            self.latest,
            next_attempt,
            plan.first_stage,
        )

    def _plan_closure_retry(self, result: AttemptResult) -> RetryPlan | None:
        assert result.failed_stage is not None
        members = self.wave.closure_stages()[result.failed_stage][1]
        if any(self._stopped_by_person(a) for a in members):
            return None  # a person stopped it: retrying would undo their decision
        judged = [self.judging.result(a) for a in members] if result.gate is not None else []
        return plan_closure_retry(
            self.wave,
            result.failed_stage,
            result.gate,
            judged,
            self.latest,
            self.workspaces.root_for(members[0]),
            self.attempt.number + 1,
            self._stopped_by_person,
        )

    def _spend_stop(self) -> str:
        """The spend limit's words when it is what stopped the wave (its blocked reason)."""
        gov = self.ctx.governor
        return (gov.spend_stop() or "") if gov is not None else ""

    # -- start and end ----------------------------------------------------------------------
    def _start(self, run_state: RunState) -> tuple[int, RetryPlan]:
        """Begin (or, resuming, rejoin) the wave: its first attempt's number, and what that
        attempt runs (resuming: what the dead launcher's plan said, a retry's targets only)."""
        wave, ctx = self.wave, self.ctx
        everyone = RetryPlan(list(wave.implementation_agents), 0)
        bind_wave(wave.number)
        previous, wave_dir = run_state.wave(wave.number), ctx.layout.wave_dir(wave.number)
        if ctx.resume and wave_dir.exists() and previous.get("state") != "completed":
            self.attempt.adopting = True
            first = min(max(1, int(previous.get("attempts") or 1)), self.max_attempts)
            run_state.transition(wave.number, "running", "resumed", attempts=first)
            ctx.events.emit("wave_resumed", wave.number, attempt=first)
            log.info("wave resumed", attempt=first)
            restored = RetryPlan.restored(previous.get("plan"), wave)
            self.attempt.retrying = restored is not None
            return first, restored or everyone
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        reusable = [] if ctx.fresh else reusable_agents(ctx, wave, previous, self.workspaces)
        # `wave rerun`: why it runs again, for its prompt
        self.attempt.notes = rerun_notes(previous)
        if (suffix := ctx.layout.set_aside_wave(wave.number, stamp)) is not None:
            ctx.coordinator.archive(wave.number, suffix)  # the previous run's files are kept
            earlier = ctx.layout.earlier_run(wave.number, suffix).dir / "isolation.json"
            self.workspaces.earlier_record = earlier
            self.stage.reused = carry_over(ctx.layout, wave.number, suffix, reusable)
            self.attempt.carried = rerun_conversations(
                previous, ctx.layout.earlier_run(wave.number, suffix)
            )
        run_state.transition(wave.number, "running", attempts=0)
        if self.desk is not None:
            self.desk.reset()
        ctx.events.emit("wave_started", wave.number, title=wave.title, agents=len(wave.agents))
        log.info("wave started", title=wave.title, agents=len(wave.agents))
        return 1, everyone

    def _end(self, outcome: WaveOutcome, run_state: RunState) -> None:
        ctx, wave = self.ctx, self.wave
        reason = (
            "" if outcome.state == "completed" else failure_reason(outcome.failures, outcome.gate)
        )
        if outcome.state == "cancelled":
            reason = "stopped by a signal"
        if outcome.note:
            reason = f"{outcome.note}; {reason}" if reason else outcome.note
        # Nothing the wave started outlives it: sessions, then what their agents left behind.
        if not ctx.keep_sessions:
            ctx.placement.remove(r.launch.session for r in self.latest.values())
        self.stage.reaper.drain()
        for path, owners in unenforced_checkouts(self.desk, wave, ctx.lane.repo, self.started):
            log.warning(f"file checkout was not enforced for {path}", owners=", ".join(owners))
            ctx.events.emit("desk_unenforced", wave.number, path=path, owners=owners)
        self.metrics.wait()
        if outcome.state != "cancelled":  # the gates' verdict on every run this wave recorded
            self.metrics.verdict(outcome.state == "completed", self.latest.values())
        # The gate that failed the last attempt, if one did: not one an earlier attempt failed
        if outcome.gate is None:
            self.judging.failure = None  # nor in the last picture of the wave
        failed_gate = self.judging.failure if outcome.state == "failed" else None
        if failed_gate is not None:  # the report outlives its worktree
            failed_gate["report"] = self.workspaces.keep_report(failed_gate.get("report"))
        gate = outcome.gate if outcome.state == "failed" else None  # what a new run redoes:
        rejected = gate.agents if gate and gate.stage == "implementation" else []
        run_state.transition(
            wave.number, outcome.state, reason, gate_failure=failed_gate, rejected_agents=rejected
        )
        ctx.record_wave(wave.number, outcome.state, self.latest, rejected)
        ctx.events.emit(
            f"wave_{outcome.state}", wave.number, attempts=outcome.attempts, reason=reason or None
        )
        log.info(f"wave {outcome.state}", attempts=outcome.attempts)
        self.refresh(force=True, status=outcome.state)
        # Worktrees go once no agent runs in them; a stopped wave keeps them for --resume.
        merged = self.workspaces.finish(outcome.state == "completed", outcome.state != "cancelled")
        if merged:
            ctx.events.emit("wave_merge", wave.number, message=merged)
            log.info(merged)


def _key(run: AgentRun) -> tuple[object, ...]:
    """One run among a wave's: a rerun in the same attempt is launched anew, and a reused
    run keeps the attempt number of the run it stands for."""
    return (run.id, run.launch.attempt, run.launched_wall, run.reused)
