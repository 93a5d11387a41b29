"""One attempt's gates: the implementation gate (with the coordination log's open blockers,
the component levels it records and the worktree merge), each closure stage, the infra gate,
the proof artifacts and the component matrix; and what every view and agent learns of a
verdict (events, the log, the coordination board).

The component matrix is ``components.json`` in the state dir, the current level of each
component. The owners' ``[wave-component] ... state=met`` lines set it when the implementation
gate passes; after documentation closure (or, in a wave without that stage, at the last stage
judged) every component the wave promotes must stand at its target there, or that stage fails
with ``component-current-level-stale``.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...closure.gates import AgentResult, GateResult, judge_stage
from ...closure.implementation_gate import judge_implementation, judge_proof_artifacts
from ...closure.integration_summary import IntegrationSummary, build_summary, judge_summary
from ...closure.markers import Marker, parse_markers
from ...closure.signals import has_signals, judge_infra
from ...definitions.model import AgentDef, WaveDef
from ...state.events import utc_now
from ...state.fsutil import write_json_atomic
from ...state.layout import StateLayout
from ...state.logs import Logger, in_context
from ...state.status import last_try_output
from ...state.untrusted import read_object
from ..agent.run import AgentRun
from .context import Attempt, AttemptResult, WaveContext
from .summaries import gaps_of, write_summaries, write_summary
from .workspaces import Workspaces

log = Logger(__name__)
ENTRY_TEXT = 200  # a level, an agent id or a stamp read back from the matrix is cut to this
Judge = Callable[[Sequence[AgentResult]], GateResult]


class Judging:
    """One wave's gates, judged on its agents' latest runs (``latest``, shared with the
    runner), and what their verdicts leave for the views and the summaries."""

    def __init__(
        self,
        ctx: WaveContext,
        wave: WaveDef,
        latest: Mapping[str, AgentRun],
        attempt: Attempt,
        workspaces: Workspaces,
    ) -> None:
        self.ctx = ctx
        self.wave = wave
        self.latest = latest
        self.attempt = attempt
        self.workspaces = workspaces
        self.gates: dict[str, GateResult] = {}  # each stage's latest verdict, for the summaries
        self.failure: dict[str, str | None] | None = None  # the last failed gate, for views
        self._results: dict[str, tuple[AgentRun, AgentResult]] = {}  # parsed once it ended
        self._judged_at: dict[str, float] = {}  # when each stage's latest verdict was made
        self._writer: ThreadPoolExecutor | None = None  # summaries, written off the loop
        self._pending: list[Future[None]] = []
        self._ended: list[AgentRun] = []  # ended, their summary not yet written
        # agent id -> the run and the verdicts its last summary was written with
        self._written: dict[str, tuple[AgentRun, tuple[str, ...]]] = {}
        # Stage progress for the dashboard: pending, running, passed, failed.
        self.stages = {"implementation": "pending"} | {
            role: "pending" for role, _ in wave.closure_stages()
        }

    def implementation(self) -> GateResult:
        impl = self.wave.implementation_agents
        return self._judge("implementation", self._implementation_gate, impl)

    def closure_stage(self, role: str, members: tuple[AgentDef, ...]) -> GateResult:
        lane = self.ctx.lane
        judge = functools.partial(
            judge_stage, role, targets=self.wave.eval_targets, catalog=lane.benchmarks
        )
        if role == "integration":  # its verdict names the summary's open items
            return self._judge(role, functools.partial(self._integration_gate, judge), members)
        return self._judge(role, judge, members)

    def integration_summary(self) -> IntegrationSummary:
        """What the wave's ended agents (but the integration agents) said of proof gaps,
        deploy risks, changed interfaces and security findings."""
        ended = [
            a
            for a in self.wave.agents
            if a.role != "integration" and a.id in self.latest and self.latest[a.id].state.terminal
        ]
        return build_summary([self.result(a) for a in ended])

    def briefing_for(self, role: str) -> str:
        """What a closure stage's prompt adds to the wave so far: the integration summary."""
        return self.integration_summary().text() if role == "integration" else ""

    def _integration_gate(self, judge: Judge, results: Sequence[AgentResult]) -> GateResult:
        gate = judge(results)
        judge_summary(gate, self.integration_summary(), results)
        return gate

    def infra(self) -> AttemptResult:
        """The infra gate (closure.signals), in a wave where some agent printed an infra or
        deploy signal; a failure reruns the implementation agents it names."""
        ran = tuple(a for a in self.wave.agents if a.id in self.latest)
        if not has_signals([self.result(a) for a in ran]):
            return AttemptResult()
        gate = self._judge("infra", judge_infra, ran)
        named = [a for a in self.wave.implementation_agents if a.id in gate.agents]
        return AttemptResult() if gate.passed else AttemptResult(gate=gate, gate_agents=named)

    def result(self, agent: AgentDef) -> AgentResult:
        """What the gates (and the summaries) judge of its latest run: parsed once it ended."""
        run = self.latest[agent.id]
        if (cached := self._results.get(agent.id)) is not None and cached[0] is run:
            return cached[1]
        text = last_try_output(run.launch.paths) if run.launched_wall else ""
        root, marks = self.workspaces.root_for(agent), parse_markers(text)
        result = AgentResult(agent, run.state.outcome, run.code, marks, root, run.launched_wall)
        if run.state.terminal:
            self._results[agent.id] = (run, result)
        return result

    def summarize(self, run: AgentRun) -> None:
        """An agent that ended gets its summary at the loop's next quiet moment
        (``write_ended``): not in the middle of a burst of launches."""
        if run.launched_wall is not None and run.launch.agent.id in self.latest:
            self._ended.append(run)

    def write_ended(self, most: int | None = None) -> None:
        """The summaries of the agents that ended since (``most`` of them: a frame of the
        loop must not hold the next end's notice long): only the gates judged since each was
        launched (an earlier attempt's verdict is not this run's); a gate rewrites them."""
        cut = len(self._ended) if most is None else most
        ended, self._ended = self._ended[:cut], self._ended[cut:]
        for run in ended:
            since = run.launched_wall or 0.0
            fresh = {k: g for k, g in self.gates.items() if self._judged_at.get(k, 0.0) >= since}
            if run.stream is not None:  # its stream read to its end: off the loop
                self._write_later(run, fresh)
                continue
            write_summary(run, self.result, fresh)
            self._written[run.id] = (run, tuple(sorted(fresh)))

    def _write_later(self, run: AgentRun, gates: Mapping[str, GateResult]) -> None:
        """A summary written off the loop, which goes on launching and noticing the other
        agents (its log's tail is parsed, its file written): one writer, so a later summary
        of the same agent never lands before an earlier one."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wave-summary")
        # A copy as it ended: a rerun may renew the run itself meanwhile (its launch, state and
        # stream follower anew); the ended try's follower is then read by this thread alone.
        job = self._writer.submit(in_context(write_summary), copy.copy(run), self.result, gates)
        self._pending.append(job)
        self._written[run.id] = (run, tuple(sorted(gates)))

    def write_summaries(self) -> None:
        """Every ended agent's summary with the verdicts so far (after an attempt), but those
        already written with these very verdicts."""
        self._ended.clear()  # written below
        self._settle_summaries()
        now = tuple(sorted(self.gates))
        runs = [r for r in self.latest.values() if self._written.get(r.id) != (r, now)]
        write_summaries(runs, self.result, self.gates)

    def _settle_summaries(self) -> None:
        """Summaries still being written off the loop are done before a verdict rewrites them."""
        pending, self._pending = self._pending, []
        for future in pending:
            try:
                future.result()
            except Exception as exc:  # a summary costs only itself, never the wave
                log.warning("summary not written", error=str(exc))
        if self._writer is not None:
            self._writer.shutdown(wait=False)
            self._writer = None

    def gaps(self) -> list[dict[str, Any]]:
        """What the judged agents said they left undone, for the dashboard."""
        return [gap for _, result in self._results.values() for gap in gaps_of(result)]

    def _implementation_gate(self, results: Sequence[AgentResult]) -> GateResult:
        """Deliverables, exit contracts, then ``open-blocker`` for each open high/urgent
        blocker of the coordination log; then, with worktrees, the merge."""
        impl = self.wave.implementation_agents
        gate = judge_implementation(results)
        self.ctx.coordinator.add_blockers(gate, [a.id for a in impl])
        if gate.passed and self.wave.components:
            record_levels(self.ctx.layout, self.wave, results)
        if gate.passed:
            self.workspaces.integrate(gate, impl, self.latest)
        return gate

    def _judge(self, stage: str, judge: Judge, agents: tuple[AgentDef, ...]) -> GateResult:
        results = [self.result(a) for a in agents]
        gate = self.gates[stage] = judge(results)
        if stage == "integration":  # a barrier over the coordination log as well
            self.ctx.coordinator.hold_integration(gate)
        if self.wave.components and stage == matrix_stage(self.wave):
            check_matrix(self.ctx.layout, self.wave, gate)
        owners = [a for a in self.wave.agents if a.id in self.latest and a.proof_artifacts]
        judge_proof_artifacts(gate, [self.result(a) for a in owners])
        self.stages[stage] = "passed" if gate.passed else "failed"
        self._judged_at[stage] = time.time()
        if gate.passed:
            self._passed(stage, gate)
        else:
            self._failed(stage, gate, results, agents)
        judged = self._judged_runs(agents, gate)
        rewritten = {id(run) for run in judged}  # their summary as they ended is now this one
        self._ended = [run for run in self._ended if id(run) not in rewritten]
        for run in judged:  # what `wave summary` shows of it now
            self._write_later(run, dict(self.gates))
        return gate

    def _judged_runs(self, agents: tuple[AgentDef, ...], gate: GateResult) -> list[AgentRun]:
        """The ended runs a verdict concerns: its stage's agents and any other it names."""
        ids = {a.id for a in agents} | set(gate.agents)
        return [r for aid, r in self.latest.items() if aid in ids and r.state.terminal]

    def _passed(self, stage: str, gate: GateResult) -> None:
        """A gate-blocked item of an earlier attempt is resolved, and its failure is no
        longer the wave's: views and the wave's record stop showing it."""
        if self.failure is not None and self.failure.get("stage") == stage:
            self.failure = None
        self.ctx.coordinator.gate_passed(stage, self.attempt.number)
        warnings = gate.warnings or None
        self.ctx.events.emit("gate_passed", self.wave.number, stage=stage, warnings=warnings)
        log.info("gate passed", stage=stage)

    def _failed(
        self,
        stage: str,
        gate: GateResult,
        results: Sequence[AgentResult],
        agents: tuple[AgentDef, ...],
    ) -> None:
        """Every view and every agent of the wave learn what failed and what to do."""
        logs = {a.id: self.latest[a.id].launch.paths.output_log for a in agents}
        from ...closure.actions import failure_summary  # only once a gate failed

        failure = self.failure = failure_summary(gate, results, logs)
        self.ctx.coordinator.gate_failed(failure)
        self.ctx.events.emit(
            "gate_failed",
            self.wave.number,
            stage=stage,
            status=gate.code,
            detail=gate.detail,
            failures=[f.fields() for f in gate.failures],
            warnings=gate.warnings or None,
            **{k: failure.get(k) for k in ("action", "report", "log")},
        )
        log.warning("gate failed", stage=stage, status=gate.code, detail=gate.detail)


