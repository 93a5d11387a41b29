"""`wave rerun` of a running wave: a person asks, through a request file beside
the wave's agent folders, that one agent run again now. The pool running it stops the agent's
process (if it runs) and launches it again as a new try of the same attempt, the reason in its
prompt; what the stopped try wrote is kept as ``attempt-<k>.rerun<n>.*``. The launcher answers
every request (taken, or why not) in a file the command waits on."""

from __future__ import annotations

import os
import time
from dataclasses import replace

from ...names import AGENT_ID_RE
from ...placement.reaper import Reaper
from ...state.events import EventLog
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.reruns import Request, reply, take_request
from ..agent.continuation import continue_or_restart
from ..agent.run import AgentRun

log = Logger(__name__)

NOTE = "## why you are running again\nA person asked for it (`wave rerun`): {reason}\n"
CONTINUED = "a person stopped it to tell it more (`wave rerun --continue`)"


def take(runs: list[AgentRun], events: EventLog, reaper: Reaper) -> bool:
    """Answer every request waiting beside the wave's agents; True when one is taken."""
    if not runs:
        return False
    folder = runs[0].launch.paths.rerun_request.parent
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith(".json")]
    except OSError:  # no request was ever made (no folder), or it cannot be read
        return False
    by_id = {r.id: r for r in runs}
    taken = False
    for name in names:
        agent = name.removesuffix(".json")
        if agent.endswith(".answer"):
            continue
        request = take_request(folder / name)
        if not AGENT_ID_RE.fullmatch(agent) or request is None:
            log.warning(
                "rerun request ignored: not one `wave rerun` wrote", file=str(folder / name)
            )
            continue
        rid = request.id
        run = by_id.get(agent)
        why = _refused(run, agent)
        if run is not None and why is None:
            _restart(run, request, reaper, events)
            log.info("agent runs again: a person asked (wave rerun)", agent=run.id)
            taken = True
        reply(runs[0].launch.paths.sibling(agent).rerun_answer, rid, why)
    return taken


def _refused(run: AgentRun | None, agent: str) -> str | None:
    if run is None:
        return (
            f"{agent} is not in what the launcher runs now (an agent of another stage, or "
            "one this wave does not have): once the wave has ended, `wave rerun` runs it "
            "again with the closure sweep"
        )
    if run.settling is not None or run.preparing is not None:
        return f"{agent}'s worktree is busy (its work being committed or made): ask again soon"
    if run.state is AgentState.LAUNCHING:
        return f"{agent} is being started: ask again once it runs"
    if run.state is AgentState.PENDING and run.launched_wall is None:
        return f"{agent} has not started yet: it will run when its turn comes"
    return None


def _restart(run: AgentRun, request: Request, reaper: Reaper, events: EventLog) -> None:
    """Stop what runs (its session held until every process is gone) and make it pending
    again: the pool launches it when the old try has ended, as new, or continuing its
    conversation with the person's words (``wave rerun --continue``)."""
    if run.active:
        reaper.start(run.launch.session, run.pid, time.monotonic())
    conversation, reason = run.conversation, request.reason
    said = {"reason": reason or None, **({"continue": True} if request.carry_on else {})}
    run.renew(events, "agent_rerun", **said)
    run.reruns += 1
    if request.carry_on:
        run.launch, run.fresh_because = continue_or_restart(
            run.launch, conversation, CONTINUED, reason
        )
        return
    note = NOTE.format(reason=reason or "no reason given")
    run.launch = replace(run.launch, retry_context=note)
