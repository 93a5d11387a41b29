"""One launch of one lane: the lock, the placement, the governor and the notification sinks
held for its length, its waves run in order (each by a ``WaveRunner``), and the tear-down."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from ...agents.env_file import render_env_file
from ...coordination.follower import Coordinator
from ...definitions.model import LaneDef, WaveDef
from ...errors import ExecutorMissing, LockHeld, TmuxError
from ...governor.governor import Governor
from ...notify.sinks import Teller
from ...placement.base import Placement
from ...placement.choose import placement_for
from ...placement.reaper import Reaper, stop_agent_sessions
from ...placement.tmux import TmuxServer
from ...self_command import wave_argv
from ...state.events import EventLog, utc_now
from ...state.fsutil import StateWriteFailed, UnsafePath, write_atomic, write_json_atomic
from ...state.layout import AGENT_SESSION_RE, DASHBOARD_SESSION, StateLayout, socket_name
from ...state.ledger import Ledger
from ...state.lock import LaneLock
from ...state.logs import Logger, configure_logging
from ...state.registry import process_started, register_launcher, unregister_launcher
from ...state.run_state import RunState
from ..agent.confine import warnings as sandbox_warnings
from ..agent.plan import Planner
from ..agent.programs import required_programs
from ..wave.context import WaveContext, WaveOutcome
from ..wave.runner import WaveRunner
from .outcome import LaunchResult, lane_done, wave_ended
from .selection import LaunchOptions, completed_waves, prepare_lane, select_waves
from .streams import hang_up

if TYPE_CHECKING:
    from ...worktrees.host_git import HostGit

log = Logger(__name__)
NOTIFY_DRAIN_SECONDS = 5  # the longest a launcher waits, at its end, on notifications left
__all__ = ["LaunchOptions", "LaunchResult", "Launcher", "prepare_lane", "select_waves"]


class Launcher:
    """Runs the selected waves of one lane, holding the lane lock throughout."""

    def __init__(self, lane: LaneDef, opts: LaunchOptions) -> None:
        self.lane = lane
        self.opts = opts
        self.layout = StateLayout(lane.state_dir, lane.name, repo=lane.repo)
        self.stop = threading.Event()
        self.signum: int | None = None
        # Which launcher wrote a record: agents get it, and so do their status files, launch
        # records and summaries and the events, so two launchers' records are told apart.
        self.orchestrator_id = orchestrator_id(lane.name)
        self.planner = Planner(lane, self.layout, self.orchestrator_id)
        self.logging = False  # launcher.log set up: warnings go there too
        self.events = EventLog(self.layout.events)
        self.events.orchestrator_id = self.orchestrator_id
        self.tmux: TmuxServer | None = None  # the dashboard's, and the local agents'
        self.placement: Placement | None = None  # where agents run
        self.reaper: Reaper | None = None
        self.governor: Governor | None = None  # usage limits, caps and spend (governor/)
        self.ledger = Ledger.for_lane(lane.repo, lane.name)  # what this launcher saw happen
        self.first_wave: WaveDef | None = None
        self.coordinator: Coordinator | None = None
        self.teller: Teller | None = None  # the lane's notification sinks
        # Set by `wave launch` (whose process it is) before the first tmux server starts: the
        # agents' orphans then come to this process, not to a PID 1 that may never reap them.
        self.subreaper = False

    def warn(self, message: str) -> None:
        """A warning before logging is set up goes to stderr, after it to the log too."""
        if not self.logging:
            print(f"wave: warning: {message}", file=sys.stderr, flush=True)
        else:
            log.warning(message)

    def _host_side(self, waves: list[WaveDef]) -> tuple[HostGit, list[str], bool] | None:
        """What agents on SSH hosts need of this machine: its git, the programs to look for
        on each host (the lane's CLIs, fallbacks included), and whether it resumes."""
        if not self.lane.placement.remote:
            return None
        from ...worktrees.host_git import HostGit

        programs = {program for _, _, program in required_programs(waves) if "/" not in program}
        return HostGit(self.lane.repo), sorted(programs), self.opts.resume

    def check_executors(self, waves: list[WaveDef]) -> None:
        if self.lane.placement.remote:  # their CLIs are looked for on each host instead
            if any(a.sandbox_settings.mode == "auto" for w in waves for a in w.agents):
                self.warn("sandbox: auto runs agents on SSH hosts unsandboxed (bubblewrap is here)")
            return
        missing = self.planner.missing_at_start(waves)
        if missing:
            raise ExecutorMissing("cannot launch, executables missing:\n  " + "\n  ".join(missing))
        for warning in sandbox_warnings(waves):
            self.warn(warning)

    def run(self) -> LaunchResult:
        """Run the waves; a failed, blocked or interrupted wave is a result, not an exception.
        Signal handlers go in first, so a SIGTERM during start-up still cleans up."""
        lock = LaneLock(self.layout.lock, self.lane.name, state_dir=self.layout.root)
        run_state = RunState(self.layout.run_state, self.lane.name)
        done: set[int] = set()
        if self.opts.auto_next or self.opts.resume:  # only they skip completed waves
            seen = self.ledger.open(compact=False)  # read again under the lock, and compacted
            done = completed_waves(seen, run_state, self.warn)
        waves = select_waves(self.lane, self.opts, done)
        self.first_wave = waves[0] if waves else None
        with self._signals():
            lock.acquire()
            try:
                self.check_executors(waves)
                self.tmux = TmuxServer(socket_name(self.lane.name, self.lane.repo))
                self.placement = placement_for(
                    self.lane, self.layout, self.tmux, self.warn, self._host_side(waves)
                )
                self.placement.check()
                self.reaper = Reaper(self.placement, self.opts.keep_sessions)
                self.reaper.subreaper = self.subreaper
                self.ledger.open()
                self.governor = Governor(
                    self.lane.governance,
                    self.layout.governor,
                    resume=self.opts.resume,
                    ledger=self.ledger,
                )
                if not self.opts.resume:
                    self._refuse_orphans(lock)
            except BaseException:
                if self.placement is not None:  # an SSH host's follower and connection
                    self.placement.close()
                lock.release()
                raise
            return self._run_holding_lock(lock, waves, run_state)

    def _run_holding_lock(
        self, lock: LaneLock, waves: list[WaveDef], run_state: RunState
    ) -> LaunchResult:
        assert self.tmux is not None and self.placement is not None
        result = LaunchResult(self.lane.name)
        try:  # a state dir wave cannot write (full, read-only, a link) stops here, cleanly
            self.teller = self._begin(self.placement, waves)
        except BaseException:
            lock.release()
            raise
        registered = register_launcher(self._registry_entry(waves))
        self.events.best_effort = True
        if lock.took_over is not None:
            log.warning("took over a stale lock", previous_pid=lock.took_over.get("pid"))
        if run_state.problem:
            log.warning(run_state.problem)
        try:
            self._run_waves(waves, run_state, result, self.teller)
            return result
        except (StateWriteFailed, UnsafePath) as exc:
            # An essential record (run state, a status) cannot be kept: running on would
            # leave agents nobody accounts for, so they stop now, and the wave with them.
            stopped = stop_agent_sessions(self.placement)
            result.code, result.message = 1, f"{exc}; stopped {stopped} agent session(s)"
            with contextlib.suppress(OSError):
                self._record_running_as(run_state, "failed", str(exc))
            return result
        except Exception as exc:
            # A launcher that can still act does not leave its agents to nobody, nor its
            # wave recorded running with no launcher to run it.
            result.code = 1
            with contextlib.suppress(Exception):
                stop_agent_sessions(self.placement)
            with contextlib.suppress(Exception):
                reason = f"the launcher stopped on an error: {type(exc).__name__}: {exc}"
                self._record_running_as(run_state, "failed", reason[:500])
            raise
        except BaseException:
            result.code = result.code or 1
            raise
        finally:
            self.events.emit("launcher_stopped", code=result.code)
            if not self.opts.no_dashboard:
                self.tmux.kill_sessions([DASHBOARD_SESSION])
            if self.reaper is not None:
                self.reaper.drain()
            self.placement.close()  # SSH hosts: followers and connections end with the launch
            self.teller.drain(NOTIFY_DRAIN_SECONDS)  # what a person must hear: spend limit...
            # A server that lost its socket can be ended only by its pid: none is left behind.
            self.tmux.shutdown_if_unreachable()
            unregister_launcher(registered)
            lock.release()

    def _begin(self, placement: Placement, waves: list[WaveDef]) -> Teller:
        """launcher.log, the agents' environment file, the placement record and the start
        event; the lane's notification sinks, which a person is told through."""
        configure_logging(self.layout.launcher_log, quiet=self.opts.quiet)
        _bind_lane(self.lane.name)
        self.logging = True
        teller = Teller(self.lane.notify, bell=sys.stderr)
        write_atomic(self.layout.agent_env, render_env_file(os.environ), mode=0o600)
        record = {"kind": placement.kind, "tmux": self.lane.placement.tmux}
        write_json_atomic(self.layout.placement_record, record)
        self.events.emit("launcher_started", waves=[w.number for w in waves], pid=os.getpid())
        return teller

    def _run_waves(
        self, waves: list[WaveDef], run_state: RunState, result: LaunchResult, teller: Teller
    ) -> None:
        """The waves in order until one does not complete, a person told how each ended;
        ``result`` gets each outcome, then the launch's exit code."""
        if not self.opts.no_dashboard and waves and not self.stop.is_set():
            self._start_dashboard()
        for wave in waves:
            if self.stop.is_set():
                break
            outcome = self.run_wave(wave, run_state)
            result.outcomes.append(outcome)
            if (told := wave_ended(self.lane.name, outcome, self.lane.repo)) is not None:
                teller.tell(told)
            if outcome.state != "completed":
                break
        done = [o for o in result.outcomes if o.state == "completed"]
        if waves and len(done) == len(waves):
            teller.tell(lane_done(self.lane.name, len(done)))
        if self.stop.is_set() and not result.outcomes:
            self._stopped_before_start(run_state)
        result.conclude(self.signum, self.lane.repo)

    def _registry_entry(self, waves: list[WaveDef]) -> dict[str, Any]:
        """What `wave ps` shows of this launcher across repositories."""
        return {
            "pid": os.getpid(),
            "pid_started": process_started(os.getpid()),  # a reused pid is not this launcher
            "repo": str(self.lane.repo),
            "lane": self.lane.name,
            "state_dir": str(self.layout.root),
            "socket": socket_name(self.lane.name, self.lane.repo),
            "started_at": utc_now(),
            "waves": [w.number for w in waves],
        }

    def _record_running_as(self, run_state: RunState, state: str, reason: str) -> None:
        """A wave still recorded running, when no launcher will go on with it: recorded
        ``state`` (failed after a write failed, cancelled when stopped before it began)."""
        for number in run_state.waves_in("running"):
            run_state.transition(number, state, reason)

    def _stopped_before_start(self, run_state: RunState) -> None:
        """Stopped (`wave stop`, a signal) before its first wave began, for instance while
        resuming: this launcher holds the lane, so a wave recorded running and the agents
        still running are a dead launcher's; they end as `wave stop` would end them."""
        if self.placement is not None:
            stop_agent_sessions(self.placement)
        self._record_running_as(run_state, "cancelled", "stopped by a signal")

    def _start_dashboard(self) -> None:
        """The `dashboard` session shows the lane live for whoever attaches to it."""
        assert self.tmux is not None
        argv = wave_argv("dashboard", "--lane", self.lane.name, "--repo", str(self.lane.repo))
        env = {k: os.environ[k] for k in ("WAVE_STATE_DIR", "NO_COLOR", "PATH") if k in os.environ}
        self.tmux.kill_sessions([DASHBOARD_SESSION])
        try:
            self.tmux.start_session(
                DASHBOARD_SESSION, argv, str(self.lane.repo), env=env, keep_pane=False
            )
        except TmuxError as exc:
            log.warning("dashboard not started", error=str(exc))
            return
        log.info(
            f"dashboard: wave attach --lane {self.lane.name} --dashboard "
            f"(or: tmux -L {self.tmux.socket} attach -t ={DASHBOARD_SESSION})"
        )

    def _refuse_orphans(self, lock: LaneLock) -> None:
        """A dead launcher whose agents still run: starting over would run them twice."""
        assert self.placement is not None
        orphans = sorted(
            name
            for name, pane in self.placement.sessions().items()
            if AGENT_SESSION_RE.fullmatch(name) and not pane.dead and not self._finished(name)
        )
        if orphans:
            who = f"launcher pid {lock.took_over.get('pid')}" if lock.took_over else "a launcher"
            raise LockHeld(
                f"{who} died and left {len(orphans)} agent "
                f"session(s) running on lane {self.lane.name!r} ({', '.join(orphans[:5])}): "
                "adopt them with `wave launch --resume` or stop them with `wave stop`"
            )

    def _finished(self, session: str) -> bool:
        """An agent that wrote its status is done, even if its pane is still closing."""
        number, _, agent = session[1:].partition("-")
        return self.layout.agent(int(number), agent).status.exists()

    @contextmanager
    def _signals(self) -> Iterator[None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.signum = signum
            self.stop.set()

        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def hangup(signum: int, frame: FrameType | None) -> None:
            hang_up()

        # A closed terminal (SIGHUP) is no reason to stop agents that live in tmux: the
        # launcher goes on, its output in its log, until its waves end or `wave stop`.
        # Ignored by whoever started it (`nohup wave launch &`), SIGHUP stays ignored.
        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            old[signal.SIGHUP] = signal.signal(signal.SIGHUP, hangup)
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def _coordinator(self) -> Coordinator:
        """One per launcher: it follows the running wave's coordination log and questions."""
        if self.coordinator is None:
            assert self.teller is not None
            self.coordinator = Coordinator(
                self.layout,
                self.events,
                self.teller.tell,
                echo=lambda text: print(text, file=sys.stderr, flush=True),
            )
        return self.coordinator

    def run_wave(self, wave: WaveDef, run_state: RunState) -> WaveOutcome:
        assert self.placement is not None
        ctx = WaveContext(
            self.lane,
            self.layout,
            self.placement,
            self.events,
            self.stop,
            self.planner,
            self.opts.keep_sessions,
            self._coordinator(),
            resume=self.opts.resume and wave is self.first_wave,
            fresh=self.opts.fresh,
            keep_worktrees=self.opts.keep_worktrees,
            reaper=self.reaper,
            governor=self.governor,
            ledger=self.ledger,
        )
        if wave.depends_on_lanes:
            from .lane_deps import wait_for_lanes  # only for a wave that waits on lanes

            if not wait_for_lanes(wave, self.lane.repo, run_state, self.stop):
                return WaveOutcome(wave.number, "cancelled", 0)
        return WaveRunner(ctx, wave).run(run_state)


def _bind_lane(name: str) -> None:
    """Every later log line of this thread names the lane, as the wave's name its wave."""
    import structlog  # configure_logging has just loaded it

    structlog.contextvars.bind_contextvars(lane=name)


def orchestrator_id(lane: str) -> str:
    """This launcher among all that ran the lane: its lane, when it started (UTC) and its
    pid, e.g. ``main-20261205T191502Z-4242``."""
    return f"{lane}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"