# -- the component matrix ------------------------------------------------------------------
def matrix_stage(wave: WaveDef) -> str:
    """The stage after which the matrix is checked: documentation closure, else the last."""
    roles = [role for role, _ in wave.closure_stages()]
    return "documentation" if "documentation" in roles else (roles or ["implementation"])[-1]


def read_matrix(layout: StateLayout) -> dict[str, dict[str, Any]]:
    """components.json, each entry checked (it is under .wave/: anyone may have written it)."""
    data = read_object(layout.component_matrix) or {}
    found = data.get("components")
    if not isinstance(found, dict):
        return {}
    return {
        str(k)[:ENTRY_TEXT]: {f: v[:ENTRY_TEXT] for f, v in entry.items() if isinstance(v, str)}
        for k, entry in found.items()
        if isinstance(entry, dict)
    }


def record_levels(layout: StateLayout, wave: WaveDef, results: Sequence[AgentResult]) -> None:
    """The owners' met levels into the matrix (once the implementation gate passed)."""
    matrix = read_matrix(layout)
    changed = False
    for result in results:
        for component, _target in result.agent.components:
            m = result.markers.components.get(component)
            if isinstance(m, Marker) and m.get("state") == "met":
                matrix[component] = {
                    "level": str(m.get("level")),
                    "wave": str(wave.number),
                    "agent": result.agent.id,
                    "at": utc_now(),
                }
                changed = True
    if changed:
        write_json_atomic(layout.component_matrix, {"components": matrix})


def check_matrix(layout: StateLayout, wave: WaveDef, gate: GateResult) -> None:
    """Every component the wave promotes stands at its target level in the matrix."""
    matrix = read_matrix(layout)
    for component, target in wave.components:
        entry = matrix.get(component, {})
        if entry.get("level") != target:
            now = entry.get("level") or "absent"
            said = (
                f"{component} is {now} in the component matrix ({layout.component_matrix}); "
                f"the wave promotes it to {target}"
            )
            gate.fail("component-current-level-stale", said, entry.get("agent"))
