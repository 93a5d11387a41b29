"""`--resume`: what a dead launcher left of each agent, adopted instead of redone.

A finished status counts; a session still alive is waited on; anything else is launched
again. So no finished work is redone and no running agent is started twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import NamedTuple

from ...agents.conversations import valid_id
from ...definitions.model import EXECUTOR_IDS, AgentDef, WaveDef
from ...placement.base import PaneInfo
from ...state.events import EventLog, iso_time
from ...state.layout import AgentPaths
from ...state.ledger import Ledger, end_doubt
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusFile, StatusUnreadable, read_status
from ...state.untrusted import count, read_launch_record
from ..agent.plan import AgentLaunch, Planner
from ..agent.run import AgentRun
from ..pool.rate_limits import judge_usage_limit

log = Logger(__name__)


class Leftover(NamedTuple):
    """An agent's files as the dead launcher left them."""

    attempt: int
    executor: str | None
    launched_at: float | None
    status: StatusFile | None
    reused: bool = False  # copied from an earlier run of the wave (reuse.py)
    conversation: str = ""  # its CLI's conversation, as its launch.json names it


def read_leftover(paths: AgentPaths, current_attempt: int) -> Leftover:
    """Every field checked: an attempt beyond the run state's, an executor wave does not
    know, a launch time that is no time are ignored, and the agent is judged without them."""
    record = read_launch_record(paths.launch_record)
    try:
        status = read_status(paths.status)
    except StatusUnreadable:
        status = None  # a torn status is not a result: the agent runs again
    attempt = (status.attempt if status else None) or record.attempt
    if attempt is None or attempt > current_attempt:
        attempt = current_attempt
    executor = record.executor if record.executor in EXECUTOR_IDS else None
    return Leftover(
        attempt=attempt,
        executor=executor,
        launched_at=record.launched_at,
        status=status,
        reused=record.reused,
        conversation=valid_id(executor or "", record.conversation) or "",
    )


def adopt(
    launch: AgentLaunch,
    left: Leftover,
    current_attempt: int,
    pane: PaneInfo | None,
    earlier: bool = True,
) -> AgentRun | None:
    """The run to carry on with, or None when the agent must be launched. ``earlier``: a
    success of an earlier attempt stands (False for what a retry runs again)."""
    status, now = left.status, time.time()
    # Times the agent could have written: none later than now (a launch "in the future" would
    # stretch its budget without end, a finish there its duration).
    launched = min(left.launched_at or now, now)
    if status is not None and status.raw.get("stopped_by") == "launcher":
        return None  # the launcher was stopped, not the agent: it runs again
    if status is not None and (
        (status.state is AgentState.COMPLETED and earlier) or left.attempt == current_attempt
    ):
        detail = status.detail or ""
        if status.limited_until is not None and status.state is AgentState.USAGE_LIMIT:
            most = launch.lane.governance.usage_limit.max_parks  # more would be a forged count
            parks = count(status.raw.get("parks"), minimum=1, maximum=most) or 1
            parked = parked_run(launch, status.limited_until, launched, parks)
            if parked is not None:
                return parked
            policy = launch.lane.governance.usage_limit
            detail = (
                f"{detail or 'usage limit'}; its reset at {iso_time(status.limited_until)} is "
                f"not waited for: beyond usage_limit.max_wait_minutes ({policy.max_wait_minutes:g})"
                if policy.wait
                else f"{detail or 'usage limit'}; usage_limit.wait is off"
            )
        finished = _epoch(status.finished_at) or now
        return AgentRun(
            launch,
            state=status.state,
            code=status.code,
            tries=status.tries,
            rate_limited=status.rate_limited,
            detail=detail,
            launched_wall=launched,
            finished_wall=min(max(finished, launched), now),
        )
    if status is None and pane is not None and left.launched_at is not None:
        started_mono = time.monotonic() - (now - launched)
        run = AgentRun(
            launch,
            state=AgentState.QUEUED if pane.queued else AgentState.RUNNING,
            launched_wall=launched,
            launched_mono=started_mono,
            pid=pane.pid,
        )
        if not pane.queued:  # a queued job's budget starts when it runs
            run.deadline = started_mono + launch.deadline_minutes * 60
        return run
    return None


