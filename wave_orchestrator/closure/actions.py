"""What to do about each failed gate: one line per status code, shown with every ``gate_failed``
(event, ``wave status``, dashboard, ``--json``) and given to the retry. docs/markers.md shows the
same table; tests/closure/test_actions.py keeps the two in step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..definitions.model import is_closure_role
from .gates import AgentResult, GateResult

READ_LOG = "the briefing asks for it: read the agent's log for why it did not print it"
TARGETS_UNREPORTED = (
    "the prompt lists the targets: read the agent's log for why it did not report them"
)

ACTIONS: dict[str, str] = {
    "missing-deliverable": "check the agent's log; make the prompt name the file",
    "missing-wave-component": "the prompt asks for it: read the agent's log for why it did not "
    "print it",
    "component-level-mismatch": "finish the promotion, or change the wave's target level",
    "component-gap": "read its detail: it says what is missing",
    "component-current-level-stale": "see components.json: rerun the owner, or correct the matrix",
    "missing-proof-artifact": "the agent promised this file: read its log (or wave summary ID) "
    "for why it did not write it",
    "missing-wave-proof": READ_LOG,
    "wave-proof-gap": "read its detail=: it says what is missing",
    "completion-gap": "the work is less finished than agreed; retry or lower the contract",
    "durability-gap": "the work is less finished than agreed; retry or lower the contract",
    "proof-level-gap": "the work is less finished than agreed; retry or lower the contract",
    "missing-doc-delta": READ_LOG,
    "doc-impact-gap": "the docs were not updated as agreed",
    "open-blocker": "resolve the blocker (wave coord resolve ID) or answer it; the retry reruns "
    "the agents it names",
    "missing-wave-eval": READ_LOG,
    "cont-eval-needs-more-work": "read its detail and log",
    "cont-eval-blocked": "read its detail and log",
    "cont-eval-regressions": "fix the regressions",
    "cont-eval-count-mismatch": "the evaluator miscounted: tighten its prompt",
    "missing-cont-eval-target-ids": TARGETS_UNREPORTED,
    "cont-eval-target-mismatch": "evaluate exactly the declared targets, or change eval_targets",
    "missing-cont-eval-benchmark-ids": TARGETS_UNREPORTED,
    "cont-eval-benchmark-mismatch": "run the pinned benchmarks; report only catalog benchmarks "
    "(or add it to the catalog)",
    "missing-cont-eval-report": "its first owned file must be the report",
    "missing-wave-security": READ_LOG,
    "missing-security-report": "its first owned file must be the report",
    "invalid-security-clear-state": "the reviewer contradicts itself: use concerns",
    "security-blocked": "read the report and fix the findings",
    "missing-wave-integration": READ_LOG,
    "integration-needs-more-work": "read its detail; the retry reruns integration and later stages",
    "integration-open-request": "answer or close it (wave coord resolve ID); the retry reruns "
    "the agent that asked",
    "integration-claim-conflict": "decide who owns the file and resolve the other claim "
    "(wave coord resolve ID)",
    "integration-unresolved-claim": "resolve the claim once its work is done (wave coord "
    "resolve ID); the retry reruns its agent",
    "missing-doc-closure": READ_LOG,
    "doc-closure-open": "finish the docs",
    "missing-wave-gate": READ_LOG,
    "missing-cont-qa-verdict": READ_LOG,
    "cont-qa-concerns": "read the QA report",
    "cont-qa-blocked": "read the QA report",
    "missing-cont-qa-report": "its first owned file must be the report",
    "deploy-failed": "read the agent's log and the detail; fix or roll back, then relaunch",
}
PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gate-[a-z]+-(concerns|blocked)"), "read the QA report for that dimension"),
    (
        re.compile(r"invalid-[a-z-]+-marker"),
        "the detail shows the line and why; fix the prompt's example",
    ),
    (re.compile(r"agent-[a-z-]+"), "see its log (wave logs --lane L ID)"),
    (
        re.compile(r"infra-[a-z0-9_-]+"),
        "the signal's detail says what is wrong with the target: fix it (or approve the "
        "action), then relaunch; the retry reruns the implementation agent that checked it",
    ),
)
FALLBACK = "read the gate's detail and the agent's log (wave logs --lane L ID)"


def action_for(code: str | None) -> str:
    """The one line a person (or the retry) should act on for this gate status code."""
    if code is None:
        return FALLBACK
    if code in ACTIONS:
        return ACTIONS[code]
    for pattern, action in PATTERNS:
        if pattern.fullmatch(code):
            return action
    return FALLBACK


def failure_summary(
    gate: GateResult, results: Sequence[AgentResult], logs: Mapping[str, Path]
) -> dict[str, str | None]:
    """What every view of a failed gate shows: code, detail, the action line, and where to read
    more (the named agent's report, if it is a closure agent, and its log)."""
    first = gate.failures[0] if gate.failures else None
    agent = first.agent if first else None
    result = next((r for r in results if r.agent.id == agent), None)
    report = result.report_file if result and is_closure_role(result.agent.role) else None
    return {
        "stage": gate.stage,
        "status": gate.code,
        "detail": gate.detail,
        "action": action_for(gate.code),
        "agent": agent,
        "report": str(report) if report else None,
        "log": str(logs[agent]) if agent is not None and agent in logs else None,
    }
