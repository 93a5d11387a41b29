"""How a launch ended, in the words each reader gets: ``LaunchResult`` (the exit code, the
message and ``--json``), the failure text a person reads on the terminal, and the documents
the lane's notification sinks are told when a wave or the whole lane ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...notify.documents import document
from ...state.lifecycle import AgentState
from ..agent.run import AgentRun
from ..wave.context import WaveOutcome


@dataclass
class LaunchResult:
    lane: str
    outcomes: list[WaveOutcome] = field(default_factory=list)
    code: int = 0
    message: str = ""

    def conclude(self, signum: int | None, repo: Path) -> None:
        """The exit code and message of a launch that ran its waves (or was interrupted):
        128 + the signal, 4 for a wave blocked with nothing safe to retry, 1 for a failure."""
        last = self.outcomes[-1] if self.outcomes else None
        if signum is not None:
            self.code = 128 + signum
            self.message = f"interrupted by signal {signum}: wave recorded cancelled"
        elif last is not None and last.state == "failed":
            self.code = 4 if last.blocked else 1
            self.message = failure_text(last, repo)

    def to_json(self) -> dict[str, Any]:
        return {"lane": self.lane, "code": self.code, "waves": [_wave(o) for o in self.outcomes]}


def _wave(outcome: WaveOutcome) -> dict[str, Any]:
    ended = outcome.state == "completed"
    gate = outcome.gate
    return {
        "wave": outcome.wave,
        "state": outcome.state,
        "attempts": outcome.attempts,
        "blocked": outcome.blocked,
        "failures": [] if ended else [_failure(r) for r in outcome.failures],
        "runs": outcome.runs,
        "gate": {"stage": gate.stage, "failures": [f.fields() for f in gate.failures]}
        if gate is not None and not ended
        else None,
    }


def _failure(run: AgentRun) -> dict[str, Any]:
    log = run.launch.paths.output_log
    return {
        "agent": run.id,
        "status": run.state.outcome,
        "code": run.code,
        "detail": run.detail or None,
        "log": str(log) if log.exists() else None,
    }


def failure_text(outcome: WaveOutcome, repo: Path) -> str:
    """A failed wave for a person: the gate's failures, then each failed agent with its log
    (relative to the repository)."""
    blocked = " (blocked: nothing safe to retry)" if outcome.blocked else ""
    if outcome.note:
        blocked = f" ({outcome.note})"
    lines = [f"wave {outcome.wave} failed after {outcome.attempts} attempt(s){blocked}:"]
    if outcome.gate is not None:
        for f in outcome.gate.failures:
            who = f"{f.agent}: " if f.agent else ""
            lines.append(f"  - {outcome.gate.stage} gate: {f.code} ({who}{f.detail})")
    for run in outcome.failures:
        log = run.launch.paths.output_log
        try:
            shown = log.relative_to(repo)
        except ValueError:
            shown = log
        detail = f" ({run.detail})" if run.detail else ""
        failed = run.code not in (None, 0) and run.state is AgentState.FAILED
        code = f", exit {run.code}" if failed else ""
        where = f", log: {shown}" if log.exists() else ""  # a job never submitted has none
        lines.append(f"  - {run.id}: {run.state.outcome}{detail}{code}{where}")
    return "\n".join(lines)


def wave_ended(lane: str, outcome: WaveOutcome, repo: Path) -> dict[str, Any] | None:
    """What a person hears of how a wave ended (notify: wave-completed, -failed, -blocked);
    None for a wave that was stopped: whoever stopped it knows."""
    if outcome.state == "cancelled":
        return None
    failed = outcome.state != "completed"
    kind = "wave-blocked" if failed and outcome.blocked else f"wave-{outcome.state}"
    gate = outcome.gate.failures if outcome.gate is not None else []
    agent = next((r.id for r in outcome.failures), next((f.agent for f in gate), None))
    reason = failure_text(outcome, repo).splitlines()[1:3] if failed else []
    return document(  # a completed wave names none: an earlier attempt's failure is over
        kind,
        lane,
        wave=outcome.wave,
        agent=(agent or None) if failed else None,
        reason=(outcome.note or "; ".join(line.strip(" -") for line in reason) or None)
        if failed
        else None,
        command=f"wave status --lane {lane}",
    )


def lane_done(lane: str, waves: int) -> dict[str, Any]:
    """What a person hears when every selected wave of the lane completed."""
    return document(
        "lane-done",
        lane,
        reason=f"{waves} wave(s) completed",
        command=f"wave status --lane {lane}",
    )
