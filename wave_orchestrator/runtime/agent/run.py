"""One attempt of one agent as the launcher tracks it: its state, pid, deadline and result.
Its state moves only through ``AgentRun``'s own methods (``to`` and the moves built on it),
each checked against ``state.lifecycle``'s table and said in events.jsonl by the same call."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any

from ...agents.stream_state import StreamFollower, streams_events
from ...agents.usage import CliRetryFollower
from ...definitions.model import AgentDef, WaveDef
from ...governor.governor import Slot
from ...state.events import EventLog, utc_stamp
from ...state.events import short_clock as clock
from ...state.lifecycle import AgentState, check_transition
from ...state.logs import Logger
from ...state.status import (
    StatusFile,
    StatusUnreadable,
    archive_files,
    launcher_outcome,
    read_status,
    write_outcome,
)
from ...state.untrusted import read_backoff
from .continuation import continue_or_restart
from .plan import AgentLaunch

if TYPE_CHECKING:
    from concurrent.futures import Future

log = Logger(__name__)

# Its process may run: budgets, liveness and status files are followed.
ACTIVE = frozenset(
    {AgentState.QUEUED, AgentState.RUNNING, AgentState.RATE_LIMITED, AgentState.WAITING_HUMAN}
)


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class AgentRun:
    """One attempt of one agent, as the launcher tracks it."""

    launch: AgentLaunch
    state: AgentState = AgentState.PENDING
    launched_mono: float | None = None
    launched_wall: float | None = None
    deadline: float | None = None
    finished_wall: float | None = None
    code: int | None = None
    tries: int = 0
    rate_limited: int = 0
    detail: str = ""
    pid: int | None = None
    seen_backoff_try: int = 0
    seen_account_wait: int = 0  # the try before which it last waited out its account's backoff
    executors: list[str] = field(default_factory=list)
    backing_off: bool = False  # the wrapper sleeps on a rate limit (backoff.json)
    foreign_status: bool = False  # a status file of another attempt was seen (and ignored)
    paused_at: float | None = None  # monotonic time it began waiting on a person
    resumed_wall: float = 0.0  # when it last stopped waiting on a person (the stall clock)
    cli: CliRetryFollower = field(init=False)  # the CLI's own retries (claude's api_retry)
    stream: StreamFollower | None = field(init=False)  # what it does, when its CLI streams events
    # isolation: worktree: its worktree is made, and its work committed, off the main loop.
    preparing: Future[str] | None = None  # its worktree being made
    prepared: bool = False
    settling: Future[str] | None = None  # its work being committed; it has ended meanwhile
    ending: tuple[AgentState, int | None, str] | None = None  # how it ended, once committed
    overruled: bool = False  # it succeeded, but its work could not be committed: failed
    unretryable: bool = False  # it failed in a way no retry can mend (a refused job)
    unseen: bool = False  # ended by the launcher without seeing how (its cluster gone from view)
    reused: bool = False  # its earlier run's success stands: not launched in this run
    limited_until: float | None = None  # parked on a usage limit until then (epoch)
    hold: str | None = None  # why the governor keeps it pending ("queued (cap codex=3)")
    parked: int = 0  # how often it was parked (its earlier tries are kept as attempt-k.limitedN)
    reruns: int = 0  # how often a person had it run again (`wave rerun`; attempt-k.rerunN)
    said_conversation: str = ""  # the conversation id its CLI said (codex, opencode)
    # (executor, conversation) of the try it was parked in: the next try continues it
    parked_conversation: tuple[str, str] | None = None
    fresh_because: str | None = None  # why its try could not continue its conversation
    # Told of each move (its pool's counts): the run, and the state it left.
    moved: Callable[[AgentRun, AgentState], None] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.follow_output()

    def follow_output(self) -> None:
        """New followers of its try's output.log, for each try (a renewal, a fallback): the
        CLI's own retries, and its event stream when the try's real argv prints one."""
        launch = self.launch
        self.cli = CliRetryFollower(launch.executor, launch.paths.output_log)
        streams = streams_events(launch.executor, launch.argv)
        self.stream = StreamFollower(launch.executor, launch.paths.output_log) if streams else None

    @property
    def id(self) -> str:
        return self.launch.agent.id

    @property
    def conversation(self) -> str:
        """Its conversation's id, once known: given at launch (claude) or said by its CLI."""
        return self.launch.conversation or self.said_conversation

    @property
    def active(self) -> bool:
        """Its process may run: budgets, liveness and status files are followed."""
        return self.settling is None and self.state in ACTIVE

    def to(
        self, state: AgentState, events: EventLog | None = None, event: str = "", /, **said: Any
    ) -> None:
        """The one way its state moves on: the move checked against the lifecycle's table,
        then, when ``event`` is named, said in events.jsonl with the fields ``said``."""
        self._move(state, False, events, event, said)

    def _move(
        self,
        state: AgentState,
        renewal: bool,
        events: EventLog | None,
        event: str,
        said: dict[str, Any],
    ) -> None:
        check_transition(self.state, state, renewal=renewal)
        before, self.state = self.state, state
        if self.moved is not None:
            self.moved(self, before)
        if events is not None and event:
            events.emit(event, self.launch.wave.number, self.id, **said)

    def begin(self, now: float, events: EventLog | None = None, /, **said: Any) -> None:
        """It runs: its budget counts from ``now`` (``said``: the fields of its launch)."""
        self.deadline = now + self.launch.deadline_minutes * 60
        self.to(AgentState.RUNNING, events, "agent_launched", **said)

    def end(
        self, state: AgentState, events: EventLog, code: int | None = None, detail: str = ""
    ) -> None:
        """It ended: its result kept, an end the launcher decided written to its status file
        (the wrapper's does not say it), then said as ``agent_finished``."""
        check_transition(self.state, state)  # before anything of it is written
        self.code = code if code is not None else self.code
        self.detail = detail
        if self.foreign_status:
            drop_foreign_status(self)
        decided = state not in (AgentState.COMPLETED, AgentState.FAILED, AgentState.USAGE_LIMIT)
        if self.launched_wall and (decided or self.overruled):
            write_outcome(self.launch.paths.status, self.launcher_status(state))
        self.to(state, events, "agent_finished", **self.finished_fields(state))

    @property
    def state_note(self) -> str | None:
        """What it waits on: the CLI's own retry loop (rate-limited), the governor (pending),
        or its account's reset (limited)."""
        if self.state is AgentState.LIMITED and self.limited_until is not None:
            return f"until {clock(self.limited_until)}"
        if self.state is AgentState.PENDING:
            return self.hold
        limited = self.state is AgentState.RATE_LIMITED and not self.backing_off
        return self.cli.current.describe() if limited and self.cli.current else None

    @property
    def slot(self) -> Slot:
        """(executor, account, model): what the governor counts it under."""
        launch = self.launch
        return launch.executor, launch.account, launch.model

    def park(self, until: float, events: EventLog | None = None, /, **said: Any) -> None:
        """It hit a usage limit that resets at ``until``: no process, no clock, no retry used
        (said as ``agent_limited`` with ``said`` when ``events`` is given)."""
        self.to(AgentState.LIMITED, events, "agent_limited", **said)
        self.limited_until, self.parked = until, self.parked + 1
        self.parked_conversation = (self.launch.executor, self.conversation)
        self.finished_wall = time.time()  # its clock stops while it waits

    def unpark(self) -> None:
        """Its account's limit has reset: launched again as a new try of the same attempt
        (what the earlier try printed is kept as ``attempt-<k>.limited<n>.*``), continuing
        the conversation of the try that met the limit when it ran on the same executor (a
        fallback executor starts afresh)."""
        archive_attempt(self.launch, self.launch.attempt, f".limited{self.parked}")
        executor, conversation = self.parked_conversation or ("", "")
        until = self.limited_until
        self.renew()
        if executor != self.launch.executor:  # a fallback: another CLI's conversation is no use
            if conversation:
                self.fresh_because = f"it runs on {self.launch.executor} now, not {executor}"
            return
        reason = f"usage limit until {clock(until)}" if until else "usage limit"
        self.launch, self.fresh_because = continue_or_restart(self.launch, conversation, reason)
        how = "afresh: " + self.fresh_because if self.fresh_because else "its conversation"
        log.info("agent continues", agent=self.id, how=how, conversation=conversation or None)

    def renew(self, events: EventLog | None = None, event: str = "", /, **said: Any) -> None:
        """Pending again, as a new try of the same attempt: a renewal in the lifecycle's table
        (never while it is being launched). What it is (its launch, executors, worktree) and
        how often it was parked or rerun are kept, everything else starts over."""
        self._move(AgentState.PENDING, True, events, event, said)
        keep = {"state", "launch", "executors", "parked", "prepared", "cli", "reruns"}
        for f in dataclass_fields(self):
            if f.init and f.name not in keep:
                fresh = f.default_factory() if callable(f.default_factory) else f.default
                setattr(self, f.name, fresh)
        self.launch = self.launch.fresh()  # a new conversation, unless its caller continues it
        self.__post_init__()

    @property
    def duration_ms(self) -> int:
        if self.launched_wall is None:
            return 0
        end = self.finished_wall or time.time()
        return int((end - self.launched_wall) * 1000)

    def last_sign_of_life(self) -> float:
        """When it last showed it works (wall clock): output, the end of a rate-limit sleep
        (the wrapper touches the log then), the CLI's own wait, or a person's answer."""
        paths = self.launch.paths
        last = self.launched_wall or time.time()
        with contextlib.suppress(OSError):
            last = max(last, paths.output_log.stat().st_mtime)
        backoff = read_backoff(paths.backoff)
        if backoff is not None and backoff.until is not None:
            last = max(last, backoff.until)
        return max(last, self.cli.wait_until, self.resumed_wall)

    def wait_on_person(self, now: float) -> None:
        """It asked a person: its budget and stall clocks stop until the answer comes."""
        self.to(AgentState.WAITING_HUMAN)
        self.paused_at = now

    def answered(self, now: float) -> None:
        """The answer came: the wait is added to its budget and the stall clock starts anew."""
        if self.deadline is not None and self.paused_at is not None:
            self.deadline += now - self.paused_at  # before the move: its pool notes the budget
        self.to(AgentState.RUNNING)
        self.paused_at, self.resumed_wall = None, time.time()

    def launch_record(self) -> dict[str, Any]:
        """launch.json: what a resumed launcher needs to know of this attempt."""
        launch = self.launch
        return {
            "attempt": launch.attempt,
            "executor": launch.executor,
            "session": launch.session,
            "launched_at": self.launched_wall,
            "fingerprint": launch.fingerprint or None,
            "sandbox": launch.sandbox_label,
            "orchestrator_id": launch.orchestrator_id or None,
            "context7": launch.context7_mode,  # how its library docs came
            "conversation": self.conversation or None,  # its CLI's, to continue it
            "continues": launch.continues or None,
            "fresh_because": self.fresh_because,
            **({"skills": launch.skills.record()} if launch.skills is not None else {}),
        }

    def launched_fields(self) -> dict[str, Any]:
        """The fields of its ``agent_launched`` event."""
        launch = self.launch
        return {
            "session": launch.session,
            "executor": launch.executor,
            "attempt": launch.attempt,
            "model": launch.model,
            "account": launch.account,
            "sandbox": launch.sandbox_label,
        }

    def finished_fields(self, state: AgentState) -> dict[str, Any]:
        """The fields of its ``agent_finished`` event, ended as ``state``."""
        return {
            "status": state.outcome,
            "code": self.code,
            "tries": self.tries,
            "duration_ms": self.duration_ms,
            "attempt": self.launch.attempt,
            "executor": self.launch.executor,
            "detail": self.detail or None,
        }

    def ended_row(self) -> dict[str, Any]:
        """This run among a launch's finished runs (``wave launch --json``)."""
        return {
            "agent": self.id,
            "attempt": self.launch.attempt,
            "executor": self.launch.executor,
            "outcome": self.state.outcome,
            "duration_ms": self.duration_ms,
            "code": self.code,
            "reused": self.reused,
        }

    def launcher_status(self, state: AgentState) -> dict[str, Any]:
        """The status file of an outcome the launcher decided (timeout, stall, ...); a
        `cancelled` one is launched again by `--resume` (``stopped_by``)."""
        launch = self.launch
        return launcher_outcome(
            self.id,
            launch.wave.number,
            launch.lane.name,
            launch.attempt,
            state.value,
            detail=self.detail,
            code=self.code if self.code is not None else -1,
            tries=self.tries,
            rate_limited=self.rate_limited,
            started_at=utc_stamp(self.launched_wall or time.time()),
            finished_at=utc_stamp(self.finished_wall or time.time()),
            stopped_by="launcher" if state is AgentState.CANCELLED else None,
            orchestrator_id=launch.orchestrator_id or None,
        )