def adopt_leftover(
    planner: Planner,
    events: EventLog,
    wave: WaveDef,
    agent: AgentDef,
    attempt: int,
    history: list[str],
    panes: Mapping[str, PaneInfo],
    earlier: bool = True,
    ledger: Ledger | None = None,
) -> AgentRun | None:
    """Carry on with what a dead launcher left of ``agent`` in ``attempt`` (None: launch it);
    the executor it ran on joins ``history`` (its fallbacks go on from there). An end its
    status file tells is taken only where the launcher's ``ledger`` agrees."""
    left = read_leftover(planner.layout.agent(wave.number, agent.id), attempt)
    executor = left.executor or history[-1]
    if executor not in history:
        history.append(executor)
    launch = planner.plan(wave, agent, left.attempt, executor)
    if left.conversation and executor == left.executor and executor == "claude":
        launch = replace(launch, conversation=left.conversation)  # the id its process has
    if left.status is not None and left.status.usage_limit:  # run.sh's guess: judged again
        left = left._replace(status=judge_usage_limit(AgentRun(launch), left.status))
    run = adopt(launch, left, attempt, panes.get(launch.session), earlier)
    if run is not None and run.state.terminal:
        view = ledger.view if ledger is not None else None
        if doubt := end_doubt(view, wave.number, agent.id, left.attempt, run.state.value):
            log.warning("agent not adopted: it runs again", agent=agent.id, why=doubt)
            return None
    if run is not None:
        run.reused = left.reused
        if executor == left.executor and not run.conversation:  # as codex or opencode said it
            run.said_conversation = left.conversation
        events.emit(
            "agent_adopted",
            wave.number,
            agent.id,
            attempt=left.attempt,
            status=run.state.outcome,
            session=launch.session,
        )
        log.info("agent adopted", agent=agent.id, state=run.state.value)
    return run


def interrupted_conversation(launch: AgentLaunch) -> str:
    """The conversation of the try a dead launcher left running, which no session carries on
    (its id as its launch.json says, if of the same attempt and executor, and of its CLI's
    shape): the try launched now continues it."""
    record = read_launch_record(launch.paths.launch_record)
    if record.attempt != launch.attempt or record.executor != launch.executor:
        return ""
    return valid_id(launch.executor, record.conversation) or ""


def parked_run(
    launch: AgentLaunch, until: float, launched_at: float | None, parks: int = 1
) -> AgentRun | None:
    """An agent the dead launcher had parked on a usage limit: it waits for the same reset
    (pool/governor_side.py), then runs again; nothing is launched before. None when that reset is
    further away than the lane waits for one (``usage_limit``: its status file is the agent's
    to write, and a reset in a century would hold the lane for one)."""
    policy = launch.lane.governance.usage_limit
    if (
        not policy.wait
        or until > time.time() + policy.max_wait_minutes * 60 + policy.margin_seconds
    ):
        return None
    run = AgentRun(launch, state=AgentState.LIMITED, launched_wall=launched_at or time.time())
    run.limited_until, run.parked = until, parks  # its parks so far count towards max_parks
    run.parked_conversation = (launch.executor, interrupted_conversation(launch))
    return run


def reused_run(launch: AgentLaunch, attempt: int) -> AgentRun | None:
    """The run of an agent whose earlier success a new run reuses (reuse.py): its copied
    folder adopted, not launched. None when that folder no longer says it succeeded: it is
    launched after all."""
    run = adopt(launch, read_leftover(launch.paths, attempt), attempt, None)
    if run is None or run.state is not AgentState.COMPLETED:
        return None
    run.reused = True
    return run


def _epoch(stamp: str | None) -> float | None:
    """Seconds since the epoch of a status file's UTC stamp (None when absent or odd)."""
    if not stamp:
        return None
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
