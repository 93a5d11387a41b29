"""What a finished agent leaves behind: one metrics record per attempt, and the desk files it
held handed to whoever waits for them."""

from __future__ import annotations

from pathlib import Path

from ..agents.executors import reasoning_for
from ..agents.usage import read_usage
from ..desk.claims import Desk
from ..metrics.records import metrics_record
from ..state.events import EventLog, utc_stamp
from ..state.fsutil import append_jsonl
from .agent_pool import AgentRun
from .snapshot import last_line, tail_text


def record_metrics(
    run: AgentRun, lane: str, wave: int, metrics: Path, recorded: set[str] | None = None
) -> None:
    """Append the attempt's metrics line, once: ``recorded`` holds ids already written (a
    resumed launcher must not double up)."""
    launch = run.launch
    record_id = f"{lane}:{wave}:{run.id}:{launch.attempt}:{int((run.launched_wall or 0) * 1000)}"
    if run.launched_wall is None or (recorded is not None and record_id in recorded):
        return
    text = (
        launch.paths.output_log.read_text(errors="replace")
        if launch.paths.output_log.exists()
        else ""
    )
    usage = read_usage(launch.executor, launch.agent.executor.settings_for(launch.executor), text)
    record = metrics_record(
        lane=lane,
        wave=wave,
        agent=run.id,
        role=launch.agent.role,
        executor=launch.executor,
        model=usage.model or launch.model,  # the model the CLI reports, if any
        reasoning=reasoning_for(launch.agent.executor, launch.executor),
        state=run.state.outcome,
        started_at=utc_stamp(run.launched_wall),
        duration_ms=run.duration_ms,
        tries=max(run.tries, run.seen_backoff_try + 1),
        rate_limited=max(run.rate_limited, run.seen_backoff_try),
        usage=usage,
        record_id=record_id,
    )
    append_jsonl(metrics, record)


def release_files(run: AgentRun, desk: Desk, events: EventLog, wave: int) -> None:
    """Hand every file the agent held to the next in its queue, with its last output line."""
    note = f"{run.id} finished ({run.state.outcome}); its last output: " + last_line(
        tail_text(run.launch.paths.output_log)
    )
    for done in desk.release_all(run.id, note):
        events.emit("desk_handover", wave, run.id, path=done.path, to=done.to_agent)
