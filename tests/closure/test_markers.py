"""The marker grammar agents print: a table of single lines, then whole agent outputs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.closure.markers import (
    KINDS,
    InvalidMarker,
    Marker,
    Markers,
    clean_line,
    parse_line,
    parse_markers,
)

ESC = "\x1b"
GREEN, BOLD, RESET = f"{ESC}[32m", f"{ESC}[1;32m", f"{ESC}[0m"
GATE_PASS = "architecture=pass integration=pass durability=pass live=pass docs=pass"


def ok(kind: str, detail: str = "", **values: Any) -> dict[str, Any]:
    """A line that parses: its kind, every parsed value, and its detail."""
    return {"kind": kind, "values": values, "detail": detail}


@dataclass(frozen=True)
class Bad:
    """A line that starts like a marker but does not parse."""

    kind: str
    reason: str


PROOF_VALUES = {
    "completion": "integrated",
    "durability": "none",
    "proof": "unit",
    "state": "met",
}
EVAL_VALUES = {"state": "satisfied", "targets": 2, "benchmarks": 1, "regressions": 0}
GATE_VALUES = dict.fromkeys(("architecture", "integration", "durability", "live", "docs"), "pass")

# (id, raw line, expected outcome)
CASES: list[tuple[str, str, Any]] = [
    # -- proof ----------------------------------------------------------------------------------
    (
        "proof-basic",
        "[wave-proof] completion=integrated durability=none proof=unit state=met",
        ok("proof", **PROOF_VALUES),
    ),
    (
        "proof-upper-values",
        "[wave-proof] completion=LIVE durability=Durable proof=Integration state=GAP",
        ok("proof", completion="live", durability="durable", proof="integration", state="gap"),
    ),
    (
        "proof-detail",
        "[wave-proof] completion=contract durability=ephemeral proof=live state=gap detail=db not wired yet",
        ok(
            "proof",
            "db not wired yet",
            completion="contract",
            durability="ephemeral",
            proof="live",
            state="gap",
        ),
    ),
    (
        "proof-authoritative",
        "[wave-proof] completion=authoritative durability=durable proof=live state=met",
        ok("proof", completion="authoritative", durability="durable", proof="live", state="met"),
    ),
    (
        "proof-missing-state",
        "[wave-proof] completion=integrated durability=none proof=unit",
        Bad("proof", "missing state="),
    ),
    (
        "proof-missing-middle-key",
        "[wave-proof] completion=integrated proof=unit state=met",
        Bad("proof", "missing durability="),
    ),
    (
        "proof-out-of-order",
        "[wave-proof] durability=none completion=integrated proof=unit state=met",
        Bad("proof", "out of order"),
    ),
    (
        "proof-bad-completion",
        "[wave-proof] completion=done durability=none proof=unit state=met",
        Bad("proof", "completion= must be one of"),
    ),
    (
        "proof-bad-state",
        "[wave-proof] completion=integrated durability=none proof=unit state=ok",
        Bad("proof", "state= must be one of"),
    ),
    (
        "proof-unknown-key",
        "[wave-proof] completion=integrated durability=none proof=unit state=met extra=1",
        Bad("proof", "unexpected 'extra=1'"),
    ),
    (
        "proof-bare-word",
        "[wave-proof] completion=integrated durability=none proof=unit state=met yes",
        Bad("proof", "unexpected 'yes'"),
    ),
    ("proof-empty", "[wave-proof]", Bad("proof", "missing completion=")),
    (
        "proof-upper-key",
        "[wave-proof] COMPLETION=integrated durability=none proof=unit state=met",
        Bad("proof", "unexpected 'COMPLETION=integrated'"),
    ),
    (
        "proof-duplicate-key",
        "[wave-proof] completion=integrated durability=none proof=unit state=met state=met",
        Bad("proof", "out of order"),
    ),
    # -- doc-delta ------------------------------------------------------------------------------
    ("doc-delta-none", "[wave-doc-delta] state=none", ok("doc-delta", state="none")),
    (
        "doc-delta-paths",
        "[wave-doc-delta] state=owned paths=docs/auth.md,README.md",
        ok("doc-delta", state="owned", paths=("docs/auth.md", "README.md")),
    ),
    (
        "doc-delta-shared-plan-detail",
        "[wave-doc-delta] state=Shared-Plan paths=docs/plan.md detail=updated the roadmap",
        ok("doc-delta", "updated the roadmap", state="shared-plan", paths=("docs/plan.md",)),
    ),
    (
        "doc-delta-bad-state",
        "[wave-doc-delta] state=partial",
        Bad("doc-delta", "state= must be one of: none, owned, shared-plan"),
    ),
    # An agent that changed nothing prints the template's `paths=` with nothing after it.
    (
        "doc-delta-empty-paths",
        "[wave-doc-delta] state=owned paths=",
        ok("doc-delta", state="owned", paths=()),
    ),
    (
        "doc-delta-paths-comma-space",
        "[wave-doc-delta] state=owned paths=docs/a.md, docs/b.md detail=two pages",
        ok("doc-delta", "two pages", state="owned", paths=("docs/a.md", "docs/b.md")),
    ),
    (
        "doc-delta-paths-spaces-around-comma",
        "[wave-doc-delta] state=owned paths=docs/a.md ,  docs/b.md",
        ok("doc-delta", state="owned", paths=("docs/a.md", "docs/b.md")),
    ),
    (
        "doc-delta-paths-trailing-comma",
        "[wave-doc-delta] state=owned paths=docs/a.md,",
        ok("doc-delta", state="owned", paths=("docs/a.md",)),
    ),
    (
        "doc-delta-paths-space-separated",
        "[wave-doc-delta] state=owned paths=docs/a.md docs/b.md",
        Bad("doc-delta", "unexpected 'docs/b.md'"),
    ),
    (
        "doc-delta-paths-placeholder",
        "[wave-doc-delta] state=owned paths=<files>",
        Bad("doc-delta", "paths= needs a comma-separated list, got '<files>'"),
    ),
    (
        "doc-delta-paths-template",
        "[wave-doc-delta] state=owned paths=<comma-separated files>",
        Bad("doc-delta", "paths= needs a comma-separated list, got '<comma-separated'"),
    ),
    (
        "doc-delta-paths-before-state",
        "[wave-doc-delta] paths=a.md state=owned",
        Bad("doc-delta", "out of order"),
    ),
    # -- eval -----------------------------------------------------------------------------------
    (
        "eval-basic",
        "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0",
        ok("eval", **EVAL_VALUES),
    ),
    (
        "eval-capitalised",
        "[wave-eval] state=Satisfied targets=2 benchmarks=1 regressions=0",
        ok("eval", **EVAL_VALUES),
    ),
    (
        "eval-ids",
        "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0 target_ids=t1,t2 benchmark_ids=b1",
        ok("eval", **EVAL_VALUES, target_ids=("t1", "t2"), benchmark_ids=("b1",)),
    ),
    (
        "eval-only-benchmark-ids",
        "[wave-eval] state=needs-more-work targets=0 benchmarks=2 regressions=3 benchmark_ids=x,y detail=p95 too slow",
        ok(
            "eval",
            "p95 too slow",
            state="needs-more-work",
            targets=0,
            benchmarks=2,
            regressions=3,
            benchmark_ids=("x", "y"),
        ),
    ),
    (
        "eval-blocked",
        "[wave-eval] state=BLOCKED targets=1 benchmarks=0 regressions=0",
        ok("eval", state="blocked", targets=1, benchmarks=0, regressions=0),
    ),
    (
        "eval-ids-comma-space",
        "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0 target_ids=t1, t2 benchmark_ids=b1",
        ok("eval", **EVAL_VALUES, target_ids=("t1", "t2"), benchmark_ids=("b1",)),
    ),
    (
        "eval-empty-ids",
        "[wave-eval] state=satisfied targets=0 benchmarks=0 regressions=0 target_ids= benchmark_ids=",
        ok(
            "eval",
            state="satisfied",
            targets=0,
            benchmarks=0,
            regressions=0,
            target_ids=(),
            benchmark_ids=(),
        ),
    ),
    (
        "eval-negative",
        "[wave-eval] state=satisfied targets=-1 benchmarks=1 regressions=0",
        Bad("eval", "targets= needs a non-negative integer, got '-1'"),
    ),
    (
        "eval-fraction",
        "[wave-eval] state=satisfied targets=2 benchmarks=1.5 regressions=0",
        Bad("eval", "benchmarks= needs a non-negative integer"),
    ),
    (
        "eval-word-count",
        "[wave-eval] state=satisfied targets=two benchmarks=1 regressions=0",
        Bad("eval", "targets= needs a non-negative integer"),
    ),
    (
        "eval-missing-regressions",
        "[wave-eval] state=satisfied targets=2 benchmarks=1",
        Bad("eval", "missing regressions="),
    ),
    (
        "eval-ids-out-of-order",
        "[wave-eval] state=satisfied targets=1 benchmarks=1 regressions=0 benchmark_ids=b target_ids=a",
        Bad("eval", "target_ids= is out of order"),
    ),
    (
        "eval-bad-state",
        "[wave-eval] state=done targets=1 benchmarks=1 regressions=0",
        Bad("eval", "state= must be one of"),
    ),
    pytest.param(
        "[wave-eval] state=satisfied targets=\uff12 benchmarks=1 regressions=0",
        Bad("eval", "targets= needs a non-negative integer"),
        id="eval-unicode-digit",
    ),
    # -- security -------------------------------------------------------------------------------
    (
        "security-clear",
        "[wave-security] state=clear findings=0 approvals=0",
        ok("security", state="clear", findings=0, approvals=0),
    ),
    (
        "security-concerns-detail",
        "[wave-security] state=Concerns findings=2 approvals=1 detail=token logged at debug level",
        ok(
            "security",
            "token logged at debug level",
            state="concerns",
            findings=2,
            approvals=1,
        ),
    ),
    (
        "security-keys-out-of-order",
        "[wave-security] findings=0 approvals=0 state=clear",
        Bad("security", "keys out of order"),
    ),
    (
        "security-bad-state",
        "[wave-security] state=ok findings=0 approvals=0",
        Bad("security", "state= must be one of: clear, concerns, blocked"),
    ),
    (
        "security-negative",
        "[wave-security] state=blocked findings=-2 approvals=0",
        Bad("security", "findings= needs a non-negative integer"),
    ),
    # -- integration ----------------------------------------------------------------------------
    (
        "integration-ready",
        "[wave-integration] state=ready-for-doc-closure claims=3 conflicts=0 blockers=0",
        ok("integration", state="ready-for-doc-closure", claims=3, conflicts=0, blockers=0),
    ),
    (
        "integration-needs-work",
        "[wave-integration] state=NEEDS-MORE-WORK claims=3 conflicts=1 blockers=2 detail=A1 and A2 disagree on the schema",
        ok(
            "integration",
            "A1 and A2 disagree on the schema",
            state="needs-more-work",
            claims=3,
            conflicts=1,
            blockers=2,
        ),
    ),
    (
        "integration-missing-blockers",
        "[wave-integration] state=ready-for-doc-closure claims=3 conflicts=0",
        Bad("integration", "missing blockers="),
    ),
    (
        "integration-bad-state",
        "[wave-integration] state=ready claims=3 conflicts=0 blockers=0",
        Bad("integration", "state= must be one of"),
    ),
    # -- doc-closure ----------------------------------------------------------------------------
    ("doc-closure-closed", "[wave-doc-closure] state=closed", ok("doc-closure", state="closed")),
    (
        "doc-closure-no-change",
        "[wave-doc-closure] state=No-Change detail=nothing user-visible",
        ok("doc-closure", "nothing user-visible", state="no-change"),
    ),
    (
        "doc-closure-delta-paths",
        "[wave-doc-closure] state=delta paths=docs/a.md,docs/b.md",
        ok("doc-closure", state="delta", paths=("docs/a.md", "docs/b.md")),
    ),
    (
        "doc-closure-no-change-empty-paths",
        "[wave-doc-closure] state=no-change paths=",
        ok("doc-closure", state="no-change", paths=()),
    ),
    (
        "doc-closure-no-change-empty-paths-detail",
        "[wave-doc-closure] state=no-change paths= detail=nothing user-visible changed",
        ok("doc-closure", "nothing user-visible changed", state="no-change", paths=()),
    ),
    (
        "doc-closure-paths-comma-space",
        "[wave-doc-closure] state=closed paths=docs/a.md, docs/b.md",
        ok("doc-closure", state="closed", paths=("docs/a.md", "docs/b.md")),
    ),
    (
        "doc-closure-detail-first",
        "[wave-doc-closure] detail=state=closed",
        Bad("doc-closure", "missing state="),
    ),
    # -- gate -----------------------------------------------------------------------------------
    ("gate-all-pass", f"[wave-gate] {GATE_PASS}", ok("gate", **GATE_VALUES)),
    (
        "gate-mixed-case",
        "[wave-gate] architecture=PASS integration=Concerns durability=pass live=BLOCKED docs=pass detail=no live test",
        ok(
            "gate",
            "no live test",
            **{**GATE_VALUES, "integration": "concerns", "live": "blocked"},
        ),
    ),
    (
        "gate-missing-docs",
        "[wave-gate] architecture=pass integration=pass durability=pass live=pass",
        Bad("gate", "missing docs="),
    ),
    (
        "gate-bad-value",
        "[wave-gate] architecture=ok integration=pass durability=pass live=pass docs=pass",
        Bad("gate", "architecture= must be one of: pass, concerns, blocked"),
    ),
    (
        "gate-swapped",
        "[wave-gate] integration=pass architecture=pass durability=pass live=pass docs=pass",
        Bad("gate", "keys out of order"),
    ),
    (
        "gate-template",
        "[wave-gate] architecture=<pass|concerns|blocked> integration=<pass|concerns|blocked> "
        "durability=<pass|concerns|blocked> live=<pass|concerns|blocked> docs=<pass|concerns|blocked>",
        Bad("gate", "architecture= must be one of"),
    ),
    (
        "gate-shorthand-template",
        "[wave-gate] architecture=P integration=P durability=P live=P docs=P",
        Bad("gate", "architecture= must be one of"),
    ),
    (
        "gate-partial",
        "[wave-gate] architecture=pass integration=pass durability=",
        Bad("gate", "durability= must be one of"),
    ),
    # A sentence's full stop after the last value is not part of it.
    ("gate-trailing-period", f"[wave-gate] {GATE_PASS}.", ok("gate", **GATE_VALUES)),
    (
        "gate-unknown-dimension",
        f"[wave-gate] {GATE_PASS} perf=pass",
        Bad("gate", "unexpected 'perf=pass'"),
    ),
    # -- verdict --------------------------------------------------------------------------------
    ("verdict-pass", "[wave-verdict] pass", ok("verdict", value="pass")),
    ("verdict-PASS", "[wave-verdict] PASS", ok("verdict", value="pass")),
    ("verdict-hold", "[wave-verdict] hold", ok("verdict", value="hold")),
    ("verdict-fail", "[wave-verdict] Fail", ok("verdict", value="fail")),
    ("verdict-concerns", "[wave-verdict] concerns", ok("verdict", value="concerns")),
    (
        "verdict-blocked-detail",
        "[wave-verdict] blocked detail=no tests for the login path",
        ok("verdict", "no tests for the login path", value="blocked"),
    ),
    (
        "verdict-detail-with-equals",
        "[wave-verdict] pass detail=x=1 y = 2  and   spaces=kept",
        ok("verdict", "x=1 y = 2  and   spaces=kept", value="pass"),
    ),
    ("verdict-empty-detail", "[wave-verdict] pass detail=", ok("verdict", value="pass")),
    ("verdict-tab", "[wave-verdict]\tpass", ok("verdict", value="pass")),
    ("verdict-trailing-period", "[wave-verdict] pass.", ok("verdict", value="pass")),
    ("verdict-period-space", "[wave-verdict] Pass .", ok("verdict", value="pass")),
    (
        "verdict-period-before-detail",
        "[wave-verdict] blocked. detail=no tests.",
        ok("verdict", "no tests.", value="blocked"),
    ),
    ("verdict-two-periods", "[wave-verdict] pass..", Bad("verdict", "expected one of")),
    ("verdict-exclamation", "[wave-verdict] pass!", Bad("verdict", "expected one of")),
    ("verdict-only-period", "[wave-verdict] .", Bad("verdict", "expected one of")),
    (
        "verdict-template",
        "[wave-verdict] <pass|concerns|blocked> detail=<one sentence>",
        Bad("verdict", "expected one of"),
    ),
    ("verdict-upper-tag", "[WAVE-VERDICT] PASS", ok("verdict", value="pass")),
    ("verdict-glued", "[wave-verdict]pass", Bad("verdict", "must be followed by a space")),
    ("verdict-colon", "[wave-verdict]: pass", Bad("verdict", "must be followed by a space")),
    ("verdict-empty", "[wave-verdict]", Bad("verdict", "expected one of")),
    ("verdict-bad-word", "[wave-verdict] approved", Bad("verdict", "expected one of")),
    ("verdict-two-words", "[wave-verdict] pass fail", Bad("verdict", "expected one of")),
    ("verdict-only-detail", "[wave-verdict] detail=pass", Bad("verdict", "expected one of")),
    ("verdict-keyed", "[wave-verdict] state=pass", Bad("verdict", "expected one of")),
    # -- phase ----------------------------------------------------------------------------------
    ("phase-coding", "[wave-phase] coding", ok("phase", value="coding")),
    ("phase-validating", "[wave-phase] Validating", ok("phase", value="validating")),
    ("phase-deploying", "[wave-phase] deploying", ok("phase", value="deploying")),
    ("phase-finalizing", "[wave-phase] FINALIZING", ok("phase", value="finalizing")),
    ("phase-unknown", "[wave-phase] testing", Bad("phase", "expected one of")),
    ("phase-detail", "[wave-phase] coding detail=step 2", Bad("phase", "takes no detail")),
    ("phase-trailing-period", "[wave-phase] coding.", ok("phase", value="coding")),
    ("phase-agents", "[wave-phase] coding agents=A1", Bad("phase", "expected one of")),
    # -- agents= / owner=: which implementation agents a result is about ------------------------
    (
        "agents-on-gate",
        "[wave-gate] architecture=pass integration=blocked durability=pass live=pass docs=pass "
        "agents=A1,A2 detail=A1 and A2 disagree",
        ok(
            "gate",
            "A1 and A2 disagree",
            **{**GATE_VALUES, "integration": "blocked"},
            agents=("A1", "A2"),
        ),
    ),
    (
        "owner-on-integration",
        "[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 owner=api-1",
        ok(
            "integration",
            state="needs-more-work",
            claims=2,
            conflicts=1,
            blockers=0,
            agents=("api-1",),
        ),
    ),
    (
        "agents-before-the-keys",
        "[wave-security] agents=A3 state=blocked findings=1 approvals=0",
        ok("security", state="blocked", findings=1, approvals=0, agents=("A3",)),
    ),
    (
        "agents-comma-space-and-repeat",
        "[wave-eval] state=needs-more-work targets=1 benchmarks=0 regressions=1 agents=A1, B_2, A1",
        ok(
            "eval",
            state="needs-more-work",
            targets=1,
            benchmarks=0,
            regressions=1,
            agents=("A1", "B_2"),
        ),
    ),
    (
        "agents-on-proof",
        "[wave-proof] completion=integrated durability=none proof=unit state=met agents=A1",
        ok("proof", **PROOF_VALUES, agents=("A1",)),
    ),
    (
        "agents-on-doc-delta-and-closure",
        "[wave-doc-closure] state=delta paths=docs/a.md agents=A1 detail=A1's page is stale",
        ok(
            "doc-closure", "A1's page is stale", state="delta", paths=("docs/a.md",), agents=("A1",)
        ),
    ),
    (
        "agents-empty",
        "[wave-doc-delta] state=none agents=",
        ok("doc-delta", state="none", agents=()),
    ),
    (
        "agents-on-verdict",
        "[wave-verdict] blocked agents=A1,A2 detail=no tests for login",
        ok("verdict", "no tests for login", value="blocked", agents=("A1", "A2")),
    ),
    (
        "owner-on-verdict-with-period",
        "[wave-verdict] fail owner=A3.",
        ok("verdict", value="fail", agents=("A3",)),
    ),
    (
        "agents-before-verdict-word",
        "[wave-verdict] agents=A1 hold",
        ok("verdict", value="hold", agents=("A1",)),
    ),
    (
        "agents-template",
        "[wave-verdict] blocked agents=<id,id>",
        Bad("verdict", "agents= needs comma-separated agent ids, got '<id,id>'"),
    ),
    (
        "agents-not-an-id",
        "[wave-doc-delta] state=owned owner=docs/a.md",
        Bad("doc-delta", "owner= needs comma-separated agent ids"),
    ),
    (
        "agents-and-owner",
        "[wave-verdict] blocked agents=A1 owner=A2",
        Bad("verdict", "agents= (or owner=) may be given once"),
    ),
    (
        "agents-twice",
        f"[wave-gate] {GATE_PASS} agents=A1 agents=A2",
        Bad("gate", "may be given once"),
    ),
    ("agents-upper-key", "[wave-verdict] blocked AGENTS=A1", Bad("verdict", "expected one of")),
    # -- tolerated forms ------------------------------------------------------------------------
    ("indent-spaces", "    [wave-verdict] pass", ok("verdict", value="pass")),
    ("indent-tab", "\t[wave-phase] coding", ok("phase", value="coding")),
    ("bullet-dash", "- [wave-verdict] pass", ok("verdict", value="pass")),
    ("bullet-star", "* [wave-doc-closure] state=closed", ok("doc-closure", state="closed")),
    ("bullet-indented", "   -   [wave-verdict] hold", ok("verdict", value="hold")),
    ("backticks", "`[wave-verdict] pass`", ok("verdict", value="pass")),
    ("bullet-backticks", f"- `[wave-gate] {GATE_PASS}`", ok("gate", **GATE_VALUES)),
    ("backticks-inner-space", "` [wave-verdict] pass `", ok("verdict", value="pass")),
    ("trailing-crlf", "[wave-verdict] pass\r\n", ok("verdict", value="pass")),
    ("trailing-space", "[wave-verdict] pass   ", ok("verdict", value="pass")),
    ("ansi-around", f"{GREEN}[wave-verdict] pass{RESET}", ok("verdict", value="pass")),
    ("ansi-tag-only", f"{BOLD}[wave-verdict]{RESET} pass", ok("verdict", value="pass")),
    ("ansi-before-bullet", f"{GREEN}- {RESET}[wave-phase] coding", ok("phase", value="coding")),
    (
        "ansi-osc-title",
        f"{ESC}]0;codex{chr(7)}[wave-doc-closure] state=closed",
        ok("doc-closure", state="closed"),
    ),
    (
        "carriage-return-progress",
        "Downloading  45% |####      |\r[wave-phase] validating",
        ok("phase", value="validating"),
    ),
    (
        "carriage-return-ansi",
        f"{GREEN}⠋ thinking{RESET}\r{ESC}[2K[wave-verdict] PASS",
        ok("verdict", value="pass"),
    ),
    ("marker-then-cr-overwritten", "[wave-verdict] pass\rspinner ⠙", None),
    # -- not markers ----------------------------------------------------------------------------
    ("plain-prose", "All tests pass.", None),
    ("empty-line", "", None),
    ("mid-sentence", "I will print [wave-verdict] pass at the end.", None),
    ("quoted", '"[wave-verdict] pass"', None),
    ("two-pairs-of-backticks", "``[wave-verdict] pass``", None),
    ("triple-backticks", "```[wave-verdict] pass```", None),
    ("bold", "**[wave-verdict] pass**", None),
    ("numbered-list", "1. [wave-verdict] pass", None),
    ("dash-no-space", "-[wave-verdict] pass", None),
    ("two-bullets", "- * [wave-verdict] pass", None),
    ("no-wave-prefix", "[verdict] pass", None),
    ("numbered-tag", "[wave-1] starting agents", None),
    ("tag-with-underscore", "[wave-doc_closure] state=closed", None),
    ("space-in-tag", "[wave- verdict] pass", None),
    ("prompt-echo", "When done, print one line: [wave-proof] completion=integrated", None),
    # -- unknown kinds --------------------------------------------------------------------------
    ("unknown-kind", "[wave-foo] state=ok", Bad("foo", "unknown marker kind [wave-foo]")),
    ("unknown-kind-upper", "[WAVE-Status] done", Bad("status", "unknown marker kind")),
    ("unknown-kind-glued", "[wave-runner]x", Bad("runner", "unknown marker kind")),
]


def _case_params() -> list[Any]:
    # pytest.param() entries (a tuple subclass) carry their own id and marks.
    return [pytest.param(*c[1:], id=c[0]) if type(c) is tuple else c for c in CASES]


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    ids = [c[0] if type(c) is tuple else c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


@pytest.mark.parametrize(("line", "expected"), _case_params())
def test_parse_line(line: str, expected: Any) -> None:
    got = parse_line(line)
    if expected is None:
        assert got is None
    elif isinstance(expected, Bad):
        assert isinstance(got, InvalidMarker), got
        assert got.kind == expected.kind
        assert got.code == f"invalid-{expected.kind}-marker"
        assert expected.reason in got.reason
        assert got.line == clean_line(line)
    else:
        assert isinstance(got, Marker), got
        assert got.kind == expected["kind"]
        assert got.values == expected["values"]
        assert got.detail == expected["detail"]
        assert got.line == clean_line(line)


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("  - `[wave-verdict] pass`  ", "[wave-verdict] pass"),
        (f"{GREEN}[wave-verdict]{RESET} pass\r\n", "[wave-verdict] pass"),
        ("10%\r50%\r[wave-phase] coding", "[wave-phase] coding"),
        ("``x``", "``x``"),
        ("* keep `code` here", "keep `code` here"),
    ],
)
def test_clean_line(raw: str, cleaned: str) -> None:
    assert clean_line(raw) == cleaned


def test_marker_get() -> None:
    m = parse_line("[wave-doc-delta] state=owned")
    assert isinstance(m, Marker)
    assert m.get("state") == "owned"
    assert m.get("paths") is None


def test_marker_agents_is_the_named_ids_or_empty() -> None:
    """A gate reads ``marker.agents`` to name the agents to rerun; `owner=` is the same list."""
    named = parse_line("[wave-verdict] blocked owner=A2,A1 detail=see report")
    assert isinstance(named, Marker) and named.agents == ("A2", "A1")
    assert named.get("owner") is None and named.get("agents") == ("A2", "A1")
    unnamed = parse_line("[wave-verdict] blocked detail=agents=A1 is only prose here")
    assert isinstance(unnamed, Marker) and unnamed.agents == ()
    assert unnamed.detail == "agents=A1 is only prose here"


# -- parse_markers on whole outputs ------------------------------------------------------------
CLAUDE_OUTPUT = """\
I'll start by reading the existing auth module.

