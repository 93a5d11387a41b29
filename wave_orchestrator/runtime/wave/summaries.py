"""Each agent's execution summary: ``summary.json`` beside its status.json, written when
the agent ends, rewritten after each gate that judges it and after every attempt of its wave.
What explains a gate decision without reading raw logs: the markers the gates read (the same
parsed result they judged), deliverables and proof artifacts with whether they exist and when
they were written, how the attempt ended with a hint, the gate's verdict on the agent, and
where its log and report are."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ...closure.gates import AgentResult, GateResult
from ...closure.markers import InvalidMarker, Marker
from ...definitions.model import AgentDef
from ...definitions.repository.paths import inside_repository
from ...state.events import utc_now, utc_stamp
from ...state.fsutil import write_json_atomic
from ...state.lifecycle import AgentState
from ...state.status import last_try_output
from ...state.untrusted import TEXT_LIMIT
from ..agent.run import AgentRun
from ..pool.streams import stream_row

# What a failed attempt's output says about why, beyond its exit code (the CLIs' own words).
MAX_TURNS_SIGNS = ("Reached max turns", "error_max_turns", "Reached maximum number of turns")
HINTS = {
    AgentState.TIMEOUT: "it ran past its budget: raise timeout_minutes, or split the task",
    AgentState.STALLED: "its output stopped growing: see the end of its log",
    AgentState.SESSION_MISSING: "its session disappeared: killed from outside, or the machine "
    "ran out of memory",
    AgentState.USAGE_LIMIT: "the account is out of quota: wait for the reset or add a fallback",
    AgentState.STATUS_UNREADABLE: "its status file was torn or tampered with",
    AgentState.CANCELLED: "stopped by a person or by the launcher",
}


def write_summaries(
    runs: Iterable[AgentRun],
    result_of: Callable[[AgentDef], AgentResult],
    gates: Mapping[str, GateResult],
) -> None:
    """The summary of every agent that ran, with the verdict of its stage's gate, of the
    infra gate and of any other gate that named it (a proof artifact another stage needed),
    as judged so far; a summary that cannot be written costs only itself."""
    for run in runs:
        write_summary(run, result_of, gates)


def write_summary(
    run: AgentRun,
    result_of: Callable[[AgentDef], AgentResult],
    gates: Mapping[str, GateResult],
) -> None:
    """One ended agent's summary: written as it ends (no gate judged it yet) and again after
    each gate that concerns it, so `wave summary` answers while its wave still runs."""
    if run.launched_wall is None or not run.state.terminal:
        return
    agent = run.launch.agent
    stage = agent.role if agent.is_closure else "implementation"
    named = {name for name, g in gates.items() if agent.id in g.agents}
    judged = [g for name, g in gates.items() if name in (stage, "infra", *named)]
    try:
        write_json_atomic(run.launch.paths.summary, summary(run, result_of(agent), judged))
    except OSError:
        return


def summary(run: AgentRun, result: AgentResult, gates: Iterable[GateResult]) -> dict[str, Any]:
    agent = run.launch.agent
    report = result.report_file if agent.is_closure else None
    failures = [
        {"gate": g.stage, "code": f.code, "detail": f.detail}
        for g in gates
        for f in g.failures
        if f.agent == agent.id
    ]
    return {
        "agent": agent.id,
        "wave": run.launch.wave.number,
        "attempt": run.launch.attempt,
        "role": agent.role,
        "executor": run.launch.executor,
        "sandbox": run.launch.sandbox_label,
        "model": run.launch.model,
        "reused": run.reused,
        "orchestrator_id": run.launch.orchestrator_id or None,
        **({"skills": run.launch.skills.record()} if run.launch.skills is not None else {}),
        "context7": run.launch.context7_mode,
        "conversation": run.conversation or None,  # to continue it by hand, or by `wave rerun`
        "continued": bool(run.launch.continues),
        "fresh_because": run.fresh_because,
        "stream": stream_row(run, catch_up=True),  # what its CLI's events said, to its end
        "status": run.state.outcome,
        "exit_code": run.code,
        "tries": run.tries,
        "termination": {
            "reason": run.state.outcome,
            "detail": run.detail or None,
            "hint": hint(run),
        },
        "markers": markers(result),
        "components": {c: m.line for c, m in result.markers.components.items()},
        "gaps": gaps_of(result),
        "deliverables": [artifact(result.repo, d) for d in agent.deliverables],
        "proof_artifacts": [
            {**artifact(result.repo, p.path), "gate": p.gate} for p in agent.proof_artifacts
        ],
        "verdict": {
            "gates": sorted({g.stage for g in gates}),
            "passed": not failures and any(True for _ in gates),
            "failures": failures,
            # what a gate that passed said of it (the open items of the integration summary)
            "warnings": [
                _cut(w) for g in gates for w in g.warnings if w.startswith(f"{agent.id}: ")
            ],
        },
        "log": str(run.launch.paths.output_log),
        "report": str(report) if report else None,
        "report_written": result.report_written() if report else None,
        "written_at": utc_now(),
    }


def repoint_report(path: Path, keep: Callable[[str | None], str | None]) -> None:
    """Point a summary at the copy ``keep`` made of its report (a worktree about to be
    removed held it); a summary that is not there or cannot be rewritten stays as it was."""
    from ...state.untrusted import read_object

    data = read_object(path)
    report = data.get("report") if data is not None else None
    if data is None or not isinstance(report, str):
        return
    kept = keep(report)
    if kept and kept != report:
        try:
            write_json_atomic(path, {**data, "report": kept})
        except OSError:
            return


def hint(run: AgentRun) -> str | None:
    """One line on why the attempt ended as it did, for a person deciding what to change."""
    if run.state is AgentState.COMPLETED:
        return None
    if run.state in HINTS:
        return HINTS[run.state]
    tail = last_try_output(run.launch.paths)[-4096:]
    if any(sign in tail for sign in MAX_TURNS_SIGNS):
        return "it reached its turn limit: raise budget_turns (max_turns), or split the task"
    if run.code is not None:
        return f"it exited {run.code}: see the end of its log"
    return "it ended without an exit code: see its log"


def gaps_of(result: AgentResult) -> list[dict[str, str]]:
    """The ``[wave-gap]`` lines the agent printed, in order (each cut to TEXT_LIMIT)."""
    return [
        {"agent": result.agent.id, "kind": _cut(g.get("kind")), "detail": _cut(g.detail)}
        for g in result.markers.gaps
    ]


def markers(result: AgentResult) -> dict[str, Any]:
    """Each kind the gates read: the line that counts and what it said (or why it did not
    parse)."""
    found: dict[str, Any] = {}
    for kind, item in result.markers.last.items():
        if isinstance(item, Marker):
            values = {k: _value(v) for k, v in item.values.items()}
            found[kind] = {
                "line": _cut(item.line),
                "values": values,
                "detail": _cut(item.detail) or None,
            }
        elif isinstance(item, InvalidMarker):
            found[kind] = {"line": _cut(item.line), "invalid": _cut(item.reason)}
    return found


def _value(value: object) -> object:
    """A marker value as the summary keeps it: numbers as they are, words and lists cut."""
    if isinstance(value, tuple):
        return [_cut(x) for x in value]
    return value if isinstance(value, int) else _cut(value)


def _cut(text: object) -> str:
    """An agent's words, as long as a summary keeps them (a 200 KB marker line is not kept)."""
    return str(text)[:TEXT_LIMIT]


def artifact(root: Path, rel: str) -> dict[str, Any]:
    """A file the agent was to leave: whether it exists and when it was last written, as the
    gates see it (a link that leads out of the repository is not the agent's file)."""
    real = inside_repository(root, rel)
    try:
        st = os.stat(real) if real is not None else None
    except OSError:
        st = None
    if st is None:
        return {"path": rel, "exists": False, "modified_at": None}
    return {"path": rel, "exists": True, "modified_at": utc_stamp(st.st_mtime)}
