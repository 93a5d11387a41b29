"""Where the launcher's main loop lives: waves in order, attempts, closure stages, run state."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import structlog

from .agent_pool import AgentPool, AgentRun, archive_attempt
from .definitions import AgentDef, LaneDef, WaveDef
from .errors import ExecutorMissing, LockHeld, UsageError
from .events import EventLog
from .executors import build_command
from .lane_loader import load_lane
from .layout import AGENT_SESSION_RE, StateLayout, socket_name
from .lifecycle import AgentState
from .lock import LaneLock
from .logs import configure_logging, get_logger
from .planner import agent_path_env, missing_programs, plan_agent, required_programs
from .run_state import RunState
from .snapshot import SnapshotWriter
from .tmux import TmuxServer


@dataclass(frozen=True)
class LaunchOptions:
    lane: str
    start_wave: int | None = None
    end_wave: int | None = None
    auto_next: bool = False
    dry_run: bool = False
    keep_sessions: bool = False
    no_dashboard: bool = False
    executor: str | None = None
    quiet: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)


def apply_overrides(lane: LaneDef, overrides: dict[str, Any]) -> LaneDef:
    """Command-line flags override lane.yaml defaults (SPEC 2)."""
    rate = {
        k.removeprefix("rate_limit_"): v
        for k, v in overrides.items()
        if k.startswith("rate_limit_") and v is not None
    }
    plain = {
        k: v for k, v in overrides.items() if not k.startswith("rate_limit_") and v is not None
    }
    policy = dataclasses.replace(lane.defaults.rate_limit, **rate)
    if policy.max_delay_seconds < policy.base_delay_seconds:
        raise UsageError("--rate-limit-max-delay-seconds must be >= the base delay")
    defaults = dataclasses.replace(lane.defaults, rate_limit=policy, **plain)
    return dataclasses.replace(lane, defaults=defaults)


def select_waves(lane: LaneDef, opts: LaunchOptions, run_state: RunState | None) -> list[WaveDef]:
    waves = [
        w
        for w in lane.waves
        if (opts.start_wave is None or w.number >= opts.start_wave)
        and (opts.end_wave is None or w.number <= opts.end_wave)
    ]
    if opts.auto_next and run_state is not None:
        waves = [w for w in waves if run_state.state_of(w.number) != "completed"]
    if not waves and not opts.auto_next:
        raise UsageError(
            f"no waves of lane {lane.name!r} in the range {opts.start_wave}..{opts.end_wave}"
        )
    return waves


def prepare_lane(repo: Path, opts: LaunchOptions) -> LaneDef:
    lane = load_lane(repo, opts.lane, default_executor=opts.executor)
    return apply_overrides(lane, opts.overrides)


@dataclass
class WaveOutcome:
    wave: int
    state: str
    attempts: int
    failures: list[AgentRun] = field(default_factory=list)
    blocked: bool = False  # failed with nothing safe left to retry (exit 4)


@dataclass
class LaunchResult:
    lane: str
    outcomes: list[WaveOutcome] = field(default_factory=list)
    code: int = 0
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "code": self.code,
            "waves": [
                {
                    "wave": o.wave,
                    "state": o.state,
                    "attempts": o.attempts,
                    "blocked": o.blocked,
                    "failures": [
                        {
                            "agent": r.id,
                            "status": r.state.outcome,
                            "code": r.code,
                            "detail": r.detail or None,
                            "log": str(r.launch.paths.output_log),
                        }
                        for r in o.failures
                    ]
                    if o.state != "completed"
                    else [],
                }
                for o in self.outcomes
            ],
        }


@dataclass(frozen=True)
class RetryPlan:
    """What one wave attempt launches: implementation agents, or closure stages from one on."""

    agents: list[AgentDef]
    first_stage: int


class Launcher:
    """Runs the selected waves of one lane, holding the lane lock throughout."""

    def __init__(self, lane: LaneDef, opts: LaunchOptions) -> None:
        self.lane = lane
        self.opts = opts
        self.layout = StateLayout(lane.state_dir, lane.name)
        self.stop = threading.Event()
        self.signum: int | None = None
        self.path_env = agent_path_env()
        self.log: Any = None
        self.events = EventLog(self.layout.events)
        self.tmux: TmuxServer | None = None

    def check_executors(self, waves: list[WaveDef]) -> None:
        missing = missing_programs(required_programs(self.lane, waves), self.path_env)
        if missing:
            raise ExecutorMissing(
                "cannot launch, executables missing:\n  " + "\n  ".join(dict.fromkeys(missing))
            )

    def run(self) -> LaunchResult:
        """Run the waves; a failed, blocked or interrupted wave is a result, not an exception."""
        lock = LaneLock(self.layout.lock, self.lane.name)
        run_state = RunState(self.layout.run_state, self.lane.name)
        waves = select_waves(self.lane, self.opts, run_state)
        lock.acquire()
        try:
            self.check_executors(waves)
            self.tmux = TmuxServer(socket_name(self.lane.name, self.lane.repo))
            self._refuse_orphans(lock)
        except BaseException:
            lock.release()
            raise
        configure_logging(self.layout.launcher_log, quiet=self.opts.quiet)
        self.log = get_logger(lane=self.lane.name)
        if lock.took_over is not None:
            self.log.warning("took over a stale lock", previous_pid=lock.took_over.get("pid"))
        result = LaunchResult(self.lane.name)
        self.events.emit("launcher_started", waves=[w.number for w in waves], pid=os.getpid())
        try:
            with self._signals():
                for wave in waves:
                    result.outcomes.append(self.run_wave(wave, run_state))
                    if result.outcomes[-1].state != "completed":
                        break
            self._conclude(result)
            return result
        except BaseException:
            result.code = result.code or 1
            raise
        finally:
            self.events.emit("launcher_stopped", code=result.code)
            lock.release()

    def _refuse_orphans(self, lock: LaneLock) -> None:
        """A dead launcher whose agents still run: starting over would run them twice."""
        assert self.tmux is not None
        if lock.took_over is None:
            return
        orphans = sorted(name for name in self.tmux.panes() if AGENT_SESSION_RE.fullmatch(name))
        if orphans:
            raise LockHeld(
                f"launcher pid {lock.took_over.get('pid')} died and left {len(orphans)} agent "
                f"session(s) running on lane {self.lane.name!r} ({', '.join(orphans[:5])}): "
                "adopt them with `wave launch --resume` or stop them with `wave stop` "
                f"(until those land: tmux -L {self.tmux.socket} kill-server)"
            )

    def _conclude(self, result: LaunchResult) -> None:
        last = result.outcomes[-1] if result.outcomes else None
        if self.signum is not None:
            result.code = 128 + self.signum
            result.message = f"interrupted by signal {self.signum}: wave recorded cancelled"
        elif last is not None and last.state == "failed":
            result.code = 4 if last.blocked else 1
            result.message = self.failure_text(last)

    @contextmanager
    def _signals(self) -> Iterator[None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.signum = signum
            self.stop.set()

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def failure_text(self, outcome: WaveOutcome) -> str:
        blocked = " (blocked: nothing safe to retry)" if outcome.blocked else ""
        lines = [f"wave {outcome.wave} failed after {outcome.attempts} attempt(s){blocked}:"]
        for run in outcome.failures:
            log = run.launch.paths.output_log
            try:
                shown = log.relative_to(self.lane.repo)
            except ValueError:
                shown = log
            detail = f" ({run.detail})" if run.detail else ""
            code = (
                f", exit {run.code}"
                if run.code not in (None, 0) and run.state is AgentState.FAILED
                else ""
            )
            lines.append(f"  - {run.id}: {run.state.outcome}{detail}{code}, log: {shown}")
        return "\n".join(lines)

    # -- one wave ---------------------------------------------------------------------------
    def run_wave(self, wave: WaveDef, run_state: RunState) -> WaveOutcome:
        self._start_wave(wave, run_state)
        max_attempts = self.lane.defaults.max_retries_per_wave + 1
        snap = SnapshotWriter(
            self.layout.dashboard(wave.number),
            {
                "lane": self.lane.name,
                "wave": wave.number,
                "title": wave.title,
                "max_attempts": max_attempts,
            },
        )
        latest: dict[str, AgentRun] = {}
        executors: dict[str, list[str]] = {a.id: [a.executor.id] for a in wave.agents}
        plan = RetryPlan(list(wave.implementation_agents), 0)
        outcome = WaveOutcome(wave.number, "failed", 0)
        for attempt in range(1, max_attempts + 1):
            outcome.attempts = attempt
            run_state.set_attempts(wave.number, attempt)
            if attempt > 1:
                self._announce_retry(wave, attempt, plan)

            def refresh(force: bool = False, attempt: int = attempt) -> None:
                runs = [latest[a.id] for a in wave.agents if a.id in latest]
                snap.write(runs, self.events.recent, force=force, status="running", attempt=attempt)

            self._run_agents(wave, plan.agents, attempt, executors, latest, refresh)
            failed = self._failed(wave.implementation_agents, latest)
            failed_stage = None
            if not failed and not self.stop.is_set():
                failed_stage, failed = self._closure(
                    wave, plan.first_stage, attempt, executors, latest, refresh
                )
            refresh(force=True)
            if self.stop.is_set() or not failed:
                outcome.state = "cancelled" if self.stop.is_set() else "completed"
                break
            outcome.failures = failed
            if attempt == max_attempts:
                break
            next_plan = self._plan_retry(failed, failed_stage, plan, executors)
            if next_plan is None:
                outcome.blocked = True
                break
            plan = next_plan
        self._end_wave(wave, outcome, run_state, snap, latest)
        return outcome

    def _start_wave(self, wave: WaveDef, run_state: RunState) -> None:
        wave_dir = self.layout.wave_dir(wave.number)
        if wave_dir.exists():  # keep the previous run's files, out of this run's way
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            wave_dir.rename(wave_dir.with_name(f"{wave_dir.name}.{stamp}"))
        structlog.contextvars.bind_contextvars(wave=wave.number)
        run_state.transition(wave.number, "running", attempts=0)
        self.events.emit("wave_started", wave.number, title=wave.title, agents=len(wave.agents))
        self.log.info("wave started", wave=wave.number, title=wave.title, agents=len(wave.agents))

    def _announce_retry(self, wave: WaveDef, attempt: int, plan: RetryPlan) -> None:
        stage = wave.closure_stages()[plan.first_stage][0] if plan.agents == [] else None
        agents = [a.id for a in plan.agents]
        self.events.emit("wave_retry", wave.number, attempt=attempt, agents=agents, stage=stage)
        self.log.info("wave retry", attempt=attempt, agents=agents, stage=stage)

    def _plan_retry(
        self,
        failed: list[AgentRun],
        failed_stage: int | None,
        plan: RetryPlan,
        executors: dict[str, list[str]],
    ) -> RetryPlan | None:
        """What the next attempt relaunches (SPEC 3.5), or None when nothing is safe to retry:
        an agent out of usage quota with no untried fallback would only fail again."""
        if failed_stage is not None:
            return RetryPlan([], failed_stage)
        retry = []
        for run in failed:
            agent = run.launch.agent
            same = self._choose_executor(agent, executors[agent.id]) == run.launch.executor
            if not (run.state is AgentState.USAGE_LIMIT and same):
                retry.append(agent)
        return RetryPlan(retry, plan.first_stage) if retry else None

    def _failed(self, agents: tuple[AgentDef, ...], latest: dict[str, AgentRun]) -> list[AgentRun]:
        return [
            latest[a.id]
            for a in agents
            if a.id in latest and latest[a.id].state is not AgentState.COMPLETED
        ]

    def _closure(
        self,
        wave: WaveDef,
        first_stage: int,
        attempt: int,
        executors: dict[str, list[str]],
        latest: dict[str, AgentRun],
        refresh: Any,
    ) -> tuple[int | None, list[AgentRun]]:
        """Closure roles one stage at a time (SPEC 3.4); until gates exist a stage passes when
        its agents exit 0. Returns (index of the failing stage, its failed runs)."""
        for index, (_role, members) in enumerate(wave.closure_stages()):
            if index < first_stage:
                continue
            self._run_agents(wave, list(members), attempt, executors, latest, refresh)
            failed = self._failed(members, latest)
            if failed or self.stop.is_set():
                return index, failed
        return None, []

    def _run_agents(
        self,
        wave: WaveDef,
        agents: list[AgentDef],
        attempt: int,
        executors: dict[str, list[str]],
        latest: dict[str, AgentRun],
        refresh: Any,
    ) -> None:
        assert self.tmux is not None
        runs = []
        for agent in agents:
            previous = latest.get(agent.id)
            history = executors[agent.id]
            executor = history[-1] if previous is None else self._choose_executor(agent, history)
            if executor != history[-1]:
                history.append(executor)
            launch = plan_agent(
                self.lane, self.layout, wave, agent, attempt, executor, self.path_env
            )
            if previous is not None:
                archive_attempt(launch, previous.launch.attempt)
            run = AgentRun(launch, executors=list(executors[agent.id]))
            latest[agent.id] = run
            runs.append(run)
        succeeded = {a for a, r in latest.items() if r.state is AgentState.COMPLETED}
        pool = AgentPool(
            runs,
            self.tmux,
            self.events,
            self.log,
            stagger_seconds=self.lane.defaults.launch_stagger_ms / 1000,
            stall_seconds=self.lane.defaults.stall_minutes * 60,
            succeeded_before=succeeded,
            keep_sessions=self.opts.keep_sessions,
            stop=self.stop,
            on_change=refresh,
        )
        pool.run()

    def _choose_executor(self, agent: AgentDef, history: list[str]) -> str:
        """After a failure: the next fallback not yet tried and installed, else the same one."""
        for candidate in agent.executor.fallbacks:
            if candidate in history:
                continue
            program = build_command(agent.executor, candidate, agent.id).program
            if shutil.which(program, path=self.path_env):
                return candidate
        return history[-1]

    def _end_wave(
        self,
        wave: WaveDef,
        outcome: WaveOutcome,
        run_state: RunState,
        snap: SnapshotWriter,
        latest: dict[str, AgentRun],
    ) -> None:
        reason = (
            ""
            if outcome.state == "completed"
            else "; ".join(
                f"{r.id}: {r.state.outcome}" + (f" ({r.detail})" if r.detail else "")
                for r in outcome.failures
            )
        )
        if outcome.state == "cancelled":
            reason = f"stopped by signal {self.signum}"
        run_state.transition(wave.number, outcome.state, reason)
        self.events.emit(
            f"wave_{outcome.state}", wave.number, attempts=outcome.attempts, reason=reason or None
        )
        self.log.info(f"wave {outcome.state}", wave=wave.number, attempts=outcome.attempts)
        snap.write(
            [latest[a.id] for a in wave.agents if a.id in latest],
            self.events.recent,
            force=True,
            status=outcome.state,
            attempt=outcome.attempts,
        )
        if not self.opts.keep_sessions and self.tmux is not None:
            self.tmux.kill_sessions(r.launch.session for r in latest.values())