[wave-phase] coding

Now I've implemented `login()` in src/auth/login.py. The harness asked me to print
a line like [wave-proof] completion=<contract|integrated> ... when done; see below.

Here is an example of the marker format from the docs:

```
[wave-verdict] blocked detail=example only
```

[wave-phase] validating
Running the tests: 14 passed in 0.42s

- [wave-proof] completion=integrated durability=none proof=unit state=met detail=14 tests pass
- `[wave-doc-delta] state=owned paths=docs/auth.md`
"""

CODEX_OUTPUT = (
    "[2025-01-07T10:00:00] OpenAI Codex v0.58.0 (research preview)\n"
    "--------\n"
    "workdir: /repo\n"
    "model: gpt-5-codex\n"
    "--------\n"
    f"{ESC}[35m{ESC}[3mthinking{ESC}[0m{ESC}[0m\n"
    "**Planning the review**\n"
    f"{ESC}[35m{ESC}[3mexec{ESC}[0m{ESC}[0m\n"
    f"{ESC}[1mbash -lc 'pytest -q'{ESC}[0m in /repo\n"
    f"{ESC}[32m succeeded in 812ms:{ESC}[0m\n"
    "...........  [100%]\n"
    f"{ESC}[35m{ESC}[3mcodex{ESC}[0m{ESC}[0m\n"
    "Review complete.\n"
    f"{ESC}[1m[wave-gate] architecture=pass integration=pass durability=Pass live=pass docs=pass{ESC}[0m\n"
    f"{ESC}[32m[wave-verdict] PASS detail=ready to ship{ESC}[0m\n"
    "tokens used: 12,345\n"
)


def test_parse_markers_claude_style_output() -> None:
    found = parse_markers(CLAUDE_OUTPUT)
    assert isinstance(found, Markers)
    assert found.invalid == []
    assert set(found.last) == {"phase", "proof", "doc-delta", "verdict"}
    phase = found.get("phase")
    assert isinstance(phase, Marker) and phase.get("value") == "validating"
    proof = found.get("proof")
    assert isinstance(proof, Marker)
    assert proof.values == PROOF_VALUES
    assert proof.detail == "14 tests pass"
    delta = found.get("doc-delta")
    assert isinstance(delta, Marker) and delta.get("paths") == ("docs/auth.md",)
    # A ``` fence that holds only marker lines is the agent printing them: it counts.
    verdict = found.get("verdict")
    assert isinstance(verdict, Marker) and verdict.get("value") == "blocked"
    assert verdict.detail == "example only"
    # The mid-sentence mention of [wave-proof] is not a marker.
    assert found.get("gate") is None


def test_parse_markers_codex_style_output_with_ansi() -> None:
    found = parse_markers(CODEX_OUTPUT)
    assert found.invalid == []
    gate = found.get("gate")
    assert isinstance(gate, Marker) and gate.values == GATE_VALUES
    verdict = found.get("verdict")
    assert isinstance(verdict, Marker)
    assert verdict.get("value") == "pass"
    assert verdict.detail == "ready to ship"
    assert verdict.line == "[wave-verdict] PASS detail=ready to ship"


def test_parse_markers_progress_line_with_carriage_returns() -> None:
    text = (
        "building\n"
        "[#   ] 10%\r[##  ] 50%\r[####] 100%\r[wave-phase] deploying\n"
        "done\r\n"
        "[wave-integration] state=ready-for-doc-closure claims=1 conflicts=0 blockers=0\r\n"
    )
    found = parse_markers(text)
    assert found.invalid == []
    phase = found.get("phase")
    assert isinstance(phase, Marker) and phase.get("value") == "deploying"
    integration = found.get("integration")
    assert isinstance(integration, Marker) and integration.get("blockers") == 0


def test_parse_markers_splits_on_carriage_return_unlike_parse_line() -> None:
    # parse_line keeps only the text after the last \r (the marker was overwritten on screen),
    # but parse_markers uses str.splitlines(), which already splits at \r: the marker counts.
    line = "[wave-verdict] pass\rspinner ⠙"
    assert parse_line(line) is None
    verdict = parse_markers(line).get("verdict")
    assert isinstance(verdict, Marker) and verdict.get("value") == "pass"


def test_parse_markers_last_of_a_kind_wins() -> None:
    text = "\n".join(
        [
            "[wave-phase] coding",
            "[wave-security] state=blocked findings=3 approvals=0",
            "[wave-phase] finalizing",
            "[wave-security] state=concerns findings=1 approvals=1 detail=fixed two of three",
        ]
    )
    found = parse_markers(text)
    sec = found.get("security")
    assert isinstance(sec, Marker)
    assert sec.get("state") == "concerns"
    assert sec.detail == "fixed two of three"
    phase = found.get("phase")
    assert isinstance(phase, Marker) and phase.get("value") == "finalizing"
    assert found.invalid == []


def test_parse_markers_a_later_invalid_line_does_not_override_a_valid_one() -> None:
    text = "[wave-verdict] pass\nlater on...\n[wave-verdict] maybe\n"
    found = parse_markers(text)
    counted = found.get("verdict")
    assert isinstance(counted, Marker) and counted.get("value") == "pass"
    (later,) = found.invalid
    assert later.code == "invalid-verdict-marker"
    assert later.line == "[wave-verdict] maybe"
    assert "expected one of" in later.reason
    assert found.ignored == {"verdict": [later]}
    assert found.warnings("verdict") == [
        "ignored a later invalid [wave-verdict] line (expected one of: pass, concerns, blocked, "
        "hold, fail): [wave-verdict] maybe"
    ]
    assert found.warnings("gate") == []


def test_parse_markers_only_lines_after_the_counted_marker_are_warned_about() -> None:
    text = "\n".join(
        [
            "[wave-verdict] <pass|concerns|blocked>",
            "[wave-verdict] blocked",
            "[wave-verdict] pass fail",
            "[wave-verdict] concerns",
            "[wave-verdict] approved",
        ]
    )
    found = parse_markers(text)
    counted = found.get("verdict")
    assert isinstance(counted, Marker) and counted.get("value") == "concerns"
    assert [i.line for i in found.invalid] == [
        "[wave-verdict] <pass|concerns|blocked>",
        "[wave-verdict] pass fail",
        "[wave-verdict] approved",
    ]
    assert [i.line for i in found.ignored["verdict"]] == ["[wave-verdict] approved"]


def test_parse_markers_with_no_valid_line_the_last_invalid_one_stands() -> None:
    found = parse_markers("[wave-gate] architecture=pass\n[wave-gate] architecture=P docs=P\n")
    last = found.get("gate")
    assert isinstance(last, InvalidMarker) and last.line.endswith("docs=P")
    assert found.ignored == {} and found.warnings("gate") == []


def test_parse_markers_valid_after_invalid_wins_but_invalid_is_kept() -> None:
    text = (
        "[wave-eval] state=satisfied targets=two benchmarks=0 regressions=0\n"
        "oops, let me fix that\n"
        "[wave-eval] state=satisfied targets=2 benchmarks=0 regressions=0\n"
    )
    found = parse_markers(text)
    last = found.get("eval")
    assert isinstance(last, Marker) and last.get("targets") == 2
    assert len(found.invalid) == 1
    assert found.invalid[0].code == "invalid-eval-marker"
    assert "targets= needs a non-negative integer" in found.invalid[0].reason


def test_parse_markers_collects_every_invalid_marker_in_order() -> None:
    text = "\n".join(
        [
            "[wave-gate] architecture=pass",
            "[wave-proof] completion=integrated durability=none proof=unit state=met",
            "[wave-foo] bar",
            "[wave-verdict]pass",
            "[wave-gate] architecture=pass integration=pass",
        ]
    )
    found = parse_markers(text)
    assert [i.code for i in found.invalid] == [
        "invalid-gate-marker",
        "invalid-foo-marker",
        "invalid-verdict-marker",
        "invalid-gate-marker",
    ]
    assert all(isinstance(i, InvalidMarker) for i in found.invalid)
    assert found.get("gate") is found.invalid[-1]
    assert "missing durability=" in found.invalid[-1].reason
    assert isinstance(found.get("proof"), Marker)


def test_parse_markers_prose_wrapped_onto_a_marker_is_reported() -> None:
    # A wrapped sentence whose new line starts with a tag "starts like a marker".
    text = (
        "The harness asked me to print a line like\n[wave-proof] completion=<contract|live> ...\n"
    )
    found = parse_markers(text)
    assert [i.code for i in found.invalid] == ["invalid-proof-marker"]
    assert "completion= must be one of" in found.invalid[0].reason


def test_parse_markers_of_nothing() -> None:
    found = parse_markers("")
    assert found.last == {} and found.invalid == []
    assert found.get("verdict") is None
    prose = parse_markers("no markers here\nnot even [wave-verdict] pass mid-line\n")
    assert prose.last == {} and prose.invalid == []


def test_markers_inside_machine_readable_output_are_found() -> None:
    import json

    codex = "\n".join(
        [
            json.dumps({"type": "thread.started", "thread_id": "t1"}),
            json.dumps(
                {
                    "type": "item.completed",
                    "item": {
                        "id": "i1",
                        "type": "agent_message",
                        "text": "Done.\n[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0",
                    },
                }
            ),
            json.dumps(
                {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}}
            ),
        ]
    )
    claude = json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "result": "Review written.\n[wave-verdict] PASS detail=ok",
        }
    )
    opencode = json.dumps(
        {"type": "text", "part": {"type": "text", "text": "[wave-phase] validating"}}
    )
    found = parse_markers("\n".join([codex, "WARN plain stderr line", claude, opencode]))
    assert found.get("eval").get("targets") == 2  # type: ignore[union-attr]
    assert found.get("verdict").get("value") == "pass"  # type: ignore[union-attr]
    assert found.get("phase").get("value") == "validating"  # type: ignore[union-attr]


def test_a_torn_json_line_is_read_as_text() -> None:
    assert parse_markers('{"type": "result", "result": "[wave-verdict] pass').get("verdict") is None


# -- agent-style shapes: whole outputs and what they say --------------------------------------
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "markers"
GATE_TEMPLATE = (
    "[wave-gate] architecture=<pass|concerns|blocked> integration=<pass|concerns|blocked> "
    "durability=<pass|concerns|blocked> live=<pass|concerns|blocked> docs=<pass|concerns|blocked>"
)
GATE_LINE = f"[wave-gate] {GATE_PASS}"
PASSED = {"gate": GATE_VALUES, "verdict": {"value": "pass"}}


def said(found: Markers) -> dict[str, Any]:
    """What an output said, per kind: the counted marker's values, or "invalid"."""
    return {
        kind: item.values if isinstance(item, Marker) else "invalid"
        for kind, item in found.last.items()
    }


