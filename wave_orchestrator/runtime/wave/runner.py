"""One wave from start to end: attempts, the implementation gate, the
closure sweep stage by stage, and what each retry relaunches."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence

from ...agents.prompts import closure_briefing
from ...closure.actions import failure_summary
from ...closure.gates import AgentResult, GateResult, judge_proof_artifacts, judge_stage
from ...closure.markers import parse_markers
from ...closure.signals import has_signals, judge_infra
from ...definitions.model import AgentDef, WaveDef
from ...errors import WaveError
from ...placement.base import PaneInfo
from ...placement.reaper import Reaper
from ...state.events import utc_stamp
from ...state.fsutil import read_jsonl
from ...state.lifecycle import AgentState
from ...state.logs import bind_wave
from ...state.run_state import RunState
from ...state.status import last_try_output
from ..agent.plan import AgentLaunch, next_executor, plan_agent
from ..agent.run import briefing_rows, stopped_by_person
from ..pool.loop import AgentPool, AgentRun, archive_attempt
from ..pool.watcher import AgentFolderWatcher
from .components import check_matrix, matrix_stage, record_levels
from .context import AttemptResult, WaveContext, WaveOutcome
from .desk_handover import open_desk, release_files, unenforced_checkouts
from .metrics_writer import MetricsWriter
from .resume import adopt_leftover, reused_run
from .retry import (
    RetryPlan,
    announce_retry,
    failure_reason,
    gate_lines,
    notes_for,
    plan_closure_retry,
    plan_failed_retry,
)
from .reuse import carry_over, earlier_attempt, fingerprint, rerun_notes, reusable_agents
from .snapshot import SnapshotWriter
from .summaries import gaps_of, write_summaries
from .workspaces import Workspaces


class WaveRunner:
    def __init__(self, ctx: WaveContext, wave: WaveDef) -> None:
        self.ctx = ctx
        self.wave = wave
        self.latest: dict[str, AgentRun] = {}  # filled in place, never replaced
        self._stopped_by_person = functools.partial(stopped_by_person, wave, self.latest)
        self.executors: dict[str, list[str]] = {a.id: [a.executor.id] for a in wave.agents}
        self.max_attempts = ctx.lane.defaults.max_retries_per_wave + 1
        self.snap = SnapshotWriter(ctx.layout.dashboard(wave.number), {
            "lane": ctx.lane.name, "wave": wave.number, "title": wave.title,
            "max_attempts": self.max_attempts})  # fmt: skip
        self.attempt = 0
        self.started = time.time()  # shared files changed since, unclaimed: named at its end
        self.attempt_reason = ""  # why the current attempt runs: one line for status views
        self.retry_notes: dict[str, str] = {}  # agent id -> its prompt's "why you run again"
        self.adopting = False
        self.retrying = False  # resuming with the dead launcher's retry plan (its targets)
        self.reused: list[str] = []  # implementation agents whose earlier success stands
        self.gate_failure: dict[str, str | None] | None = None  # the last failed gate, for views
        self.gates: dict[str, GateResult] = {}  # each stage's latest verdict, for the summaries
        self._results: dict[str, tuple[AgentRun, AgentResult]] = {}  # parsed once it ended
        self.spaces = Workspaces(ctx.lane, ctx.layout, wave, ctx.log, ctx.keep_worktrees)
        self.metrics = MetricsWriter(ctx.layout, ctx.lane.name, wave.number, ctx.log,
                                     ctx.governor.add_cost if ctx.governor else None)  # fmt: skip
        self.reaper = (
            ctx.reaper if ctx.reaper is not None else Reaper(ctx.placement, ctx.keep_sessions)
        )
        self.watcher = AgentFolderWatcher(ctx.layout.agents_dir(wave.number))  # its stages'
        self.sessions: set[str] | None = None  # the sessions that may exist, once listed
        shares = ctx.lane.shared_files or bool(wave.shared)
        self.desk = open_desk(ctx.layout.desk, ctx.lane.repo, wave.number) if shares else None
        # Stage progress for the dashboard: pending, running, passed, failed.
        self.stages = {"implementation": "pending"} | {
            role: "pending" for role, _ in wave.closure_stages()
        }

    def run(self, run_state: RunState) -> WaveOutcome:
        first, plan = self._start(run_state)
        self.ctx.record_wave(self.wave.number, "running")
        if self.ctx.governor is not None:  # the wave's caps and spend limit
            self.ctx.governor.begin_wave(self.wave)
        if self.adopting and first > 1:
            self._adopt_the_rest(plan)
        self.ctx.coordinator.begin(self.wave.number, {a.id: a.owns for a in self.wave.agents})
        try:
            self.spaces.begin(resume=self.adopting, reused=self.reused)
        except WaveError as exc:  # no worktree can be made: the wave fails, saying why
            run_state.transition(self.wave.number, "failed", str(exc))
            self.ctx.events.emit("wave_failed", self.wave.number, attempts=0, reason=str(exc))
            raise
        outcome = WaveOutcome(self.wave.number, "failed", 0)
        for attempt in range(first, self.max_attempts + 1):
            self.attempt = outcome.attempts = attempt
            if attempt > first:  # a resumed attempt is not a retry
                self.attempt_reason, self.retry_notes = plan.reason, plan.notes
                announce_retry(self.ctx.events, self.ctx.log, self.wave, attempt, plan)
            run_state.set_attempts(self.wave.number, attempt, self.attempt_reason, plan.saved())
            result = self._attempt(plan)
            write_summaries(self.latest.values(), self._result, self.gates)
            self.adopting = False
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

    def refresh(self, force: bool = False, status: str = "running") -> bool:
        if not force and self.snap.deferred():
            return True
        runs = [self.latest[a.id] for a in self.wave.agents if a.id in self.latest]
        placement = self.ctx.placement
        return self.snap.write(
            runs,
            self.ctx.events.recent,
            force=force,
            status=status,
            attempt=self.attempt,
            stages=[{"stage": k, "state": v} for k, v in self.stages.items()],
            waiting_on=[r.id for r in runs if r.active],
            launcher_pid=os.getpid(),
            attempt_reason=self.attempt_reason or None,
            gate_failure=self.gate_failure,
            coordination=self.ctx.coordinator.open_items(),
            gaps=[gap for _, result in self._results.values() for gap in gaps_of(result)],
            cluster_unreachable_since=utc_stamp(t) if (t := placement.unreachable_since) else None,
            governor=self.ctx.governor.view() if self.ctx.governor is not None else None,
        )

    # -- one attempt ------------------------------------------------------------------------
    def _attempt(self, plan: RetryPlan) -> AttemptResult:
        if plan.agents:
            self.stages["implementation"] = "running"
            self._run_agents(plan.agents)
            failed = self._failed(self.wave.implementation_agents)
            if failed or self.ctx.stop.is_set():
                return AttemptResult(failed=failed)
            impl = self.wave.implementation_agents
            gate = self._judge("implementation", self._implementation_gate, impl)
            if not gate.passed:
                named = [a for a in impl if a.id in gate.agents]
                return AttemptResult(gate=gate, gate_agents=named)
        result = self._closure(plan.first_stage)
        return result if not result.ok or self.ctx.stop.is_set() else self._infra()

    def _infra(self) -> AttemptResult:
        """The infra gate (closure.signals), in a wave where some agent printed an infra or
        deploy signal; a failure reruns the implementation agents it names."""
        ran = tuple(a for a in self.wave.agents if a.id in self.latest)
        if not has_signals([self._result(a) for a in ran]):
            return AttemptResult()
        gate = self._judge("infra", judge_infra, ran)
        named = [a for a in self.wave.implementation_agents if a.id in gate.agents]
        return AttemptResult() if gate.passed else AttemptResult(gate=gate, gate_agents=named)

    def _closure(self, first_stage: int) -> AttemptResult:
        """Closure stages one at a time; the first failing gate stops the sweep."""
        for index, (role, members) in enumerate(self.wave.closure_stages()):
            if index < first_stage:
                continue
            self.stages[role] = "running"
            rows = briefing_rows(self.wave, self.latest)
            self._run_agents(list(members), briefing=closure_briefing(self.wave, rows))
            if self.ctx.stop.is_set():
                return AttemptResult(failed=self._failed(members), failed_stage=index)
            judge = functools.partial(judge_stage, role, targets=self.wave.eval_targets,
                                      catalog=self.ctx.lane.benchmarks)  # fmt: skip
            gate = self._judge(role, judge, members)
            if not gate.passed:
                return AttemptResult(gate=gate, failed_stage=index)
        return AttemptResult()

    def _implementation_gate(self, results: Sequence[AgentResult]) -> GateResult:
        """Deliverables, exit contracts and open blockers; then, with worktrees, the merge."""
        impl = self.wave.implementation_agents
        gate = self.ctx.coordinator.judge_implementation(impl, results)
        if gate.passed and self.wave.components:
            record_levels(self.ctx.layout, self.wave, results)
        if gate.passed:
            self.spaces.integrate(gate, impl, self.latest)
        return gate

    def _judge(self, stage: str, judge: Callable[[Sequence[AgentResult]], GateResult],
               agents: tuple[AgentDef, ...]) -> GateResult:  # fmt: skip
        results = [self._result(a) for a in agents]
        gate = self.gates[stage] = judge(results)
        if stage == "integration":  # a barrier over the coordination log as well
            self.ctx.coordinator.hold_integration(gate)
        if self.wave.components and stage == matrix_stage(self.wave):
            check_matrix(self.ctx.layout, self.wave, gate)
        owners = [a for a in self.wave.agents if a.id in self.latest and a.proof_artifacts]
        judge_proof_artifacts(gate, [self._result(a) for a in owners])
        self.stages[stage] = "passed" if gate.passed else "failed"
        wave = self.wave.number
        if gate.passed:  # and a gate-blocked item of an earlier attempt is resolved
            self.ctx.coordinator.gate_passed(stage, self.attempt)
            self.ctx.events.emit("gate_passed", wave, stage=stage, warnings=gate.warnings or None)
            self.ctx.log.info("gate passed", stage=stage)
        else:  # every view and every agent of the wave learn what failed and what to do
            logs = {a.id: self.latest[a.id].launch.paths.output_log for a in agents}
            self.gate_failure = failure_summary(gate, results, logs)
            self.ctx.coordinator.gate_failed(self.gate_failure)
            self.ctx.events.emit("gate_failed", wave, stage=stage, status=gate.code,
                                 detail=gate.detail, failures=[f.fields() for f in gate.failures],
                                 warnings=gate.warnings or None, **{k: self.gate_failure.get(k)
                                 for k in ("action", "report", "log")})  # fmt: skip
            self.ctx.log.warning("gate failed", stage=stage, status=gate.code, detail=gate.detail)
        return gate

    def _result(self, agent: AgentDef) -> AgentResult:
        """What the gates (and the summaries) judge of its latest run: parsed once it ended."""
        run = self.latest[agent.id]
        if (cached := self._results.get(agent.id)) is not None and cached[0] is run:
            return cached[1]
        text = last_try_output(run.launch.paths) if run.launched_wall else ""
        root, marks = self.spaces.root_for(agent), parse_markers(text)
        result = AgentResult(agent, run.state.outcome, run.code, marks, root, run.launched_wall)
        if run.state.terminal:
            self._results[agent.id] = (run, result)
        return result

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
        next_attempt = self.attempt + 1
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
            lambda run: self._next_executor(run.launch.agent, self.executors[run.id]),
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
        judged = [self._result(a) for a in members] if result.gate is not None else []
        return plan_closure_retry(self.wave, result.failed_stage, result.gate, judged, self.latest,
                                  self.spaces.root_for(members[0]), self.attempt + 1,
                                  self._stopped_by_person)  # fmt: skip

    # -- launching --------------------------------------------------------------------------
    def _run_agents(self, agents: list[AgentDef], briefing: str = "") -> None:
        ctx, runs = self.ctx, []
        panes = ctx.placement.sessions() if self.adopting else {}
        if self.sessions is None:
            self.sessions = set(panes) if self.adopting else set(ctx.placement.sessions())
        for agent in agents:
            # A restored retry's target: only this attempt's result counts, not an earlier one.
            earlier = not (self.retrying and self.attempt > 1)
            if self.adopting and (adopted := self._adopt(agent, panes, earlier)) is not None:
                self.latest[agent.id] = adopted
                if not adopted.state.terminal:  # running, queued, or parked on a usage limit
                    runs.append(adopted)
                else:  # it finished while no launcher watched: commit, record, free its files
                    if problem := self.spaces.settle(adopted):
                        self.ctx.log.warning("agent's work not committed", agent=agent.id,
                                             error=problem)  # fmt: skip
                    recorded = {str(r.get("id")) for r in read_jsonl(self.ctx.layout.metrics)}
                    self._record_and_release(adopted, recorded)
                    if (pane := panes.get(adopted.launch.session)) is not None:  # and its leftovers
                        self.reaper.settle(adopted.launch.session, pane.pid, time.monotonic())
                continue
            reusing = agent.id in self.reused and agent.id not in self.latest
            if reusing and (reused := self._reuse(agent)) is not None:
                self.latest[agent.id] = reused
                continue
            previous = self.latest.get(agent.id)
            history = self.executors[agent.id]
            ran = previous is not None and previous.launched_wall is not None
            executor = self._next_executor(agent, history) if ran else history[-1]
            if executor != history[-1]:
                history.append(executor)
            launch = self._plan(agent, executor, briefing)
            if previous is not None:
                archive_attempt(launch, previous.launch.attempt)
            elif self.adopting and (
                launch.paths.output_log.exists() or launch.paths.status.exists()
            ):  # an unreadable status left behind must not pass for the relaunch's own
                archive_attempt(launch, self.attempt, ".interrupted")
            run = self.latest[agent.id] = AgentRun(launch, executors=list(history))
            runs.append(run)
        ctx.record_launches(self.wave.number, runs)
        succeeded = {a for a, r in self.latest.items() if r.state is AgentState.COMPLETED}
        pool = AgentPool(
            runs,
            ctx.placement,
            ctx.events,
            ctx.log,
            stagger_seconds=ctx.lane.defaults.launch_stagger_ms / 1000,
            stall_seconds=ctx.lane.defaults.stall_minutes * 60,
            succeeded_before=succeeded,
            keep_sessions=ctx.keep_sessions,
            max_running=ctx.lane.defaults.max_running,
            stop=ctx.stop,
            on_change=self.refresh,
            on_finish=self._on_finish,
            coordinator=ctx.coordinator,
            reaper=self.reaper,
            workspace=self.spaces,
            governor=ctx.governor,
            fallback=self._fallback,
            watcher=self.watcher,
            sessions=self.sessions,
        )
        pool.heartbeat.done_before = sum(1 for r in self.latest.values() if r.state.terminal)
        pool.run()

    def _adopt(
        self, agent: AgentDef, panes: dict[str, PaneInfo], earlier: bool = True
    ) -> AgentRun | None:
        """Carry on with what a dead launcher left of this agent (None: launch it);
        ``earlier``: a success of an earlier attempt stands (not for a retry's targets)."""
        c, history = self.ctx, self.executors[agent.id]
        return adopt_leftover(c.lane, c.layout, c.path_env, c.events, c.log, self.wave, agent,
                              self.attempt, history, panes, earlier, c.ledger)  # fmt: skip

    def _adopt_the_rest(self, plan: RetryPlan) -> None:
        """Resuming a retry: the agents its plan does not run again stand as they ended."""
        kept = [a for a in self.wave.implementation_agents if a not in plan.agents]
        kept += [a for _, group in self.wave.closure_stages()[: plan.first_stage] for a in group]
        for agent in kept:
            if (run := self._adopt(agent, {})) is not None and run.state.terminal:
                self.latest[agent.id] = run

    def _reuse(self, agent: AgentDef) -> AgentRun | None:
        """Its earlier run's success stands (runtime.reuse): told, and judged again."""
        ctx, attempt = self.ctx, earlier_attempt(self.ctx.layout.agent(self.wave.number, agent.id))
        fp, executor = fingerprint(agent, agent.executor.id, self.spaces.base), agent.executor.id
        launch = plan_agent(ctx.lane, ctx.layout, self.wave, agent, attempt, executor, ctx.path_env,
                            workdir=self.spaces.workdir_path(agent), fingerprint=fp)  # fmt: skip
        if self.spaces.needs_prepare(agent) and (problem := self.spaces.prepare(agent)):
            ctx.log.warning("agent not reused", agent=agent.id, error=problem)
            return None  # its worktree could not be made again from its branch: it runs
        if (run := reused_run(launch, attempt)) is not None:
            ctx.record_agents(self.wave.number, [run])  # still completed, with its fingerprint
            self.metrics.reused(run)
            ctx.events.emit("agent_reused", self.wave.number, agent.id, attempt=attempt)
            ctx.log.info("agent reused", agent=agent.id)
        return run

    def _plan(self, agent: AgentDef, executor: str, briefing: str) -> AgentLaunch:
        ctx = self.ctx
        return plan_agent(ctx.lane, ctx.layout, self.wave, agent, self.attempt, executor,
                          ctx.path_env, briefing, self.retry_notes.get(agent.id, ""),
                          workdir=self.spaces.workdir_path(agent),
                          fingerprint=fingerprint(agent, executor, self.spaces.base))  # fmt: skip

    def _fallback(self, run: AgentRun) -> AgentLaunch | None:
        """A usage limit with no reset to wait for: the agent's next executor, now, in this
        attempt (None: none is left; it ends as usage-limit)."""
        agent, history = run.launch.agent, self.executors[run.id]
        executor = self._next_executor(agent, history)
        if executor == run.launch.executor:
            return None
        history.append(executor)
        return self._plan(agent, executor, run.launch.briefing)

    def _spend_stop(self) -> str:
        """The spend limit's words when it is what stopped the wave (its blocked reason)."""
        gov = self.ctx.governor
        return (gov.spend_stop() or "") if gov is not None else ""

    def _next_executor(self, agent: AgentDef, history: list[str]) -> str:
        return next_executor(agent, history, self.ctx.path_env, self.ctx.lane.repo)

    def _on_finish(self, run: AgentRun) -> None:
        """What a finished agent leaves behind: a metrics record, and the files it held.
        Neither may stop the launcher: a failure here is logged and the wave goes on."""
        try:
            self._record_and_release(run)
        except (OSError, WaveError) as exc:
            self.ctx.log.warning("after-finish bookkeeping failed", agent=run.id, error=str(exc))

    def _record_and_release(self, run: AgentRun, recorded: set[str] | None = None) -> None:
        """``recorded``: ids already in metrics.jsonl (a resumed launcher must not double up)."""
        self.ctx.record_ends(self.wave.number, [run])
        record_id = self.metrics.record_id(run)
        if run.launched_wall is not None and (recorded is None or record_id not in recorded):
            try:
                self.metrics.record(run, record_id)
            except OSError as exc:  # a full disk loses one record, not the wave's agents
                self.ctx.log.warning("metrics record not written", error=str(exc))
        if self.desk is not None:
            release_files(run, self.desk, self.ctx.events, self.wave.number, self.ctx.coordinator)

    # -- start and end ----------------------------------------------------------------------
    def _start(self, run_state: RunState) -> tuple[int, RetryPlan]:
        """Begin (or, resuming, rejoin) the wave: its first attempt's number, and what that
        attempt runs (resuming: what the dead launcher's plan said, a retry's targets only)."""
        wave, ctx = self.wave, self.ctx
        everyone = RetryPlan(list(wave.implementation_agents), 0)
        bind_wave(wave.number)
        previous, wave_dir = run_state.wave(wave.number), ctx.layout.wave_dir(wave.number)
        if ctx.resume and wave_dir.exists() and previous.get("state") != "completed":
            self.adopting = True
            first = min(max(1, int(previous.get("attempts") or 1)), self.max_attempts)
            run_state.transition(wave.number, "running", "resumed", attempts=first)
            ctx.events.emit("wave_resumed", wave.number, attempt=first)
            ctx.log.info("wave resumed", attempt=first)
            restored = RetryPlan.restored(previous.get("plan"), wave)
            self.retrying = restored is not None
            return first, restored or everyone
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        reusable = [] if ctx.fresh else reusable_agents(ctx, wave, previous, self.spaces)
        self.retry_notes = rerun_notes(previous)  # `wave rerun`: why it runs again, for its prompt
        if (suffix := ctx.layout.set_aside_wave(wave.number, stamp)) is not None:
            ctx.coordinator.archive(wave.number, suffix)  # the previous run's files are kept
            self.reused = carry_over(ctx.layout, wave.number, suffix, reusable)
        run_state.transition(wave.number, "running", attempts=0)
        if self.desk is not None:
            self.desk.reset()
        ctx.events.emit("wave_started", wave.number, title=wave.title, agents=len(wave.agents))
        ctx.log.info("wave started", title=wave.title, agents=len(wave.agents))  # fmt: skip
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
        self.reaper.drain()
        for path, owners in unenforced_checkouts(self.desk, wave, ctx.lane.repo, self.started):
            ctx.log.warning(f"file checkout was not enforced for {path}", owners=", ".join(owners))
            ctx.events.emit("desk_unenforced", wave.number, path=path, owners=owners)
        self.metrics.wait()
        if outcome.state != "cancelled":  # the gates' verdict on every run this wave recorded
            self.metrics.verdict(outcome.state == "completed", self.latest.values())
        failed_gate = self.gate_failure if outcome.state == "failed" else None
        if failed_gate is not None:  # the report outlives its worktree
            failed_gate["report"] = self.spaces.keep_report(failed_gate.get("report"))
        gate = outcome.gate if outcome.state == "failed" else None  # what a new run redoes:
        rejected = gate.agents if gate and gate.stage == "implementation" else []
        run_state.transition(wave.number, outcome.state, reason, gate_failure=failed_gate,
                             rejected_agents=rejected)  # fmt: skip
        ctx.record_wave(wave.number, outcome.state, self.latest, rejected)
        ctx.events.emit(
            f"wave_{outcome.state}", wave.number, attempts=outcome.attempts, reason=reason or None
        )
        ctx.log.info(f"wave {outcome.state}", attempts=outcome.attempts)
        self.refresh(force=True, status=outcome.state)
        # Worktrees go once no agent runs in them; a stopped wave keeps them for --resume.
        merged = self.spaces.finish(outcome.state == "completed", outcome.state != "cancelled")
        if merged:
            ctx.events.emit("wave_merge", wave.number, message=merged)
            ctx.log.info(merged)
