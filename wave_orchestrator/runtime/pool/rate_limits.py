"""Following an agent's waits on a rate limit: the wrapper's own backoff (``backoff.json``,
one sleep per limited try) and the retries a CLI makes by itself (claude's ``api_retry``).
Meanwhile the agent shows as ``rate-limited``, and each wait is an ``agent_rate_limited``
event; the pool asks here and redraws when something changed. And whether a try that failed
ended on a usage limit: the launcher's own verdict, not the status file's."""

from __future__ import annotations

import contextlib

from ...state.events import EventLog
from ...state.fsutil import write_json_atomic
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusFile
from ...state.untrusted import Backoff, count, read_backoff
from ..agent.run import AgentRun

log = Logger(__name__)


def judge_usage_limit(run: AgentRun, status: StatusFile) -> StatusFile:
    """``status`` with the launcher's verdict on a usage limit: a failed try (non-zero code)
    whose CLI said so in its own error channel (``agents.limits``), read from the try's output.
    The file's ``usage_limit`` and ``detail`` are run.sh's guess (a line of the try's end
    matched), and an agent can write that file: neither decides. Where the verdict differs,
    the file is rewritten, so that `wave status` and a resume read the verdict too."""
    if status.outcome not in (None, AgentState.USAGE_LIMIT.value):
        return status  # decided by the launcher or Slurm (a timeout, a cancel): not a limit
    launch, detail = run.launch, None
    if status.code != 0:
        from ...agents.limits import read_usage_limit  # only once run.sh says limited

        detail = read_usage_limit(
            launch.executor,
            launch.agent.executor.settings_for(launch.executor),
            launch.rate_limit.usage_limit_patterns,
            launch.paths.output_log,
            count(status.raw.get("output_offset"), maximum=2**62) or 0,
        )
    said = status.detail if status.usage_limit else None
    if (status.usage_limit, said, status.outcome) == (detail is not None, detail, None):
        return status
    raw = {k: v for k, v in status.raw.items() if k not in ("usage_limit", "detail", "outcome")}
    if detail is not None:
        raw |= {"detail": detail, "usage_limit": True}
    with contextlib.suppress(OSError):  # the verdict stands in memory all the same
        write_json_atomic(launch.paths.status, raw)
    limited = detail is not None
    return status._replace(usage_limit=limited, detail=detail, outcome=None, raw=raw)


def settle_rate_limited(run: AgentRun) -> bool:
    """Rate-limited while the wrapper or the CLI waits on a rate limit, else running."""
    waiting = run.backing_off or (run.cli.current is not None and run.cli.current.rate_limit)
    target = AgentState.RATE_LIMITED if waiting else AgentState.RUNNING
    if not run.active or run.state in (target, AgentState.WAITING_HUMAN, AgentState.QUEUED):
        return False
    run.to(target)
    return True


def follow_backoff(run: AgentRun, events: EventLog) -> bool:
    """A new backoff of the wrapper (or the end of one); True when the agent's state or a new
    event changed what the views show."""
    info = read_backoff(run.launch.paths.backoff)
    if info is None:
        run.backing_off = False
        return settle_rate_limited(run)
    if info.account_wait:
        return _follow_account_wait(run, events, info)
    if info.try_number <= run.seen_backoff_try:
        return False
    run.seen_backoff_try = info.try_number
    run.backing_off, run.cli.current = True, None  # the CLI's try is over
    settle_rate_limited(run)
    events.emit(
        "agent_rate_limited",
        run.launch.wave.number,
        run.id,
        attempt=run.launch.attempt,
        **{"try": run.seen_backoff_try},
        tries=info.tries,
        delay_ms=info.delay_ms,
    )
    log.info(f"agent {run.id} rate-limited, try {run.seen_backoff_try}/{info.tries}", agent=run.id)
    return True


def _follow_account_wait(run: AgentRun, events: EventLog, info: Backoff) -> bool:
    """Before a try, the wrapper waits out the backoff another agent of the same account
    set: the agent waits on a rate limit (and shows so), but it met none itself, and its
    tries are not counted as limited."""
    if info.try_number <= run.seen_account_wait:
        return False
    run.seen_account_wait = info.try_number
    run.backing_off = True
    settle_rate_limited(run)
    account = run.launch.account
    events.emit(
        "agent_rate_limited",
        run.launch.wave.number,
        run.id,
        attempt=run.launch.attempt,
        account_wait=account,
        delay_ms=info.delay_ms,
    )
    log.info(f"agent {run.id} waits out account {account}'s backoff", agent=run.id)
    return True


def follow_cli_retries(run: AgentRun, events: EventLog) -> bool:
    """The retries claude makes on its own before it gives up (``api_retry`` lines in
    stream-json, ~3 minutes of them): the agent shows as rate-limited meanwhile."""
    if not run.cli.poll():
        return False
    wave, attempt = run.launch.wave.number, run.launch.attempt
    for retry in (r for r in run.cli.announced if r.rate_limit):
        events.emit("agent_rate_limited", wave, run.id, attempt=attempt, **retry.fields())
    settle_rate_limited(run)
    return True