def codex_message(text: str) -> str:
    item = {"id": "item_1", "type": "agent_message", "text": text}
    return json.dumps({"type": "item.completed", "item": item})


@dataclass(frozen=True)
class Shape:
    """One output as an agent prints it, and what it says. ``fixed``: the reading before issue
    9 (every JSON string, fenced lines, the last line of a kind even if invalid) got it wrong."""

    id: str
    output: str
    says: dict[str, Any]
    warnings: int = 0
    fixed: bool = False


SHAPES = [
    # Accepted before, and still: list items, CRLF, ANSI colour, `\r` progress prefixes.
    Shape("list-items", f"Summary:\n- {GATE_LINE}\n* `[wave-verdict] pass`\n", PASSED),
    Shape("crlf", f"{GATE_LINE}\r\n[wave-verdict] pass\r\n", PASSED),
    Shape("ansi-colour", f"{BOLD}{GATE_LINE}{RESET}\n{GREEN}[wave-verdict] pass{RESET}\n", PASSED),
    Shape("progress-prefix", f"50%\r100%\r{GATE_LINE}\n⠋\r[wave-verdict] pass\n", PASSED),
    Shape("template-only", f"{GATE_TEMPLATE}\n", {"gate": "invalid"}),
    Shape("template-then-valid", f"{GATE_TEMPLATE}\n{GATE_LINE}\n", {"gate": GATE_VALUES}),
    # A later invalid line does not override a valid marker; it is a warning.
    Shape(
        "gate-then-restated-template",
        f"{GATE_LINE}\n[wave-verdict] pass\nAs asked, the format was:\n{GATE_TEMPLATE}\n",
        PASSED,
        warnings=1,
        fixed=True,
    ),
    Shape(
        "gate-then-partial-line",
        f"{GATE_LINE}\n[wave-verdict] pass\n[wave-gate] architecture=pass integration=\n",
        PASSED,
        warnings=1,
        fixed=True,
    ),
    Shape(
        "verdict-then-template",
        f"{GATE_LINE}\n[wave-verdict] pass\n[wave-verdict] <pass|concerns|blocked>\n",
        PASSED,
        warnings=1,
        fixed=True,
    ),
    # `pass.` is a valid verdict now (the parse_line table shows the grammar), so it counts.
    Shape(
        "verdict-then-trailing-period",
        f"{GATE_LINE}\n[wave-verdict] blocked\nFixed it.\n[wave-verdict] pass.\n",
        PASSED,
    ),
    # Tool output is not the agent speaking.
    Shape(
        "codex-json-cat-of-docs-and-prompt",
        (FIXTURES / "codex-json-cat-docs.jsonl").read_text(),
        PASSED,
        fixed=True,
    ),
    Shape(
        "codex-json-only-a-tool-printed-markers",
        (FIXTURES / "codex-json-tool-only.jsonl").read_text(),
        {},
        fixed=True,
    ),
    Shape(
        "claude-stream-json-tool-results-thinking-and-subagent",
        (FIXTURES / "claude-stream-json-tool-results.jsonl").read_text(),
        PASSED,
        fixed=True,
    ),
    Shape(
        "claude-json-verbose-array",
        (FIXTURES / "claude-json-verbose-tool-results.json").read_text(),
        PASSED,
        fixed=True,
    ),
    Shape(
        "opencode-json-tool-output-and-reasoning",
        (FIXTURES / "opencode-json-tool-output.jsonl").read_text(),
        PASSED,
        fixed=True,
    ),
    Shape(
        "codex-text-prompt-echo-and-exec-output",
        (FIXTURES / "codex-text-prompt-echo.log").read_text(),
        {"gate": {**GATE_VALUES, "live": "concerns"}, "verdict": {"value": "concerns"}},
        fixed=True,
    ),
    Shape(
        "codex-text-agent-said-nothing",
        (FIXTURES / "codex-text-silent.log").read_text(),
        {},
        fixed=True,
    ),
    # Examples are not verdicts: a fence holding prose does not count, one of markers only does.
    Shape(
        "fence-with-prose",
        f"The format is:\n```\nWhen done, print:\n{GATE_LINE}\n[wave-verdict] pass\n```\n",
        {},
        fixed=True,
    ),
    Shape(
        "fence-with-prose-after-the-real-markers",
        f"{GATE_LINE}\n[wave-verdict] pass\n\nA failing one looks like:\n"
        "~~~text\n# blocked example\n[wave-verdict] blocked detail=no tests\n~~~\n",
        PASSED,
        fixed=True,
    ),
    Shape(
        "fence-with-prose-in-a-json-message",
        codex_message(f"Example:\n```\nprint this:\n{GATE_LINE}\n```"),
        {},
        fixed=True,
    ),
    Shape(
        "shorter-fence-does-not-close-a-longer-one",
        f"````\nexample:\n```\n[wave-verdict] hold\n```\n````\n{GATE_LINE}\n",
        {"gate": GATE_VALUES},
        fixed=True,
    ),
    Shape(
        "fence-only-markers",
        f"Final result:\n```text\n{GATE_LINE}\n\n[wave-verdict] pass\n```\n",
        PASSED,
    ),
    Shape(
        "fence-only-markers-in-a-json-message",
        codex_message(f"Done.\n```\n{GATE_LINE}\n[wave-verdict] pass\n```"),
        PASSED,
    ),
    Shape(
        "unclosed-fence-ends-with-its-message",
        codex_message("Here is the output:\n```\nsome log")
        + "\n"
        + codex_message(f"{GATE_LINE}\n[wave-verdict] pass"),
        PASSED,
    ),
    Shape(
        "unclosed-fence-is-not-a-fence",
        f"```\n{GATE_LINE}\nAll done.\n[wave-verdict] pass\n",
        PASSED,
    ),
    Shape(
        "inline-triple-backticks-is-not-a-fence",
        f"```[wave-verdict] hold```\n{GATE_LINE}\n```\n[wave-verdict] pass\n```\n",
        PASSED,
    ),
    # paths= as agents print it (the old grammar refused both).
    Shape(
        "doc-closure-no-change-empty-paths",
        "[wave-doc-closure] state=no-change paths= detail=nothing to document\n",
        {"doc-closure": {"state": "no-change", "paths": ()}},
    ),
    Shape(
        "doc-delta-paths-comma-space",
        "[wave-doc-delta] state=owned paths=docs/a.md, docs/b.md\n",
        {"doc-delta": {"state": "owned", "paths": ("docs/a.md", "docs/b.md")}},
    ),
]


