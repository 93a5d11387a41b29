"""What a closure agent is told to print and write, line by line, so that an agent that follows it
literally passes its gate, and one that reports a problem fails it with the documented code.

The same ``ClosureGuide`` data feeds the prompt and docs/markers.md's tables (a test keeps them
in agreement), so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..definitions.model import AgentDef, EvalTarget


class ClosureGuide(NamedTuple):
    """One closure role: the lines of its passing form, a failing example and its gate code."""

    role: str
    job: str
    passing: tuple[str, ...]
    meanings: tuple[str, ...]
    failing: tuple[str, ...]
    failing_code: str
    report_required: bool
    report_contents: str


AGENTS_HINT = (
    "agents=ID,ID (optional, before detail=): the implementation agents whose work must be redone; "
    "the retry reruns exactly those. Without it, agent ids written in detail count."
)

GUIDES: dict[str, ClosureGuide] = {
    "cont-eval": ClosureGuide(
        role="cont-eval",
        job="Evaluate the wave's work against its targets and benchmarks.",
        passing=("[wave-eval] state=satisfied targets=0 benchmarks=0 regressions=0",),
        meanings=(
            "state: satisfied (the targets are met), needs-more-work, or blocked; "
            "only satisfied passes.",
            "targets, benchmarks: how many targets and benchmarks you checked (whole numbers; "
            "replace 0 with your counts). Optional target_ids=a,b and benchmark_ids=a,b "
            "must list exactly that many ids.",
            "regressions: how many regressions you found; anything but 0 fails the gate.",
        ),
        failing=(
            "[wave-eval] state=needs-more-work targets=2 benchmarks=1 regressions=0 agents=A1 "
            "detail=the p90 latency target is missed",
        ),
        failing_code="cont-eval-needs-more-work",
        report_required=False,
        report_contents="each target and benchmark you checked, with its result",
    ),
    "security": ClosureGuide(
        role="security",
        job="Review the wave's changes for security problems.",
        passing=("[wave-security] state=clear findings=0 approvals=0",),
        meanings=(
            "state: clear (nothing found), concerns (findings that do not block, recorded as a "
            "warning), or blocked (the wave must not ship); blocked fails the gate.",
            "findings: how many problems you found; approvals: how many of them need a person's "
            "approval. state=clear requires findings=0 approvals=0.",
        ),
        failing=(
            "[wave-security] state=blocked findings=1 approvals=0 agents=A1 "
            "detail=the login endpoint logs passwords",
        ),
        failing_code="security-blocked",
        report_required=True,
        report_contents="what you reviewed and every finding, with the file and line",
    ),
    "integration": ClosureGuide(
        role="integration",
        job="Check that the agents' pieces fit together.",
        passing=("[wave-integration] state=ready-for-doc-closure claims=0 conflicts=0 blockers=0",),
        meanings=(
            "state: ready-for-doc-closure (the pieces fit) or needs-more-work; only "
            "ready-for-doc-closure passes.",
            "claims: how many of the agents' claims you checked; conflicts: how many pieces "
            "disagree; blockers: how many problems stop the wave (whole numbers).",
        ),
        failing=(
            "[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 agents=A2 "
            "detail=the page posts to /auth but the endpoint is /login",
        ),
        failing_code="integration-needs-more-work",
        report_required=False,
        report_contents="each claim you checked and each conflict you found",
    ),
    "documentation": ClosureGuide(
        role="documentation",
        job="Bring the documentation in line with what the wave changed.",
        passing=("[wave-doc-closure] state=no-change paths=",),
        meanings=(
            "state: closed (you updated the docs; list them after paths=), no-change (no doc "
            "needed changing; paths= may stay empty), or delta (docs still need changes); "
            "closed and no-change pass, delta fails.",
            "paths: the documentation files you changed, comma-separated "
            "(paths=docs/a.md,docs/b.md), or nothing.",
        ),
        failing=(
            "[wave-doc-closure] state=delta paths=docs/auth.md "
            "detail=the login flow is not documented yet",
        ),
        failing_code="doc-closure-open",
        report_required=False,
        report_contents="which documents you changed and why",
    ),
    "cont-qa": ClosureGuide(
        role="cont-qa",
        job="Decide whether the wave is done: review every agent's work against its task.",
        passing=(
            "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass",
            "[wave-verdict] pass",
        ),
        meanings=(
            "[wave-gate]: one word for each of architecture, integration, durability, live and "
            "docs: pass, concerns or blocked. Every value must be pass for the gate to pass; "
            "any other fails it with the code gate-<dimension>-<value>.",
            "[wave-verdict]: pass, concerns or blocked, your overall verdict; only pass passes. "
            "Add ` detail=why` after the word when it is not pass.",
        ),
        failing=(
            "[wave-gate] architecture=pass integration=blocked durability=pass live=pass "
            "docs=pass agents=A2 detail=the login page never calls the endpoint",
            "[wave-verdict] blocked detail=the login page never calls the endpoint",
        ),
        failing_code="gate-integration-blocked",
        report_required=True,
        report_contents=(
            "what you checked for each agent, what you found, and as its last line "
            "`Verdict: PASS` (or CONCERNS or BLOCKED, the same word as [wave-verdict])"
        ),
    ),
}


def report_path(agent: AgentDef) -> str | None:
    """The closure agent's report file: its first owned path that names a file."""
    return next((p for p in agent.owns if not p.endswith("/")), None)


