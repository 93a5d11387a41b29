"""`wave rerun` of a running wave: a person asks, through a request file beside
the wave's agent folders, that one agent run again now. The pool running it stops the agent's
process (if it runs) and launches it again as a new try of the same attempt, the reason in its
prompt; what the stopped try wrote is kept as ``attempt-<k>.rerun<n>.*``. The launcher answers
every request (taken, or why not) in a file the command waits on."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import WaveError
from ...names import AGENT_ID_RE
from ...placement.reaper import Reaper
from ...sanitize import strip_controls
from ...state.events import EventLog, utc_now
from ...state.fsutil import ensure_dir, write_json_atomic
from ...state.layout import AgentPaths
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.untrusted import read_object
from ..agent.run import AgentRun

log = Logger(__name__)

REQUEST_LIMIT = 8192  # a request is a few lines of JSON; a bigger file is not one wave wrote
NOTE = "## why you are running again\nA person asked for it (`wave rerun`): {reason}\n"


def ask(paths: AgentPaths, reason: str) -> str:
    """Write the request for the agent of ``paths``; returns its id (what the answer names)."""
    import uuid  # `wave rerun` asks; the launcher, which imports this module, never does

    rid = uuid.uuid4().hex
    ensure_dir(paths.rerun_request.parent)
    paths.rerun_answer.unlink(missing_ok=True)
    write_json_atomic(paths.rerun_request, {"id": rid, "reason": reason[:2000], "at": utc_now()})
    return rid


def answer(paths: AgentPaths, rid: str) -> dict[str, Any] | None:
    """The launcher's answer to request ``rid``, once it has written one."""
    found = read_object(paths.rerun_answer, REQUEST_LIMIT)
    return found if found is not None and found.get("id") == rid else None


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
        request = folder / name
        found = read_object(request, REQUEST_LIMIT)
        request.unlink(missing_ok=True)
        rid = found.get("id") if found else None
        if not AGENT_ID_RE.fullmatch(agent) or not isinstance(rid, str) or len(rid) > 64:
            log.warning("rerun request ignored: not one `wave rerun` wrote", file=str(request))
            continue
        reason = strip_controls(str(found.get("reason", "") if found else ""))[:2000]
        run = by_id.get(agent)
        why = _refused(run, agent)
        if run is not None and why is None:
            _restart(run, reason, reaper, events)
            log.info("agent runs again: a person asked (wave rerun)", agent=run.id)
            taken = True
        _reply(runs[0].launch.paths.sibling(agent).rerun_answer, rid, why)
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


def _restart(run: AgentRun, reason: str, reaper: Reaper, events: EventLog) -> None:
    """Stop what runs (its session held until every process is gone) and make it pending
    again, as new: the pool launches it when the old try has ended."""
    if run.active:
        reaper.start(run.launch.session, run.pid, time.monotonic())
    run.renew(events, "agent_rerun", reason=reason or None)
    run.reruns += 1
    note = NOTE.format(reason=reason or "no reason given")
    run.launch = replace(run.launch, retry_context=note)


def _reply(path: Path, rid: str, refused: str | None) -> None:
    with contextlib.suppress(OSError, WaveError):  # unanswered: the command says so
        write_json_atomic(path, {"id": rid, "taken": refused is None, "detail": refused or ""})
