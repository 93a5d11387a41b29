"""What a wave retry relaunches, and why: the agents a failed gate names,
the failed implementation agents, or a closure stage alone, each with a note for its prompt.

A closure gate names implementation agents with ``agents=A1,A2`` (or ``owner=``) on its marker;
without that field, any implementation agent id written as a word in the failure's detail counts.
A cont-qa ``blocked`` that names no one reruns the implementation agents whose deliverables are
missing or were not written by their last attempt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ...agents.briefings import PreviousAttempt, report_path, retry_section
from ...closure.gates import AgentResult, GateResult
from ...closure.markers import Marker, readable_lines
from ...definitions.model import EMPTY, AgentDef, WaveDef
from ...state.events import EventLog
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import last_try_output
from ...state.untrusted import TEXT_LIMIT
from ..agent.run import AgentRun

log = Logger(__name__)

WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
TAIL_LINES = 20
NOTE_LIMIT = 50_000  # a restored "why you run again" longer than this is cut


class RetryPlan(NamedTuple):
    """What one attempt launches: implementation agents, then closure stages from one on."""

    agents: list[AgentDef]
    first_stage: int
    reason: str = ""  # one line: why this attempt runs (status, dashboard, events)
    notes: Mapping[str, str] = EMPTY  # agent id -> "why you run again"

    def saved(self) -> dict[str, Any]:
        """The plan as run-state.json keeps it, so that `--resume` after a launcher died
        mid-retry carries on with the same targets, not with a fresh plan."""
        return {
            "agents": [a.id for a in self.agents],
            "first_stage": self.first_stage,
            "reason": self.reason,
            "notes": dict(self.notes),
        }

    @classmethod
    def restored(cls, saved: Any, wave: WaveDef) -> RetryPlan | None:
        """The plan run-state.json kept, every field checked against the wave (a hand-edited
        or foreign value gives None: the resumed attempt then plans anew)."""
        if not isinstance(saved, dict):
            return None
        ids, stage = saved.get("agents"), saved.get("first_stage")
        known = {a.id: a for a in wave.implementation_agents}
        stages = len(wave.closure_stages())
        if not isinstance(ids, list) or not all(isinstance(i, str) and i in known for i in ids):
            return None
        if not isinstance(stage, int) or isinstance(stage, bool) or not 0 <= stage <= stages:
            return None
        reason, notes = saved.get("reason"), saved.get("notes")
        kept = {
            k: v[:NOTE_LIMIT]
            for k, v in (notes.items() if isinstance(notes, dict) else ())
            if k in known and isinstance(v, str)
        }
        agents = [a for a in wave.implementation_agents if a.id in ids]
        return cls(agents, stage, reason[:TEXT_LIMIT] if isinstance(reason, str) else "", kept)


def named_agents(
    gate: GateResult, results: Sequence[AgentResult], implementation: Sequence[AgentDef]
) -> list[AgentDef]:
    """The implementation agents a failed closure gate names, in wave-file order."""
    ids = {a.id for a in implementation}
    failing = {f.agent for f in gate.failures}
    named: set[str] = set()
    explicit = False
    for result in results:
        if result.agent.id not in failing:
            continue
        for marker in result.markers.last.values():
            if isinstance(marker, Marker):
                listed = marker.agents
                explicit = explicit or bool(listed)
                named |= set(listed) & ids
    if not explicit:
        for failure in gate.failures:
            named |= set(WORD_RE.findall(failure.said)) & ids  # its words, never wave's
    return [a for a in implementation if a.id in named]


def unfinished_deliverables(
    implementation: Sequence[AgentDef], latest: Mapping[str, AgentRun], repo: Path
) -> list[AgentDef]:
    """Implementation agents with a deliverable missing, or older than their last launch."""
    out = []
    for agent in implementation:
        run = latest.get(agent.id)
        launched = run.launched_wall if run is not None else None
        for deliverable in agent.deliverables:
            try:
                mtime = (repo / deliverable).stat().st_mtime
            except OSError:
                out.append(agent)
                break
            if launched is not None and mtime < launched - 1:
                out.append(agent)
                break
    return out


def previous_attempt(run: AgentRun) -> PreviousAttempt:
    """How an agent's last attempt ended, with the last lines of its own output."""
    text = last_try_output(run.launch.paths) if run.launched_wall is not None else ""
    lines = [line for line in readable_lines(text) if line.strip()][-TAIL_LINES:]
    return PreviousAttempt(
        agent=run.id,
        attempt=run.launch.attempt,
        status=run.state.outcome,
        code=run.code,
        detail=run.detail,
        tail=tuple(lines),
    )


def gate_lines(gate: GateResult, wave: WaveDef, named: Sequence[AgentDef]) -> list[str]:
    """What the prompt says about a failed gate: stage, code, detail, report, agents named."""
    lines = [f"The {gate.stage} gate failed with {gate.code}: {gate.detail}"]
    for failure in gate.failures[1:]:
        lines.append(f"  also {failure.code}" + (f" ({failure.agent})" if failure.agent else ""))
    reports = []
    for failure in gate.failures:
        if failure.agent and failure.agent in {a.id for a in wave.agents}:
            path = report_path(wave.agent(failure.agent))
            if path and path not in reports:
                reports.append(path)
    if reports:
        lines.append(f"Report: {', '.join(reports)}")
    lines.append("Agents it names: " + (", ".join(a.id for a in named) if named else "none"))
    return lines + gate.notes


