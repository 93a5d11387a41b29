"""``dashboard.json``: the launcher's live picture of one wave, for `wave status`
and the dashboard. Written atomically, at most a few times a second, with only the fields
``state.snapshot_schema`` lists (the readers keep exactly those)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...closure.markers import ANSI_RE, Marker, output_lines, parse_line, readable_lines
from ...closure.signals import deploy_text
from ...definitions.model import AgentDef
from ...state.events import iso_time as iso
from ...state.events import utc_now
from ...state.fsutil import open_read, write_json_atomic
from ...state.layout import session_name
from ...state.lifecycle import AgentState
from ...state.snapshot_schema import EVENT, unknown_keys
from ..agent.run import AgentRun
from ..pool.streams import stream_row

MIN_INTERVAL = 0.25
FOOTER = "[wave] run ended: "  # the wrapper's last line: not the agent's own last words
Run = tuple[int, float | None] | None  # one try of an agent: its attempt and launch time
Seen = tuple[Run, tuple[int, int, int], str, tuple[str | None, str | None]]


def tail_text(path: Path, limit: int = 4096) -> str:
    try:
        with open_read(path) as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def last_line(text: str) -> str:
    """The last non-empty line a person would read (prose only, for JSON output); a marker
    line is shown as what it says (`verdict: pass`), not as its syntax."""
    plain = ANSI_RE.sub("", text).replace("\r", "\n")
    lines = [ln.strip() for ln in readable_lines(plain) if ln.strip() and not ln.startswith(FOOTER)]
    return marker_meaning(lines[-1])[:200] if lines else ""


def marker_meaning(line: str) -> str:
    """``[wave-gate] architecture=pass docs=fail detail=...`` as ``gate: architecture pass,
    docs fail (...)``; any other line as it is."""
    marker = parse_line(line)
    if not isinstance(marker, Marker):
        return line
    said = ", ".join(
        f"{key} {','.join(value) if isinstance(value, tuple) else value}"
        for key, value in marker.values.items()
    )
    if marker.kind in ("verdict", "phase") and len(marker.values) == 1:
        said = str(next(iter(marker.values.values())))
    kind = marker.kind.replace("-", " ")
    return f"{kind}: {said}" + (f" ({marker.detail})" if marker.detail else "")


def last_phase(text: str) -> str | None:
    """The agent's latest `[wave-phase]`, shown as its state while it runs."""
    return last_signals(text)[0]


def last_signals(text: str) -> tuple[str | None, str | None]:
    """The agent's latest `[wave-phase]` and `[deploy-status]` (as ``api healthy``), read
    from the tail of its output (its own words, also inside JSON output)."""
    phase = deploy = None
    for line in output_lines(text):
        marker = parse_line(line)
        if isinstance(marker, Marker) and marker.kind == "phase":
            phase = str(marker.get("value"))
        elif isinstance(marker, Marker) and marker.kind == "deploy-status":
            deploy = deploy_text(marker)
    return phase, deploy


class OutputCache:
    """Last line and phase of each agent's log, read again only when the log changed: the
    snapshot is rewritten on every state change, and re-reading every log each time would
    slow down noticing the next agent that finishes. What is kept belongs to one try (``run``:
    its attempt and launch time) and one file: the next try's log, at the same path, is
    never taken for the one before."""

    def __init__(self) -> None:
        self._seen: dict[Path, Seen] = {}
        self._final: dict[Path, Run] = {}  # logs of ended tries, read once since they ended

    def read(
        self, path: Path, final: bool = False, run: Run = None
    ) -> tuple[str, tuple[str | None, str | None]]:
        """The last line, and (phase, deploy) as ``last_signals`` has them. ``final``: the
        try ``run`` has ended, its log no longer changes once read after that."""
        cached = self._seen.get(path)
        if cached is not None and cached[0] != run:  # another try's: forgotten
            cached = None
            self._final.pop(path, None)
        if final and self._final.get(path, ()) == run and cached is not None:
            return cached[2], cached[3]
        if final and cached is not None:
            self._final[path] = run  # one more look below, then never again
        try:
            st = path.stat()
        except OSError:
            return "", (None, None)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)  # a new file may have the old's size and time
        if cached is None or cached[1] != key:
            tail = tail_text(path)
            cached = (run, key, last_line(tail), last_signals(tail))
            self._seen[path] = cached
        return cached[2], cached[3]


