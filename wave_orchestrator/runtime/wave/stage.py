"""The runs a stage hands to the pool: each agent's new run, or the one a dead launcher left
(adopted), or its earlier success (reused); a usage limit's fallback to the next executor;
and what a finished agent leaves behind (its metrics record, the files it held)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...definitions.model import AgentDef, WaveDef
from ...errors import WaveError
from ...placement.base import PaneInfo
from ...placement.reaper import Reaper
from ...state.jsonl import read_jsonl
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ..agent.continuation import RERUN_CONTINUE, Carried, continue_or_restart
from ..agent.plan import AgentLaunch
from ..agent.run import AgentRun, archive_attempt
from ..pool.context import PoolContext, PoolHooks, PoolLimits, WaveShared
from ..pool.loop import AgentPool
from ..pool.watcher import AgentFolderWatcher
from .context import Attempt, WaveContext
from .desk_handover import release_files
from .metrics_writer import MetricsWriter
from .resume import adopt_leftover, interrupted_conversation, reused_run
from .retry import RetryPlan
from .reuse import earlier_attempt, fingerprint
from .workspaces import Workspaces

if TYPE_CHECKING:
    from ...desk.claims import Desk

log = Logger(__name__)

INTERRUPTED = "the launcher stopped while it ran, and its session with it"


class StageLauncher:
    """Starts one wave's stages in the pool and keeps, per agent, the executors it ran on."""

    def __init__(
        self,
        ctx: WaveContext,
        wave: WaveDef,
        latest: dict[str, AgentRun],
        attempt: Attempt,
        workspaces: Workspaces,
        metrics: MetricsWriter,
        desk: Desk | None,
        on_change: Callable[[], bool],
        on_ended: Callable[[AgentRun], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.wave = wave
        self.latest = latest  # each agent's latest run, shared with the runner
        self.attempt = attempt
        self.workspaces = workspaces
        self.metrics = metrics
        self.desk = desk
        self.on_change = on_change  # the dashboard redrawn
        self.on_ended = on_ended  # its summary written as it ends
        self.executors: dict[str, list[str]] = {a.id: [a.executor.id] for a in wave.agents}
        self.reused: list[str] = []  # implementation agents whose earlier success stands
        self.reaper = (
            ctx.reaper if ctx.reaper is not None else Reaper(ctx.placement, ctx.keep_sessions)
        )
        self.watcher = AgentFolderWatcher(ctx.layout.agents_dir(wave.number))  # its stages'
        # What the pools of its stages hand on to each other: the sessions that may exist are
        # listed once (adopting: with the panes the dead launcher left).
        self.shared = WaveShared(self.reaper, self.watcher)
        self.pool_context = pool_context(ctx, workspaces, self.shared)
        self.hooks = PoolHooks(self.on_change, self._on_finish, self._fallback)

    def run(self, agents: list[AgentDef], briefing: str = "") -> None:
        """Run ``agents`` (one stage) in the pool until each has ended."""
        ctx, runs = self.ctx, []
        panes = ctx.placement.sessions() if self.attempt.adopting else {}
        if self.shared.sessions is None:
            adopting = self.attempt.adopting
            self.shared.sessions = set(panes) if adopting else set(ctx.placement.sessions())
        # A restored retry's target: only this attempt's result counts, not an earlier one.
        earlier = not (self.attempt.retrying and self.attempt.number > 1)
        for agent in agents:
            adopted = self._adopt(agent, panes, earlier) if self.attempt.adopting else None
            if adopted is not None:
                self.latest[agent.id] = adopted
                if not adopted.state.terminal:  # running, queued, or parked on a usage limit
                    runs.append(adopted)
                else:  # it finished while no launcher watched
                    self._settle_adopted(adopted, panes)
                continue
            reusing = agent.id in self.reused and agent.id not in self.latest
            if reusing and (reused := self._reuse(agent)) is not None:
                self.latest[agent.id] = reused
                continue
            runs.append(self._new_run(agent, briefing))
        ctx.record_launches(self.wave.number, runs)
        self._pool(runs).run()

    def _pool(self, runs: list[AgentRun]) -> AgentPool:
        succeeded = {a for a, r in self.latest.items() if r.state is AgentState.COMPLETED}
        pool = AgentPool(runs, self.pool_context, self.hooks, succeeded_before=succeeded)
        pool.heartbeat.done_before = sum(1 for r in self.latest.values() if r.state.terminal)
        return pool

    def _new_run(self, agent: AgentDef, briefing: str) -> AgentRun:
        """A new run of ``agent``: on its next executor if it ran before in this wave."""
        previous = self.latest.get(agent.id)
        history = self.executors[agent.id]
        ran = previous is not None and previous.launched_wall is not None
        executor = self._next_executor(agent, history) if ran else history[-1]
        if executor != history[-1]:
            history.append(executor)
        launch = self._plan(agent, executor, briefing)
        carried = self.attempt.carried.pop(agent.id, None)  # `wave rerun --continue`
        if previous is not None:
            archive_attempt(launch, previous.launch.attempt)
            carried = carried or self._on_timeout(previous)
        elif self.attempt.adopting and (
            launch.paths.output_log.exists() or launch.paths.status.exists()
        ):  # an unreadable status left behind must not pass for the relaunch's own
            left = interrupted_conversation(launch)  # its session died with the launcher
            archive_attempt(launch, self.attempt.number, ".interrupted")
            carried = Carried(launch.executor, left, INTERRUPTED) if left else None
        why = None
        if carried is not None:
            launch, why = self._carry_on(launch, carried)
            log.info("agent continues", agent=agent.id, afresh=why, conversation=carried[1])
        run = self.latest[agent.id] = AgentRun(launch, executors=list(history))
        run.fresh_because = why
        return run

    def _on_timeout(self, previous: AgentRun) -> Carried | None:
        """After a budget kill or a stall, with ``on_timeout: continue``: its conversation."""
        ended = previous.state in (AgentState.TIMEOUT, AgentState.STALLED)
        if not ended or self.ctx.lane.defaults.on_timeout != "continue":
            return None
        reason = f"{previous.state.value}: {previous.detail}" if previous.detail else "timeout"
        return Carried(previous.launch.executor, previous.conversation, reason)

    def _carry_on(self, launch: AgentLaunch, carried: Carried) -> tuple[AgentLaunch, str | None]:
        """``launch`` continuing ``carried``, or afresh, and why."""
        if carried.executor != launch.executor:
            return (
                launch,
                f"it runs on {launch.executor} now, its conversation was {carried.executor}'s",
            )
        if carried.reason == RERUN_CONTINUE and self.workspaces.enabled:
            return launch, "its worktree is made anew for this run of the wave"
        return continue_or_restart(launch, carried.conversation, carried.reason, carried.message)

    def _settle_adopted(self, adopted: AgentRun, panes: dict[str, PaneInfo]) -> None:
        """An adopted agent that finished while no launcher watched: its work committed, its
        end recorded, its files freed and its leftover processes ended."""
        if problem := self.workspaces.settle(adopted):
            log.warning("agent's work not committed", agent=adopted.id, error=problem)
        recorded = {str(r.get("id")) for r in read_jsonl(self.ctx.layout.metrics)}
        self._record_and_release(adopted, recorded)
        if (pane := panes.get(adopted.launch.session)) is not None:
            self.reaper.settle(adopted.launch.session, pane.pid, time.monotonic())

    def _adopt(
        self, agent: AgentDef, panes: dict[str, PaneInfo], earlier: bool = True
    ) -> AgentRun | None:
        """Carry on with what a dead launcher left of this agent (None: launch it);
        ``earlier``: a success of an earlier attempt stands (not for a retry's targets)."""
        ctx, history = self.ctx, self.executors[agent.id]
        return adopt_leftover(
            ctx.planner,
            ctx.events,
            self.wave,
            agent,
            self.attempt.number,
            history,
            panes,
            earlier,
            ctx.ledger,
        )

    def adopt_the_rest(self, plan: RetryPlan) -> None:
        """Resuming a retry: the agents its plan does not run again stand as they ended."""
        kept = [a for a in self.wave.implementation_agents if a not in plan.agents]
        kept += [a for _, group in self.wave.closure_stages()[: plan.first_stage] for a in group]
        for agent in kept:
            if (run := self._adopt(agent, {})) is not None and run.state.terminal:
                self.latest[agent.id] = run

    def _reuse(self, agent: AgentDef) -> AgentRun | None:
        """Its earlier run's success stands (reuse.py): told, and judged again."""
        ctx, attempt = self.ctx, earlier_attempt(self.ctx.layout.agent(self.wave.number, agent.id))
        executor = agent.executor.id
        launch = ctx.planner.plan(
            self.wave,
            agent,
            attempt,
            executor,
            worktree=self.workspaces.worktree(agent),
            fingerprint=fingerprint(agent, executor, self.workspaces.base),
        )
        if self.workspaces.needs_prepare(agent) and (problem := self.workspaces.prepare(agent)):
            log.warning("agent not reused", agent=agent.id, error=problem)
            return None  # its worktree could not be made again from its branch: it runs
        if (run := reused_run(launch, attempt)) is not None:
            ctx.record_agents(self.wave.number, [run])  # still completed, with its fingerprint
            self.metrics.reused(run)
            ctx.events.emit("agent_reused", self.wave.number, agent.id, attempt=attempt)
            log.info("agent reused", agent=agent.id)
        return run

    def _plan(self, agent: AgentDef, executor: str, briefing: str) -> AgentLaunch:
        ctx = self.ctx
        return ctx.planner.plan(
            self.wave,
            agent,
            self.attempt.number,
            executor,
            briefing=briefing,
            retry_context=self.attempt.notes.get(agent.id, ""),
            worktree=self.workspaces.worktree(agent),
            fingerprint=fingerprint(agent, executor, self.workspaces.base),
        )

    def _fallback(self, run: AgentRun) -> AgentLaunch | None:
        """A usage limit with no reset to wait for: the agent's next executor, now, in this
        attempt (None: none is left; it ends as usage-limit)."""
        agent, history = run.launch.agent, self.executors[run.id]
        executor = self._next_executor(agent, history)
        if executor == run.launch.executor:
            return None
        history.append(executor)
        return self._plan(agent, executor, run.launch.briefing)

    def next_executor_of(self, run: AgentRun) -> str:
        """What the agent of ``run`` would run on next (its fallback, else the same)."""
        return self._next_executor(run.launch.agent, self.executors[run.id])

    def _next_executor(self, agent: AgentDef, history: list[str]) -> str:
        return self.ctx.planner.next_executor(agent, history)

    def _on_finish(self, run: AgentRun) -> None:
        """What a finished agent leaves behind: a metrics record, the files it held, its
        summary. None may stop the launcher: a failure here is logged and the wave goes on."""
        try:
            self._record_and_release(run)
            if self.on_ended is not None:
                self.on_ended(run)
        except (OSError, WaveError) as exc:
            log.warning("after-finish bookkeeping failed", agent=run.id, error=str(exc))

    def _record_and_release(self, run: AgentRun, recorded: set[str] | None = None) -> None:
        """``recorded``: ids already in metrics.jsonl (a resumed launcher must not double up)."""
        self.ctx.record_ends(self.wave.number, [run])
        record_id = self.metrics.record_id(run)
        if run.launched_wall is not None and (recorded is None or record_id not in recorded):
            try:
                self.metrics.record(run, record_id)
            except OSError as exc:  # a full disk loses one record, not the wave's agents
                log.warning("metrics record not written", error=str(exc))
        if self.desk is not None:
            release_files(run, self.desk, self.ctx.events, self.wave.number, self.ctx.coordinator)


def pool_context(ctx: WaveContext, workspaces: Workspaces, shared: WaveShared) -> PoolContext:
    """What every pool of the wave works with: the lane's pacing, the coordination layer, the
    governor, the workspaces and what its stages hand on to each other."""
    defaults = ctx.lane.defaults
    limits = PoolLimits(
        stagger_seconds=defaults.launch_stagger_ms / 1000,
        stall_seconds=defaults.stall_minutes * 60,
        max_running=defaults.max_running,
    )
    return PoolContext(
        ctx.placement,
        ctx.events,
        limits,
        stop=ctx.stop,
        messages=ctx.coordinator,
        governor=ctx.governor,
        workspace=workspaces,
        shared=shared,
    )