@pytest.mark.parametrize("shape", [pytest.param(s, id=s.id) for s in SHAPES])
def test_agent_style_shapes(shape: Shape) -> None:
    """Each shape a real agent prints, with what it says: only the agent's own words count,
    quoted examples do not, and a later invalid line is a warning, not the verdict."""
    found = parse_markers(shape.output)
    assert said(found) == shape.says
    assert sum(len(found.warnings(kind)) for kind in KINDS) == shape.warnings


def old_reading(output: str) -> dict[str, Any]:
    """How the parser once read an output: every JSON string and every line counted,
    fenced or not, and the last line of a kind won even when it did not parse."""
    last: dict[str, Marker | InvalidMarker] = {}
    for raw in output.splitlines():
        try:
            lines = [ln for string in _every_string(json.loads(raw)) for ln in string.splitlines()]
        except ValueError:
            lines = [raw]
        for line in lines:
            item = parse_line(line)
            if item is not None:
                last[item.kind] = item
    return said(Markers(last=last))


@pytest.mark.parametrize("shape", [pytest.param(s, id=s.id) for s in SHAPES])
def test_the_shapes_marked_fixed_are_the_ones_the_old_reading_got_wrong(shape: Shape) -> None:
    """Guards the table itself: a shape marked ``fixed`` really tests a rule the old reading
    broke (tool output, examples, later invalid lines); one not marked reads the same both ways."""
    assert (old_reading(shape.output) != shape.says) == shape.fixed


def _every_string(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _every_string(item)]
