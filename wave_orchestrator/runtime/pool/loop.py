"""Where a set of agents is launched and waited on: the loop, its timers, launching and
finishing. What it notices of running agents comes from liveness.py as endings it applies;
file events, with status files also polled, wake it; an ending agent's process group gets
SIGTERM, then SIGKILL (placement.reaper).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from functools import partial

from ...errors import PlacementRefused
from ...placement.reaper import Reaper
from ...state.fsutil import ensure_dir
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusUnreadable, read_status
from ..agent.run import AgentRun, archive_attempt, own_status, wrote_this_attempt
from .bursts import BURST_DONE, Bursts
from .context import PoolContext, PoolHooks
from .continuing import note_conversation, refused
from .git_jobs import GIT_DONE, GitJobs
from .governor_side import GovernorSide
from .heartbeat import Heartbeat
from .launching import at_capacity, dependency_state, prepare_and_start, waits_on_first_opencode
from .liveness import Ending, Liveness, Started, cancelled, spend_stopped
from .messages import follow_questions
from .rate_limits import follow_backoff, follow_cli_retries, judge_usage_limit
from .reruns import take as take_reruns
from .stall_steps import StallSteps
from .streams import follow_streams
from .tally import Tally
from .watcher import AgentFolderWatcher

log = Logger(__name__)

POLL_SECONDS = 1.0  # status files are also polled, so a missed file event is never fatal
LIVENESS_SECONDS = 1.5  # one `list-panes` call covers every session
SNAPSHOT_INTERVAL = 0.3  # a deferred dashboard update is written this soon after
REFRESH_SECONDS = 2.0  # how often on_change runs with nothing changed (dashboard last lines)
LAUNCH_BATCH = 4  # ready agents started by one placement call (a burst) when there is no stagger
FIRST_START_SECONDS = 15.0  # the longest other opencode agents wait on the first one's start
HOLD_CHECK_SECONDS = 0.25  # how often a held launch looks again
MESSAGES_SECONDS = 0.5  # how often the coordination log and questions to a person are looked at


class AgentPool:
    """Runs ``runs`` until every one is finished; returns nothing, the runs carry the results."""

    def __init__(
        self,
        runs: list[AgentRun],
        ctx: PoolContext,
        hooks: PoolHooks | None = None,
        succeeded_before: Iterable[str] = (),
    ) -> None:
        """``succeeded_before``: agents that succeeded in an earlier pool of the wave."""
        self.runs = runs
        self.by_id = {r.id: r for r in runs}
        self.hooks = hooks or PoolHooks()
        self.placement = placement = ctx.placement
        self.events, self.limits, self.stop = ctx.events, ctx.limits, ctx.stop
        self.succeeded_before = set(succeeded_before)
        self.refresh_due: float | None = None  # a deferred dashboard update to write
        self.messages, shared = ctx.messages, ctx.shared
        self.reaper = shared.reaper if shared.reaper is not None else Reaper(placement, False)
        # Sessions that may exist (an earlier attempt's, a --keep-sessions run's, a stage
        # before's): one call for all, or the wave's set, which each launch adds to
        sessions = shared.sessions
        self.stale_sessions = set(placement.sessions()) if sessions is None else sessions
        self.watcher = shared.watcher  # the wave's, shared by its stages; else one of its own
        self.next_launch = 0.0
        self.first_opencode: AgentRun | None = None
        self.heartbeat = Heartbeat()
        self.workspace = ctx.workspace  # isolation: worktree: its git runs on self.git's thread
        self.tally = Tally(runs)  # what each turn asks of the runs, kept as they move
        self.git = GitJobs(self.tally.index)
        self.bursts: Bursts[AgentRun] = Bursts(placement)  # started off the loop (tmux)
        self.governor_side = GovernorSide(ctx.governor, ctx.events, self.messages.tell_person)
        self.liveness = Liveness(placement, ctx.limits.stall_seconds)
        self.stall_steps = StallSteps(ctx.events, self.reaper, self.messages.tell_person)

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> None:
        if not self.runs:
            return
        for run in self.runs:  # in a folder made before the watch, not after it
            ensure_dir(run.launch.paths.dir)
        watcher = self.watcher or AgentFolderWatcher(self.runs[0].launch.paths.dir.parent)
        watching = False  # begun after the first launch: watchdog loads while agents start
        self.git.wake = lambda agent_id: watcher.events.put((agent_id, GIT_DONE))
        self.bursts.wake = lambda: watcher.events.put(("", BURST_DONE))
        next_poll = next_refresh = next_messages = time.monotonic()
        # agents launched now have just started: their tmux panes are first looked at later
        next_live = next_poll + (0 if any(r.active for r in self.runs) else LIVENESS_SECONDS)
        try:
            while self._going():
                if self.stop.is_set():
                    self._apply_all(cancelled(self.runs))
                self._collect_git()
                self._collect_burst()
                self._launch_ready()
                watching = watching or self._watch(watcher)
                for agent_id, name in watcher.drain():
                    self._on_file(agent_id, name)
                now = time.monotonic()
                if now >= next_poll:
                    self._poll()
                    next_poll = now + POLL_SECONDS
                if now >= next_live:
                    self._check_liveness()
                    next_live = now + LIVENESS_SECONDS
                if now >= next_messages:  # a wait can end by time or a dead asker, not only news
                    waiting = self.messages.waiting_human()
                    if self.messages.tick() | follow_questions(self.runs, waiting, now):
                        self._changed()
                    next_messages = now + MESSAGES_SECONDS
                self._check_deadlines(now)
                self.reaper.reap(now)
                due = self.refresh_due is not None and now >= self.refresh_due
                if now >= next_refresh or due:
                    self._changed()
                    next_refresh = now + REFRESH_SECONDS
                if not self._going():  # the last ones ended this turn: no wait for a timer
                    break
                wake = min([next_poll, next_live, next_messages, *self._timers()])
                got = watcher.get(min(1.0, wake - time.monotonic()))
                if got is not None:
                    self._on_file(*got)
        finally:
            self.bursts.close()
            if watcher is not self.watcher:
                watcher.stop()
            self.git.close()
            self.messages.flush()  # the board and inboxes as the agents left them
        log.debug("pool finished")

    def _watch(self, watcher: AgentFolderWatcher) -> bool:
        """File events from now on; a status written before the watch began is read now."""
        if not watcher.start():
            log.warning("file events unavailable (inotify limit?): polling only")
        for run in self.runs:
            if run.active:
                self._check_status(run)
        return True

    def _going(self) -> bool:
        """An agent has not ended, one is being stopped, or a burst's pids are yet to come."""
        return self.tally.unfinished > 0 or bool(self.reaper.stopping) or self.bursts.busy

    def _changed(self) -> None:
        """Tell the dashboard; if it deferred the update, write it once the interval passed."""
        deferred = self.hooks.on_change()
        self.heartbeat.beat(self.runs, self.runs[0].launch.wave.number)
        self.refresh_due = time.monotonic() + SNAPSHOT_INTERVAL if deferred else None

    def _timers(self) -> list[float]:
        """When the loop must look again (a turn per event: no walk over every agent)."""
        earliest = self.tally.earliest_budget()
        self.liveness.note_budget(earliest)
        timers = self.reaper.deadlines() + ([] if earliest is None else [earliest])
        if self.refresh_due is not None:
            timers.append(self.refresh_due)
        if self._full(self.tally.active) or self.bursts.busy:  # a burst wakes the loop
            return timers
        waiting = held = False  # something can launch (or fail on a dependency), or all wait
        for run in (r for r in self.tally.pending() if self._deps_state(r) != (False, None)):
            waiting, held = True, bool(self._held(run) or run.hold)
            if not held:
                break
        if waiting:
            timers.append(time.monotonic() + HOLD_CHECK_SECONDS if held else self.next_launch)
        return timers

    # -- launching --------------------------------------------------------------------------
    def _deps_state(self, run: AgentRun) -> tuple[bool, str | None]:
        return dependency_state(run, self.by_id, self.succeeded_before)

    def _launch_ready(self) -> None:
        """Launch the ready agents: one per turn with a stagger, else up to LAUNCH_BATCH in one
        burst (one tmux call), so that finish events are still noticed between bursts."""
        if self.bursts.busy:  # one burst in flight at a time
            return
        batch: list[AgentRun] = []
        limit = LAUNCH_BATCH if self.limits.stagger_seconds <= 0 else 1
        changed, running = self.governor_side.turn(self.runs)
        active = self.tally.active  # a launch below makes none active: counted once
        if (reason := self.governor_side.stopped) is not None:
            self._apply_all(spend_stopped(self.runs, reason, self.governor_side.hard))
        for run in self.tally.pending():
            if run.state is not AgentState.PENDING:
                continue
            if self.stop.is_set():
                return
            ready, failed_dep = self._deps_state(run)
            if failed_dep is not None:
                detail = f"not started: dependency {failed_dep} did not succeed"
                self._finish(run, AgentState.FAILED, detail=detail)
                continue
            if (gone := self.governor_side.out_of_quota(run, self.hooks.fallback)) is not None:
                if gone:  # else: it runs on its next executor
                    self._finish(run, AgentState.USAGE_LIMIT, detail=gone)
                continue
            if not ready or self._preparing(run) or self._held(run):
                continue
            if (why := self.governor_side.hold(run, running)) is not None:
                changed |= why  # shown once its reason is new, not every turn
                continue
            if time.monotonic() < self.next_launch or self._full(active, len(batch)):
                break
            opencode = run.launch.executor == "opencode" and self.first_opencode is None
            if opencode and any(r.launch.executor == "opencode" for r in batch):
                break  # the first opencode agent starts alone (_held)
            batch.append(run)
            self.governor_side.started(running, run)
            if len(batch) >= limit:
                break
        if changed:
            self._changed()
        if batch:
            self._launch(batch)
            self.next_launch = time.monotonic() + self.limits.stagger_seconds

    def _preparing(self, run: AgentRun) -> bool:
        """True while the agent's worktree is not ready (its making is started here)."""
        return self.workspace is not None and self.git.preparing(run, self.workspace)

    def _collect_git(self) -> None:
        """Take in the worktrees made and the commits done since the last turn."""
        for run, state, code, detail in self.git.collect():
            self._finish(run, state, code=code, detail=detail)

    def _held(self, run: AgentRun) -> bool:
        """Its last try's processes are ending, its worktree is made, or opencode's first starts."""
        if self.reaper.holds(run.launch.session) or run.preparing is not None:
            return True
        return waits_on_first_opencode(run, self.first_opencode, FIRST_START_SECONDS)

    def _full(self, active: int, starting: int = 0) -> bool:
        busy = active + self.reaper.stopping + starting
        return at_capacity(self.placement, starting, busy, self.limits.max_running)

    def _launch(self, runs: list[AgentRun]) -> None:
        stale = []
        for run in runs:
            # Launched now, it reads what the wave has said so far (inbox, summary, guidance).
            run.launch = replace(run.launch, coordination=self.messages.prompt_context(run.id))
            run.to(AgentState.LAUNCHING)
            session = run.launch.session  # one may be left (an earlier try's): removed first
            stale.append(session in self.stale_sessions or bool(run.parked or run.reruns))
            self.stale_sessions.add(session)
        work = partial(prepare_and_start, runs, stale, self.placement)
        self.bursts.start(runs, work, meanwhile=any(r.active for r in self.runs))
        self._collect_burst()  # at once, unless its files and sessions are made off the loop

    def _collect_burst(self) -> None:
        """The burst started: its runs launched (or failed), and any status already written."""
        if (done := self.bursts.take()) is None:
            return
        for run, handle in zip(*done, strict=True):
            if run.state is not AgentState.LAUNCHING:  # taken in by its status meanwhile
                run.pid = run.pid if isinstance(handle, Exception) else handle
                if not run.active:  # what it left running ends with it, as in _finish
                    self.reaper.settle(run.launch.session, run.pid, time.monotonic())
            elif isinstance(handle, Exception):
                run.unretryable = isinstance(handle, PlacementRefused)  # resubmitting cannot help
                self._finish(run, AgentState.FAILED, detail=f"could not start: {handle}")
            else:
                run.pid = handle
                self._launched(run)
        for run in done[0]:
            if run.active:
                self._check_status(run)

    def _launched(self, run: AgentRun) -> None:
        launch, said = run.launch, run.launched_fields()
        if self.placement.queues:  # its budget starts once the scheduler runs it
            run.to(AgentState.QUEUED, self.events, "agent_launched", **said)
        else:
            run.begin(run.launched_mono or time.monotonic(), self.events, **said)
        if launch.executor == "opencode" and self.first_opencode is None:
            self.first_opencode = run
        log.info(
            "agent launched",
            agent=run.id,
            executor=launch.executor,
            attempt=launch.attempt,
            session=launch.session,
        )
        self._changed()

    # -- noticing ---------------------------------------------------------------------------
    def _on_file(self, agent_id: str, name: str) -> None:
        if name in (GIT_DONE, BURST_DONE):  # a wake-up: work done off the loop
            return self._collect_git() if name == GIT_DONE else self._collect_burst()
        if (run := self.by_id.get(agent_id)) is None:
            return
        early = run.state is AgentState.LAUNCHING and self.bursts.carries(run)
        if early and name == "status.json" and wrote_this_attempt(run):
            self._launched(run)  # it ran, so its session started: tmux has yet to say so
        if not run.active:
            return
        if name == "status.json":
            self._check_status(run)
        elif name == "backoff.json" and follow_backoff(run, self.events):
            self._changed()

    def _check_status(self, run: AgentRun) -> bool:
        """Whether the agent's status file decided how it goes on (ended, parked, fallen back)."""
        try:
            status = read_status(run.launch.paths.status)
        except StatusUnreadable as exc:
            self._finish(run, AgentState.STATUS_UNREADABLE, detail=str(exc))
            return True
        if status is None or not own_status(run, status):  # not yet, or another try's
            return False
        run.code, run.tries, run.rate_limited = status.code, status.tries, status.rate_limited
        status = judge_usage_limit(run, status)  # the CLI's own error said so, not the file
        note_conversation(run)  # known before it is parked, for its next try to continue it
        side, pid = self.governor_side, run.pid  # (a renewal below forgets the ended try's pid)
        if refused(run, status, self.events) or (
            status.state is AgentState.USAGE_LIMIT
            and (side.park(run, status) or side.fall_back(run, self.hooks.fallback))
        ):
            self.reaper.settle(run.launch.session, pid, time.monotonic())  # held till it ends
            self._changed()  # launched again: after its account's reset, or on its fallback
            return True
        detail = side.end_detail(run, status.detail)  # with its park count, its parks spent
        self._finish(run, status.state, code=status.code, detail=detail)
        return True

    def _poll(self) -> None:
        if take_reruns(self.runs, self.events, self.reaper):  # `wave rerun`
            self._changed()
        for run in self.runs:
            if not run.active or self._check_status(run):
                continue
            if follow_backoff(run, self.events):
                self._changed()
            if follow_cli_retries(run, self.events) | note_conversation(run):
                self._changed()
            if (stalled := self.liveness.stalled(run)) is not None:
                self._apply(stalled)
            elif self.stall_steps.check(run, time.time()):  # nudged, or a person asked
                self._changed()
        if follow_streams(self.runs):  # what agents do: shown by the refresh, due now
            self.refresh_due = time.monotonic()  # (it then waits REFRESH_SECONDS again)

    def _check_liveness(self) -> None:
        for seen in self.liveness.sessions(self.runs):
            if isinstance(seen, Started):
                seen.run.begin(time.monotonic())
            else:
                self._apply(seen)

    def _check_deadlines(self, now: float) -> None:
        self._apply_all(self.liveness.budgets(self.runs, now))

    def _apply_all(self, endings: Iterable[Ending]) -> None:
        for ending in endings:  # each applied before the next is noticed
            self._apply(ending)

    def _apply(self, ending: Ending) -> None:
        """Make a noticed end so, unless the agent's own status file says how it ended."""
        run = ending.run
        if ending.unless_status and self._check_status(run):
            return
        run.unretryable |= ending.unretryable
        run.unseen |= ending.unseen
        if ending.stop:  # SIGTERM its process group now, SIGKILL it after the grace period
            if run.pid is None:
                info = self.placement.sessions().get(run.launch.session)
                run.pid = info.pid if info else None
            self.reaper.start(run.launch.session, run.pid, time.monotonic())
        self._finish(run, ending.state, code=ending.code, detail=ending.detail)

    # -- finishing --------------------------------------------------------------------------
    def _finish(
        self, run: AgentRun, state: AgentState, code: int | None = None, detail: str = ""
    ) -> None:
        if run.state is AgentState.LIMITED:  # its parked try's usage-limit status goes
            archive_attempt(run.launch, run.launch.attempt, f".limited{run.parked}")
        if run.settling is None:
            run.finished_wall = time.time()
            if run.launched_wall is not None:  # whatever it left running ends with it
                self.reaper.settle(run.launch.session, run.pid, time.monotonic())
            ws = self.workspace
            if ws is not None and self.git.settling(run, ws, state, code, detail):
                self.tally.settled(run)
                wave = run.launch.wave.number
                self.events.emit("agent_exited", wave, run.id, status=state.outcome, code=code)
                return  # final once its work is committed
        run.end(state, self.events, code, detail)
        level = "info" if state is AgentState.COMPLETED else "warning"
        said = {"status": state.outcome, "code": run.code, "detail": detail or None}
        log.at(level, "agent finished", agent=run.id, **said)
        self.hooks.on_finish(run)
        self._changed()