def notes_for(
    agents: Sequence[AgentDef],
    latest: Mapping[str, AgentRun],
    attempt: int,
    gate_text: Sequence[str],
    choice: str,
) -> dict[str, str]:
    """The "why you are running again" section of each relaunched agent's prompt."""
    notes = {}
    for agent in agents:
        run = latest.get(agent.id)
        previous = previous_attempt(run) if run is not None else None
        notes[agent.id] = retry_section(attempt, previous, gate_text, choice)
    return notes


def plan_closure_retry(
    wave: WaveDef,
    stage_index: int,
    gate: GateResult | None,
    results: Sequence[AgentResult],
    latest: Mapping[str, AgentRun],
    repo: Path,
    next_attempt: int,
    stopped_by_person: Callable[[AgentDef], bool],
) -> RetryPlan:
    """After a closure gate failed: the implementation agents it names (then the whole sweep
    again), else that stage alone and the stages after it."""
    stage, members = wave.closure_stages()[stage_index]
    if gate is None:  # interrupted before its gate was judged
        return RetryPlan([], stage_index, f"the {stage} stage did not finish")
    impl = wave.implementation_agents
    named = named_agents(gate, results, impl)
    why = "named by the gate"
    if not named and stage == "cont-qa" and any(f.code.endswith("-blocked") for f in gate.failures):
        named = unfinished_deliverables(impl, latest, repo)
        why = "cont-qa blocked naming no agent, and their deliverables are missing or stale"
    named = [a for a in named if not stopped_by_person(a)]
    text = gate_lines(gate, wave, named)
    if named:
        ids = ", ".join(a.id for a in named)
        choice = f"rerun {ids} ({why}), then the whole closure sweep"
        notes = notes_for([*named, *members], latest, next_attempt, text, choice)
        return RetryPlan(
            named, 0, f"{stage} gate failed ({gate.code}): rerunning {ids}, {why}", notes
        )
    choice = f"rerun the {stage} stage and the stages after it; no implementation agent named"
    return RetryPlan(
        [],
        stage_index,
        f"{stage} gate failed ({gate.code}): rerunning the {stage} stage",
        notes_for(members, latest, next_attempt, text, choice),
    )


def plan_failed_retry(
    failed: Sequence[AgentRun],
    next_executor: Callable[[AgentRun], str],
    stopped_by_person: Callable[[AgentDef], bool],
    latest: Mapping[str, AgentRun],
    next_attempt: int,
    first_stage: int,
) -> RetryPlan | None:
    """Rerun the implementation agents that did not succeed, but not one a person stopped nor
    one out of usage quota with no other executor left to try (None: nothing to rerun)."""
    retry = []
    for run in failed:
        agent = run.launch.agent
        stuck = run.state is AgentState.USAGE_LIMIT and next_executor(run) == run.launch.executor
        if not stuck and not stopped_by_person(agent):
            retry.append(agent)
    if not retry:
        return None
    ids = ", ".join(a.id for a in retry)
    said = "; ".join(f"{r.id} {r.state.outcome} ({why_ended(r)})" for r in failed)
    choice = f"rerun {ids}, the agents that did not succeed"
    notes = notes_for(retry, latest, next_attempt, [], choice)
    return RetryPlan(retry, first_stage, f"{said}: rerunning {ids}", notes)


def why_ended(run: AgentRun) -> str:
    """How an agent's attempt ended, in a few words."""
    return run.detail or ("no exit code" if run.code is None else f"exit {run.code}")


def failure_reason(failures: Sequence[AgentRun], gate: GateResult | None) -> str:
    """Why a wave failed, in one line for run-state.json and the summary."""
    parts = [
        f"{r.id}: {r.state.outcome}" + (f" ({r.detail})" if r.detail else "") for r in failures
    ]
    if gate is not None:
        parts += [
            f"{gate.stage} gate: {f.code}"
            + (f" ({f.agent}: {f.detail})" if f.agent else f" ({f.detail})")
            for f in gate.failures
        ]
    return "; ".join(parts)


def announce_retry(events: EventLog, wave: WaveDef, attempt: int, plan: RetryPlan) -> None:
    """The ``wave_retry`` event and log line: which agents (or which stage) run again, and why."""
    stage = wave.closure_stages()[plan.first_stage][0] if not plan.agents else None
    agents = [a.id for a in plan.agents]
    events.emit(
        "wave_retry",
        wave.number,
        attempt=attempt,
        agents=agents,
        stage=stage,
        reason=plan.reason or None,
    )
    log.info(
        "wave retry",
        attempt=attempt,
        agents=", ".join(agents) or None,
        stage=stage,
        reason=plan.reason or None,
    )