def describe_budget(minutes: float) -> str:
    return f"{minutes:g}m" if minutes >= 1 else f"{minutes * 60:g}s"


def archive_attempt(launch: AgentLaunch, previous_attempt: int, suffix: str = "") -> None:
    """Keep the previous attempt's log and status as attempt-<k>.* before a relaunch
    (``suffix`` marks an attempt a dead launcher left unfinished)."""
    archive_files(launch.paths, previous_attempt, suffix)


def drop_foreign_status(run: AgentRun) -> None:
    """Another attempt's status must not stand for this one once it ended (a resume or
    `wave status` would read it as this attempt's result)."""
    with contextlib.suppress(StatusUnreadable, OSError):
        status = read_status(run.launch.paths.status)
        if status is not None and status.raw.get("attempt") != run.launch.attempt:
            run.launch.paths.status.unlink()


def of_this_attempt(run: AgentRun, status: StatusFile) -> bool:
    """Whether ``status`` is this attempt's (not one an earlier try still running wrote)."""
    attempt = status.raw.get("attempt")
    return attempt == run.launch.attempt and not isinstance(attempt, bool)


def own_status(run: AgentRun, status: StatusFile) -> bool:
    """Whether ``status`` is this attempt's; another's (a try still running after a relaunch)
    is ignored, and said once."""
    if of_this_attempt(run, status):
        return True
    if not run.foreign_status:
        run.foreign_status = True
        attempt, found = run.launch.attempt, status.raw.get("attempt")
        log.warning(
            "status file of another attempt ignored",
            agent=run.id,
            attempt=attempt,
            status_attempt=found,
        )
    return False


