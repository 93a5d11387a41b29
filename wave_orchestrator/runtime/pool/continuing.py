"""The pool's side of conversations kept across tries: the id a codex or opencode agent says
in its first lines is noted (and recorded in its launch.json, for a launcher that resumes
after this one died), and a continued try its CLI refused starts afresh in the same attempt."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ...agents.conversations import read_id, refusal_in, why_not
from ...state.events import EventLog
from ...state.fsutil import write_json_atomic
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusFile
from ..agent.run import AgentRun, archive_attempt

log = Logger(__name__)


def note_conversation(run: AgentRun) -> bool:
    """Whether ``run``'s conversation id became known now (read from its output). Not looked
    for where its CLI could not continue it (opencode's default format never says it)."""
    launch = run.launch
    if run.conversation or run.launched_wall is None:
        return False
    if why_not(launch.executor, launch.command.argv) is not None:
        return False
    found = read_id(run.launch.executor, run.launch.paths.output_log)
    if found is None:
        return False
    run.said_conversation = found
    with contextlib.suppress(OSError):  # kept in memory all the same
        write_json_atomic(run.launch.paths.launch_record, run.launch_record())
    return True


def refused(run: AgentRun, status: StatusFile, events: EventLog) -> bool:
    """True when ``run``'s try continued a conversation its CLI would not continue: the same
    attempt starts again afresh (its refused try kept as ``attempt-<k>.refused``)."""
    launch = run.launch
    if not launch.continues or status.state is not AgentState.FAILED:
        return False
    words = refusal_in(launch.executor, launch.paths.output_log)
    if words is None:
        return False
    archive_attempt(launch, launch.attempt, ".refused")
    conversation = launch.continues
    run.renew(events, "agent_restarted", conversation=conversation, reason=words)
    # Its whole task again, with what the continued try was to be told (a person's words)
    told = f"{run.launch.retry_context}## why you are running again\n{launch.continuation}"
    run.launch = replace(run.launch, retry_context=told)
    run.fresh_because = f"{launch.executor} would not continue it: {words}"
    log.warning("agent starts afresh", agent=run.id, conversation=conversation, reason=words)
    return True