def agent_row(run: AgentRun, cache: OutputCache) -> dict[str, Any]:
    launch = run.launch
    final = run.state.terminal
    try_of = (launch.attempt, run.launched_wall)
    line, (phase, deploy) = (
        cache.read(launch.paths.output_log, final, try_of)
        if run.launched_wall
        else ("", (None, None))
    )
    state = "reused" if run.reused else run.state.value  # its earlier run's success stands
    if run.state is AgentState.RUNNING:
        state = phase or state
    return {
        "id": run.id,
        "role": launch.agent.role,
        "executor": launch.executor,
        "model": launch.model,
        "state": state,
        "state_note": run.state_note,  # "CLI retrying 3/10" while claude retries on its own
        "attempt": launch.attempt,
        "tries": run.tries,
        "exit_code": run.code,
        "elapsed_ms": run.duration_ms,
        "last_line": line,
        "session": launch.session,
        "detail": run.detail or None,
        "deploy": deploy,  # its last [deploy-status], as `api healthy`
        "account": launch.account,
        "sandbox": launch.sandbox_label,
        "limited_until": iso(run.limited_until) if run.limited_until else None,
        "conversation": run.conversation or None,  # its CLI's id, continued after a stop
        "continues": bool(launch.continues),
        "stream": stream_row(run),  # what it does, from its CLI's event stream (None: text)
    }


def planned_row(wave: int, agent: AgentDef, attempt: Any) -> dict[str, Any]:
    """An agent of the wave that has no run yet (a closure stage's, before its stage comes):
    listed as pending from the wave's start, so the picture has every agent of the wave."""
    return {
        "id": agent.id,
        "role": agent.role,
        "executor": agent.executor.id,
        "model": agent.executor.model,
        "state": AgentState.PENDING.value,
        "state_note": None,
        "attempt": attempt if isinstance(attempt, int) else None,
        "tries": 0,
        "exit_code": None,
        "elapsed_ms": 0,
        "last_line": "",
        "session": session_name(wave, agent.id),  # the one it will have
        "detail": None,
        "deploy": None,
        "account": agent.executor.account,
        "sandbox": None,
        "limited_until": None,
        "conversation": None,
        "continues": False,
        "stream": None,
    }


def every_agent(runs: list[AgentRun], attempt: Any, cache: OutputCache) -> list[dict[str, Any]]:
    """A row for each agent of the runs' wave, in the wave file's order: its run's, or a
    pending one while it has none."""
    rows = {run.id: agent_row(run, cache) for run in runs}
    if not runs:
        return []
    listed = [
        rows.pop(a.id) if a.id in rows else planned_row(runs[0].launch.wave.number, a, attempt)
        for a in runs[0].launch.wave.agents
    ]
    return listed + list(rows.values())


def current_failure(failure: Any, stages: Any) -> Any:
    """The last failed gate, unless its stage passed since (on a retry): the picture shows
    what holds the wave now, not what an earlier attempt got past."""
    if not isinstance(failure, dict) or not isinstance(stages, list):
        return failure
    passed = {s.get("stage") for s in stages if isinstance(s, dict) and s.get("state") == "passed"}
    return None if failure.get("stage") in passed else failure


class SnapshotWriter:
    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.header = header
        self.started_at = utc_now()
        self._last = 0.0
        self._cost = 0.0  # seconds the last frame took to build and write
        self._outputs = OutputCache()
        self.failed: OSError | None = None

    def deferred(self) -> bool:
        """Whether a frame asked for now would wait (written too recently): asked first, so
        a burst of 200 finishes does not build 200 frames only to throw them away."""
        return time.monotonic() - self._last < self._interval

    @property
    def _interval(self) -> float:
        """MIN_INTERVAL, or four times what the last frame cost when that is more: a wave of
        500 agents spends at most a fifth of its loop drawing the picture."""
        return max(MIN_INTERVAL, 4 * self._cost)

    def write(
        self,
        runs: Iterable[AgentRun],
        events: Iterable[dict[str, Any]],
        *,
        force: bool = False,
        **extra: Any,
    ) -> bool:
        """Write the frame; returns True when it was deferred (written too recently)."""
        now = time.monotonic()
        if not force and now - self._last < self._interval:
            return True
        self._last = now
        if "gate_failure" in extra:
            extra["gate_failure"] = current_failure(extra["gate_failure"], extra.get("stages"))
        runs = list(runs)
        data = {
            **self.header,
            **extra,
            "started_at": self.started_at,
            "updated_at": utc_now(),
            "agents": every_agent(runs, extra.get("attempt"), self._outputs),
            "events": [{k: e[k] for k in EVENT if k in e} for e in events],
        }
        if unknown := unknown_keys(data):  # a field no view would show: add it to the schema
            raise ValueError(f"dashboard.json fields missing from snapshot_schema: {unknown}")
        try:
            write_json_atomic(self.path, data)
        except OSError as exc:  # best effort: the picture, not the record (disk full)
            self.failed = self.failed or exc
        self._cost = time.monotonic() - now
        return False