def wrote_this_attempt(run: AgentRun) -> bool:
    """Whether this attempt's wrapper wrote the agent's status: proof its session started
    (an unreadable one, or another attempt's, proves nothing)."""
    with contextlib.suppress(StatusUnreadable, OSError):
        status = read_status(run.launch.paths.status)
        return status is not None and of_this_attempt(run, status)
    return False


def briefing_rows(wave: WaveDef, latest: Mapping[str, AgentRun]) -> list[dict[str, Any]]:
    """Every agent of the wave and its latest result, as a closure agent's briefing lists
    them (a reused agent's success is its earlier run's, and says so)."""
    rows = []
    for agent in wave.agents:
        run = latest.get(agent.id)
        status = run.state.outcome if run else "not run"
        if run and run.reused:
            status = f"{status} (reused from an earlier run)"
        rows.append(
            {
                "agent": agent,
                "status": status,
                "code": run.code if run else None,
                "log": str(run.launch.paths.output_log) if run else "",
            }
        )
    return rows


def stopped_by_person(wave: WaveDef, latest: Mapping[str, AgentRun], agent: AgentDef) -> bool:
    """Cancelled by `wave stop --agent`, or waiting on an agent that was: not retried."""
    run = latest.get(agent.id)
    if run is not None and run.state is AgentState.CANCELLED:
        return True
    return any(stopped_by_person(wave, latest, wave.agent(dep)) for dep in agent.depends_on)
