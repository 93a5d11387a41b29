"""The metrics record of each finished attempt, with the usage its log reports.

The usage is read from the agent's whole log, line by line; a big log is read on a worker
thread, so that the main loop goes on noticing other agents' finishes, timeouts and signals
meanwhile (an agent that printed 100 MB once held the launcher for 30 s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ...agents.executors import reasoning_for
from ...agents.usage import read_usage_file
from ...errors import WaveError
from ...metrics.records import metrics_record
from ...state.events import utc_now, utc_stamp
from ...state.jsonl import append_jsonl
from ...state.layout import StateLayout
from ...state.logs import Logger, in_context
from ..agent.run import AgentRun

log = Logger(__name__)

INLINE_BYTES = 4 * 1024 * 1024  # a log up to this size is read at once, on the main loop


class MetricsWriter:
    """Appends one record per finished attempt to ``metrics.jsonl``; ``wait`` at a wave's end."""

    def __init__(
        self,
        layout: StateLayout,
        lane: str,
        wave: int,
        on_cost: Callable[[str, float | None], None] | None = None,
    ) -> None:
        self.on_cost = on_cost  # the governor, told what each finished agent cost
        self.path = layout.metrics
        self.verdicts = layout.verdicts
        self.recorded: list[str] = []  # ids of the records this wave run wrote
        self.lane = lane
        self.wave = wave
        self._workers: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def record(self, run: AgentRun, record_id: str) -> None:
        """Write ``run``'s record now, or soon when its log is big."""
        self.recorded.append(record_id)
        launch = run.launch
        assert run.launched_wall is not None
        fields = {  # taken now: the run is not read again from the worker thread
            "lane": self.lane,
            "wave": self.wave,
            "agent": run.id,
            "role": launch.agent.role,
            "executor": launch.executor,
            "reasoning": reasoning_for(launch.agent.executor, launch.executor),
            "state": run.state.outcome,
            "started_at": utc_stamp(run.launched_wall),
            "duration_ms": run.duration_ms,
            "tries": max(run.tries, run.seen_backoff_try + 1),
            "rate_limited": max(run.rate_limited, run.seen_backoff_try),
            "record_id": record_id,
            "attempt": launch.attempt,
        }
        settings = launch.agent.executor.settings_for(launch.executor)
        args = (launch.executor, settings, launch.paths.output_log, launch.model, fields)
        try:
            big = launch.paths.output_log.stat().st_size > INLINE_BYTES
        except OSError:
            big = False
        if not big:
            self._write(*args)
            return
        if self._workers is None:
            self._workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wave-metrics")
        self._pending.append(self._workers.submit(in_context(self._write_logged), *args))

    def _write(
        self,
        executor: str,
        settings: Any,
        log_path: Path,
        model: str | None,
        fields: dict[str, Any],
    ) -> None:
        usage = read_usage_file(executor, settings, log_path)
        if self.on_cost is not None:
            self.on_cost(executor, usage.cost_usd)
        record = metrics_record(**fields, model=usage.model or model, usage=usage)
        append_jsonl(self.path, record)

    def _write_logged(self, *args: Any) -> None:
        try:
            self._write(*args)
        except (OSError, WaveError) as exc:
            log.warning("metrics record failed", agent=args[4]["agent"], error=str(exc))

    def record_id(self, run: AgentRun) -> str:
        """``<lane>:<wave>:<agent>:<attempt>:<launch ms>``: one per launched attempt."""
        launched_ms = int((run.launched_wall or 0) * 1000)
        return f"{self.lane}:{self.wave}:{run.id}:{run.launch.attempt}:{launched_ms}"

    def reused(self, run: AgentRun) -> None:
        """A run of an earlier wave run whose work this one reuses: judged again with it."""
        self.recorded.append(self.record_id(run))

    def verdict(self, completed: bool, final_runs: Iterable[AgentRun]) -> None:
        """What the wave's gates made of the runs it recorded: exit 0 is not yet the work
        accepted (`wave metrics` shows both). Accepted are the runs whose work the completed
        wave kept (each agent's last); an earlier attempt's run of an agent that ran again,
        and every run of a failed wave, was not."""
        accepted = [self.record_id(r) for r in final_runs if completed and r.launched_wall]
        record = {
            "id": f"{self.lane}:{self.wave}:verdict:{utc_now()}",
            "kind": "verdict",
            "lane": self.lane,
            "wave": self.wave,
            "judged": self.recorded,
            "accepted": [i for i in accepted if i in self.recorded],
        }
        try:
            append_jsonl(self.verdicts, record)
        except OSError as exc:  # a full disk loses one verdict, not the wave
            log.warning("metrics verdict not written", error=str(exc))

    def wait(self) -> None:
        """Until every record asked for is written (a wave ends with its metrics complete)."""
        for future in self._pending:
            future.result()
        self._pending.clear()
        if self._workers is not None:
            self._workers.shutdown(wait=True)
            self._workers = None