def eval_guide(targets: Sequence[EvalTarget], catalog: Sequence[str]) -> ClosureGuide:
    """The cont-eval guide for a wave that declares its targets: the passing line filled in
    with them, and what the gate then also requires."""
    guide = GUIDES["cont-eval"]
    ids = ",".join(t.id for t in targets)
    pinned = [b for t in targets for b in t.benchmarks]
    bench = ",".join(dict.fromkeys(pinned))
    passing = (
        f"[wave-eval] state=satisfied targets={len(targets)} "
        f"benchmarks={len(dict.fromkeys(pinned))} regressions=0 target_ids={ids} "
        f"benchmark_ids={bench}"
    )
    meanings = (
        *guide.meanings,
        f"This wave declares its targets: target_ids= must list exactly {ids}.",
        "benchmark_ids= must list every benchmark you ran (benchmarks= is their count)"
        + (f", including the pinned ones: {bench}" if bench else "")
        + (f"; only ids of the lane's catalog: {', '.join(catalog)}." if catalog else "."),
    )
    return guide._replace(passing=(passing,), meanings=meanings, report_required=True)


def closure_instructions(
    agent: AgentDef, targets: Sequence[EvalTarget] = (), catalog: Sequence[str] = ()
) -> str:
    """The ``## your gate`` section of a closure agent's prompt (``targets``, ``catalog``:
    the wave's eval_targets and the lane's benchmarks, for a cont-eval agent)."""
    guide = GUIDES[agent.role]
    if agent.role == "cont-eval" and targets:
        guide = eval_guide(targets, catalog)
    report = report_path(agent)
    lines = [f"## your gate: {guide.role}", guide.job, ""]
    if report:
        need = "required: the gate fails without it" if guide.report_required else "keep it short"
        lines += [
            f"1. Write your report to: {report}",
            f"   Write it in this run ({need}). It must contain {guide.report_contents}.",
        ]
    elif guide.report_required:
        lines += [
            "1. This gate needs a report file, and you own none: the gate will fail with a",
            "   missing report. Say so in your output; the lane must give you a file in `owns`.",
        ]
    else:
        lines.append("1. No report file is needed for this gate.")
    lines += [
        "2. When the work passes, print these lines exactly, each on a line of its own:",
        "",
        *guide.passing,
        "",
        "What the values mean:",
        *(f"- {m}" for m in guide.meanings),
        f"- {AGENTS_HINT}",
        "- detail=... (optional, always last): free text saying why.",
        "",
        f"3. When it does not pass, print the same lines with the real values, for example "
        f"(the gate then fails with {guide.failing_code}):",
        "",
        *guide.failing,
        "",
        "Print marker lines as plain lines of your own message: not as a template with <...>, "
        "and not inside a code block that also holds other text. The last valid line of each "
        "kind counts.",
    ]
    return "\n".join(lines) + "\n"


class PreviousAttempt(NamedTuple):
    """How one agent's previous attempt ended, for the retry note in its next prompt."""

    agent: str
    attempt: int
    status: str
    code: int | None
    detail: str
    tail: tuple[str, ...]  # the last lines of its own output


def retry_section(
    attempt: int, previous: PreviousAttempt | None, gate: Sequence[str], choice: str
) -> str:
    """The ``## why you are running again`` section of a relaunched agent's prompt."""
    lines = ["## why you are running again", f"This is attempt {attempt} of this wave."]
    if previous is not None:
        code = "none" if previous.code is None else str(previous.code)
        lines.append(
            f"Your attempt {previous.attempt} ended: status {previous.status}, exit code {code}"
            + (f", {previous.detail}" if previous.detail else "")
            + "."
        )
        if previous.tail:
            lines.append("The last lines of your output then:")
            lines += [f"    {line}" for line in previous.tail]
    lines += list(gate)
    lines.append(f"Chosen for this attempt: {choice}")
    lines.append("Fix what is described above before anything else, then finish your task.")
    return "\n".join(lines) + "\n"
