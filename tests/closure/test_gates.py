"""The closure gates and the implementation gate: one test per status code."""

from __future__ import annotations

from pathlib import Path

import pytest

from wave_orchestrator.closure.gates import (
    AgentResult,
    GateResult,
    judge_cont_eval,
    judge_cont_qa,
    judge_documentation,
    judge_integration,
    judge_security,
    judge_stage,
)
from wave_orchestrator.closure.implementation_gate import judge_implementation
from wave_orchestrator.closure.markers import parse_markers
from wave_orchestrator.definitions.model import AgentDef, EvalTarget, ExecutorSpec, ExitContract

PROOF_MET = "[wave-proof] completion=integrated durability=none proof=unit state=met"
DELTA_OWNED = "[wave-doc-delta] state=owned paths=docs/auth.md"
EVAL_OK = "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0"
SEC_CLEAR = "[wave-security] state=clear findings=0 approvals=0"
INTEGRATION_OK = "[wave-integration] state=ready-for-doc-closure claims=2 conflicts=0 blockers=0"
CLOSED = "[wave-doc-closure] state=closed"
DIMENSIONS = ("architecture", "integration", "durability", "live", "docs")
GATE_OK = "[wave-gate] " + " ".join(f"{d}=pass" for d in DIMENSIONS)
VERDICT_OK = "[wave-verdict] pass"

QA_REPORT = "docs/reviews/wave-1-cont-qa.md"
SEC_REPORT = "docs/reviews/wave-1-security.md"


def make_agent(
    agent_id: str = "A1",
    role: str = "implementation",
    owns: tuple[str, ...] = (),
    deliverables: tuple[str, ...] = (),
    exit_contract: ExitContract | None = None,
) -> AgentDef:
    return AgentDef(
        id=agent_id,
        title=f"agent {agent_id}",
        role=role,
        executor=ExecutorSpec(id="local"),
        prompt="do the work",
        owns=owns,
        deliverables=deliverables,
        exit_contract=exit_contract,
    )


def make_result(
    repo: Path,
    agent: AgentDef,
    *lines: str,
    status: str = "success",
    code: int | None = 0,
) -> AgentResult:
    text = "Working on it...\n" + "\n".join(lines) + "\nDone.\n"
    return AgentResult(agent, status, code, parse_markers(text), repo)


def write(repo: Path, rel: str, text: str = "report\n") -> Path:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def codes(gate: GateResult) -> list[str]:
    return [f.code for f in gate.failures]


def only_failure(gate: GateResult, code: str, agent: str | None = "A1") -> str:
    """Assert the gate failed with exactly one failure of ``code``; return its detail."""
    assert codes(gate) == [code], gate.failures
    assert gate.failures[0].agent == agent
    assert not gate.passed
    assert gate.code == code
    return gate.failures[0].detail


# -- implementation gate (7.3) ------------------------------------------------------------------
def impl(
    repo: Path,
    *lines: str,
    contract: ExitContract | None = None,
    deliverables: tuple[str, ...] = ("src/auth/login.py",),
    create: bool = True,
) -> GateResult:
    agent = make_agent(owns=("src/auth/",), deliverables=deliverables, exit_contract=contract)
    if create:
        for d in deliverables:
            write(repo, d, "def login(): ...\n")
    return judge_implementation([make_result(repo, agent, *lines)])


def test_implementation_passes(tmp_path: Path) -> None:
    gate = impl(tmp_path, PROOF_MET, DELTA_OWNED, contract=ExitContract())
    assert gate.passed and gate.failures == [] and gate.code is None
    assert gate.stage == "implementation"


def test_implementation_passes_with_levels_above_the_contract(tmp_path: Path) -> None:
    contract = ExitContract(
        completion="authoritative", durability="ephemeral", proof="integration", doc_impact="owned"
    )
    gate = impl(
        tmp_path,
        "[wave-proof] completion=live durability=durable proof=live state=met",
        "[wave-doc-delta] state=shared-plan",
        contract=contract,
    )
    assert gate.passed, gate.failures


def test_missing_deliverable(tmp_path: Path) -> None:
    gate = impl(tmp_path, PROOF_MET, DELTA_OWNED, contract=ExitContract(), create=False)
    detail = only_failure(gate, "missing-deliverable")
    assert "src/auth/login.py does not exist" in detail


def test_missing_deliverable_one_failure_per_file(tmp_path: Path) -> None:
    write(tmp_path, "src/auth/a.py")
    agent = make_agent(owns=("src/auth/",), deliverables=("src/auth/a.py", "src/auth/b.py", "c"))
    gate = judge_implementation([make_result(tmp_path, agent)])
    assert codes(gate) == ["missing-deliverable", "missing-deliverable"]
    assert "src/auth/b.py" in gate.failures[0].detail
    assert "c does not exist" in gate.failures[1].detail


def test_no_exit_contract_checks_only_deliverables(tmp_path: Path) -> None:
    assert impl(tmp_path, contract=None).passed  # no markers at all, and that is fine
    gate = impl(
        tmp_path, "[wave-proof] nonsense", contract=None, deliverables=("x.py",), create=False
    )
    assert only_failure(gate, "missing-deliverable") == "x.py does not exist"


def test_missing_wave_proof(tmp_path: Path) -> None:
    gate = impl(tmp_path, DELTA_OWNED, contract=ExitContract())
    assert "no [wave-proof] marker" in only_failure(gate, "missing-wave-proof")


def test_wave_proof_gap(tmp_path: Path) -> None:
    gate = impl(
        tmp_path,
        "[wave-proof] completion=integrated durability=none proof=unit state=gap detail=no db yet",
        DELTA_OWNED,
        contract=ExitContract(),
    )
    assert only_failure(gate, "wave-proof-gap") == "no db yet"


def test_wave_proof_gap_without_detail(tmp_path: Path) -> None:
    gate = impl(
        tmp_path,
        "[wave-proof] completion=integrated durability=none proof=unit state=GAP",
        DELTA_OWNED,
        contract=ExitContract(),
    )
    assert "state=gap" in only_failure(gate, "wave-proof-gap")


@pytest.mark.parametrize(
    ("contract", "proof", "code", "detail"),
    [
        (
            ExitContract(completion="authoritative"),
            "completion=integrated durability=none proof=unit",
            "completion-gap",
            "completion=integrated is below the contract's authoritative",
        ),
        (
            ExitContract(completion="live"),
            "completion=contract durability=none proof=unit",
            "completion-gap",
            "completion=contract is below the contract's live",
        ),
        (
            ExitContract(durability="durable"),
            "completion=integrated durability=ephemeral proof=unit",
            "durability-gap",
            "durability=ephemeral is below the contract's durable",
        ),
        (
            ExitContract(durability="ephemeral"),
            "completion=integrated durability=none proof=unit",
            "durability-gap",
            "durability=none is below the contract's ephemeral",
        ),
        (
            ExitContract(proof="integration"),
            "completion=integrated durability=none proof=unit",
            "proof-level-gap",
            "proof=unit is below the contract's integration",
        ),
        (
            ExitContract(proof="live"),
            "completion=live durability=durable proof=integration",
            "proof-level-gap",
            "proof=integration is below the contract's live",
        ),
    ],
)
def test_level_gaps(
    tmp_path: Path, contract: ExitContract, proof: str, code: str, detail: str
) -> None:
    gate = impl(tmp_path, f"[wave-proof] {proof} state=met", DELTA_OWNED, contract=contract)
    assert only_failure(gate, code) == detail


def test_every_level_gap_and_the_state_gap_together(tmp_path: Path) -> None:
    contract = ExitContract(completion="live", durability="durable", proof="live")
    gate = impl(
        tmp_path,
        "[wave-proof] completion=contract durability=none proof=unit state=gap",
        DELTA_OWNED,
        contract=contract,
    )
    assert codes(gate) == ["wave-proof-gap", "completion-gap", "durability-gap", "proof-level-gap"]


def test_missing_doc_delta(tmp_path: Path) -> None:
    gate = impl(tmp_path, PROOF_MET, contract=ExitContract(doc_impact="owned"))
    assert "no [wave-doc-delta] marker" in only_failure(gate, "missing-doc-delta")


@pytest.mark.parametrize(
    ("impact", "state"),
    [("owned", "none"), ("shared-plan", "owned"), ("shared-plan", "none")],
)
def test_doc_impact_gap(tmp_path: Path, impact: str, state: str) -> None:
    gate = impl(
        tmp_path,
        PROOF_MET,
        f"[wave-doc-delta] state={state}",
        contract=ExitContract(doc_impact=impact),
    )
    detail = only_failure(gate, "doc-impact-gap")
    assert detail == f"doc delta state={state} is below the contract's {impact}"


def test_doc_impact_none_needs_no_doc_delta(tmp_path: Path) -> None:
    assert impl(tmp_path, PROOF_MET, contract=ExitContract(doc_impact="none")).passed
    # ... and an invalid doc-delta marker is then not even looked at.
    gate = impl(
        tmp_path,
        PROOF_MET,
        "[wave-doc-delta] state=bogus",
        contract=ExitContract(doc_impact="none"),
    )
    assert gate.passed


def test_implementation_invalid_proof_marker(tmp_path: Path) -> None:
    gate = impl(
        tmp_path,
        "[wave-proof] completion=integrated durability=none proof=unit state=done",
        DELTA_OWNED,
        contract=ExitContract(),
    )
    detail = only_failure(gate, "invalid-proof-marker")
    assert "state= must be one of" in detail
    assert "state=done" in detail


def test_implementation_invalid_doc_delta_marker(tmp_path: Path) -> None:
    gate = impl(tmp_path, PROOF_MET, "[wave-doc-delta] owned", contract=ExitContract())
    assert "[wave-doc-delta] owned" in only_failure(gate, "invalid-doc-delta-marker")


def test_implementation_failures_name_their_agent(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    good = make_agent("A1", owns=("a.py",), deliverables=("a.py",), exit_contract=ExitContract())
    bad = make_agent("B2", owns=("b.py",), deliverables=("b.py",), exit_contract=ExitContract())
    gate = judge_implementation(
        [
            make_result(tmp_path, good, PROOF_MET, DELTA_OWNED),
            make_result(tmp_path, bad, DELTA_OWNED),
        ]
    )
    assert [(f.code, f.agent) for f in gate.failures] == [
        ("missing-deliverable", "B2"),
        ("missing-wave-proof", "B2"),
    ]
    assert gate.detail.startswith("B2: b.py does not exist; B2: no [wave-proof]")


# -- cont-eval ----------------------------------------------------------------------------------
def cont_eval(repo: Path, *lines: str) -> GateResult:
    agent = make_agent("E0", role="cont-eval", owns=("docs/eval.md",))
    return judge_cont_eval([make_result(repo, agent, *lines)])


def test_cont_eval_passes(tmp_path: Path) -> None:
    assert cont_eval(tmp_path, EVAL_OK).passed
    ids = f"{EVAL_OK} target_ids=t1,t2 benchmark_ids=b1 detail=all green"
    assert cont_eval(tmp_path, ids).passed
    assert cont_eval(
        tmp_path, "[wave-eval] state=Satisfied targets=0 benchmarks=0 regressions=0"
    ).passed


def test_missing_wave_eval(tmp_path: Path) -> None:
    gate = cont_eval(tmp_path, "[wave-phase] validating")
    assert "no [wave-eval] marker" in only_failure(gate, "missing-wave-eval", "E0")


def test_cont_eval_needs_more_work(tmp_path: Path) -> None:
    gate = cont_eval(
        tmp_path,
        "[wave-eval] state=needs-more-work targets=2 benchmarks=1 regressions=0 detail=t2 fails",
    )
    assert only_failure(gate, "cont-eval-needs-more-work", "E0") == "t2 fails"
    gate = cont_eval(
        tmp_path, "[wave-eval] state=needs-more-work targets=2 benchmarks=1 regressions=0"
    )
    assert "needs more work" in only_failure(gate, "cont-eval-needs-more-work", "E0")


def test_cont_eval_blocked(tmp_path: Path) -> None:
    gate = cont_eval(
        tmp_path, "[wave-eval] state=blocked targets=2 benchmarks=1 regressions=0 detail=no GPU"
    )
    assert only_failure(gate, "cont-eval-blocked", "E0") == "no GPU"


def test_cont_eval_regressions(tmp_path: Path) -> None:
    gate = cont_eval(tmp_path, "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=3")
    assert only_failure(gate, "cont-eval-regressions", "E0") == "regressions=3"


@pytest.mark.parametrize(
    ("tail", "detail"),
    [
        ("target_ids=t1", "targets=2 but target_ids lists 1"),
        ("target_ids=t1,t2,t3", "targets=2 but target_ids lists 3"),
        ("benchmark_ids=b1,b2", "benchmarks=1 but benchmark_ids lists 2"),
        ("target_ids=t1,t2 benchmark_ids=b1,b2", "benchmarks=1 but benchmark_ids lists 2"),
    ],
)
def test_cont_eval_count_mismatch(tmp_path: Path, tail: str, detail: str) -> None:
    gate = cont_eval(tmp_path, f"{EVAL_OK} {tail}")
    assert only_failure(gate, "cont-eval-count-mismatch", "E0") == detail


def test_cont_eval_invalid_marker_alone(tmp_path: Path) -> None:
    gate = cont_eval(tmp_path, "[wave-eval] state=satisfied targets=-1 benchmarks=1 regressions=0")
    detail = only_failure(gate, "invalid-eval-marker", "E0")
    assert "targets= needs a non-negative integer" in detail


def test_cont_eval_valid_marker_after_an_invalid_one(tmp_path: Path) -> None:
    assert cont_eval(tmp_path, "[wave-eval] state=ok", EVAL_OK).passed


# -- cont-eval against declared targets --------------------------------------------------------
TARGETS = (EvalTarget("latency"), EvalTarget("throughput", ("tput",)))
CATALOG = ("p99", "tput")
TARGETED = "[wave-eval] state=satisfied targets=2 benchmarks=2 regressions=0"


def targeted(repo: Path, *lines: str, report: bool = True) -> GateResult:
    agent = make_agent("E0", role="cont-eval", owns=("docs/eval.md",))
    if report:
        write(repo, "docs/eval.md")
    return judge_cont_eval([make_result(repo, agent, *lines)], TARGETS, CATALOG)


def test_declared_targets_pass_when_reported_exactly_with_the_report(tmp_path: Path) -> None:
    line = f"{TARGETED} target_ids=throughput,latency benchmark_ids=tput,p99"
    assert targeted(tmp_path, line).passed


def test_missing_cont_eval_target_ids(tmp_path: Path) -> None:
    gate = targeted(tmp_path, f"{TARGETED} benchmark_ids=tput,p99")
    detail = only_failure(gate, "missing-cont-eval-target-ids", "E0")
    assert detail == "the wave declares targets latency,throughput: target_ids= must list them"


def test_cont_eval_target_mismatch(tmp_path: Path) -> None:
    gate = targeted(tmp_path, f"{TARGETED} target_ids=latency,cost benchmark_ids=tput,p99")
    assert only_failure(gate, "cont-eval-target-mismatch", "E0") == (
        "target_ids=latency,cost but the wave declares latency,throughput "
        "(missing throughput; not declared cost)"
    )


def test_missing_cont_eval_benchmark_ids(tmp_path: Path) -> None:
    gate = targeted(tmp_path, f"{TARGETED} target_ids=latency,throughput")
    only_failure(gate, "missing-cont-eval-benchmark-ids", "E0")


@pytest.mark.parametrize(
    ("benchmarks", "detail"),
    [
        ("p99,p50", "pinned benchmark(s) tput missing from benchmark_ids"),
        ("tput,gpu", "benchmark_ids names gpu, not in the lane's catalog (p99,tput)"),
    ],
)
def test_cont_eval_benchmark_mismatch(tmp_path: Path, benchmarks: str, detail: str) -> None:
    line = f"{TARGETED} target_ids=latency,throughput benchmark_ids={benchmarks}"
    codes_and_details = [(f.code, f.detail) for f in targeted(tmp_path, line).failures]
    assert ("cont-eval-benchmark-mismatch", detail) in codes_and_details


def test_declared_targets_need_the_report_and_no_regressions(tmp_path: Path) -> None:
    line = "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=1 "
    line += "target_ids=latency,throughput benchmark_ids=tput"
    gate = targeted(tmp_path, line, report=False)
    assert codes(gate) == ["missing-cont-eval-report", "cont-eval-regressions"]


def test_without_declared_targets_no_ids_or_report_are_needed(tmp_path: Path) -> None:
    assert cont_eval(tmp_path, EVAL_OK).passed  # no report file, no id lists: as before


# -- security -----------------------------------------------------------------------------------
def reviewer(agent_id: str, report: str | None = None) -> AgentDef:
    report = report or f"docs/reviews/wave-1-{agent_id}.md"
    return make_agent(agent_id, role="security", owns=("docs/reviews/", report))


def security(repo: Path, first: list[str], second: list[str], reports: bool = True) -> GateResult:
    s1, s2 = reviewer("S1"), reviewer("S2")
    if reports:
        write(repo, "docs/reviews/wave-1-S1.md")
        write(repo, "docs/reviews/wave-1-S2.md")
    return judge_security([make_result(repo, s1, *first), make_result(repo, s2, *second)])


def test_security_passes_when_every_reviewer_is_clear(tmp_path: Path) -> None:
    gate = security(tmp_path, [SEC_CLEAR], ["[wave-security] state=CLEAR findings=0 approvals=0"])
    assert gate.passed and gate.warnings == []
    assert gate.stage == "security"


def test_missing_wave_security(tmp_path: Path) -> None:
    gate = security(tmp_path, [SEC_CLEAR], ["I found nothing."])
    assert "no [wave-security] marker" in only_failure(gate, "missing-wave-security", "S2")


def test_missing_security_report(tmp_path: Path) -> None:
    write(tmp_path, "docs/reviews/wave-1-S1.md")
    s1, s2 = reviewer("S1"), reviewer("S2")
    gate = judge_security(
        [make_result(tmp_path, s1, SEC_CLEAR), make_result(tmp_path, s2, SEC_CLEAR)]
    )
    detail = only_failure(gate, "missing-security-report", "S2")
    assert "docs/reviews/wave-1-S2.md does not exist" in detail


def test_missing_security_report_when_nothing_owned_names_a_file(tmp_path: Path) -> None:
    agent = make_agent("S1", role="security", owns=("docs/reviews/",))
    gate = judge_security([make_result(tmp_path, agent, SEC_CLEAR)])
    assert "(no owned file)" in only_failure(gate, "missing-security-report", "S1")


def test_security_missing_marker_and_report_both_reported(tmp_path: Path) -> None:
    gate = security(tmp_path, [], [SEC_CLEAR], reports=False)
    assert [(f.code, f.agent) for f in gate.failures] == [
        ("missing-wave-security", "S1"),
        ("missing-security-report", "S1"),
        ("missing-security-report", "S2"),
    ]


@pytest.mark.parametrize(
    "marker",
    [
        "[wave-security] state=clear findings=2 approvals=0",
        "[wave-security] state=clear findings=0 approvals=1",
    ],
)
def test_invalid_security_clear_state(tmp_path: Path, marker: str) -> None:
    gate = security(tmp_path, [SEC_CLEAR], [marker])
    detail = only_failure(gate, "invalid-security-clear-state", "S2")
    assert detail.startswith("state=clear with findings=")


def test_security_blocked(tmp_path: Path) -> None:
    gate = security(
        tmp_path,
        ["[wave-security] state=blocked findings=1 approvals=0 detail=SQL injection in /login"],
        [SEC_CLEAR],
    )
    assert only_failure(gate, "security-blocked", "S1") == "SQL injection in /login"


def test_security_concerns_pass_with_a_warning(tmp_path: Path) -> None:
    gate = security(
        tmp_path,
        [SEC_CLEAR],
        ["[wave-security] state=concerns findings=1 approvals=1 detail=rate limiting is weak"],
    )
    assert gate.passed
    assert len(gate.warnings) == 1
    assert gate.warnings[0].startswith("S2:")
    assert "rate limiting is weak" in gate.warnings[0]


def test_security_invalid_marker(tmp_path: Path) -> None:
    gate = security(tmp_path, ["[wave-security] state=clear findings=0"], [SEC_CLEAR])
    assert "missing approvals=" in only_failure(gate, "invalid-security-marker", "S1")


# -- integration --------------------------------------------------------------------------------
def integration(repo: Path, *lines: str) -> GateResult:
    agent = make_agent("I0", role="integration", owns=("docs/integration.md",))
    return judge_integration([make_result(repo, agent, *lines)])


def test_integration_passes(tmp_path: Path) -> None:
    assert integration(tmp_path, INTEGRATION_OK).passed


def test_missing_wave_integration(tmp_path: Path) -> None:
    gate = integration(tmp_path, "[wave-phase] finalizing")
    assert "no [wave-integration] marker" in only_failure(gate, "missing-wave-integration", "I0")


def test_integration_needs_more_work(tmp_path: Path) -> None:
    gate = integration(
        tmp_path,
        "[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 detail=A1/A2 clash",
    )
    assert only_failure(gate, "integration-needs-more-work", "I0") == "A1/A2 clash"
    line = "[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0"
    gate = integration(tmp_path, line)
    assert only_failure(gate, "integration-needs-more-work", "I0") == line


def test_integration_invalid_marker(tmp_path: Path) -> None:
    gate = integration(tmp_path, "[wave-integration] state=done claims=1 conflicts=0 blockers=0")
    assert "state= must be one of" in only_failure(gate, "invalid-integration-marker", "I0")


# -- documentation ------------------------------------------------------------------------------
def documentation(repo: Path, *lines: str) -> GateResult:
    agent = make_agent("D0", role="documentation", owns=("docs/",))
    return judge_documentation([make_result(repo, agent, *lines)])


@pytest.mark.parametrize(
    "marker",
    [
        CLOSED,
        "[wave-doc-closure] state=no-change",
        "[wave-doc-closure] state=Closed paths=a.md",
        # The documented line with nothing changed: an empty `paths=`.
        "[wave-doc-closure] state=no-change paths= detail=nothing user-visible changed",
    ],
)
def test_documentation_passes(tmp_path: Path, marker: str) -> None:
    assert documentation(tmp_path, marker).passed


def test_missing_doc_closure(tmp_path: Path) -> None:
    gate = documentation(tmp_path, "I updated the docs.")
    assert "no [wave-doc-closure] marker" in only_failure(gate, "missing-doc-closure", "D0")


def test_doc_closure_open(tmp_path: Path) -> None:
    gate = documentation(
        tmp_path, "[wave-doc-closure] state=delta paths=docs/a.md detail=a.md stale"
    )
    assert only_failure(gate, "doc-closure-open", "D0") == "a.md stale"


def test_documentation_invalid_marker(tmp_path: Path) -> None:
    gate = documentation(tmp_path, "[wave-doc-closure] state=open")
    assert "[wave-doc-closure] state=open" in only_failure(gate, "invalid-doc-closure-marker", "D0")


# -- cont-qa ------------------------------------------------------------------------------------
def qa_agent(owns: tuple[str, ...] = ("docs/reviews/", QA_REPORT)) -> AgentDef:
    return make_agent("Q0", role="cont-qa", owns=owns)


def cont_qa(repo: Path, *lines: str, report: str | None = "# Review\nAll good.\n") -> GateResult:
    if report is not None:
        write(repo, QA_REPORT, report)
    return judge_cont_qa([make_result(repo, qa_agent(), *lines)])


def test_cont_qa_passes(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, VERDICT_OK)
    assert gate.passed, gate.failures
    assert gate.stage == "cont-qa"
    assert cont_qa(tmp_path, GATE_OK, "[wave-verdict] PASS detail=ship it").passed


def test_missing_wave_gate(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, VERDICT_OK)
    assert "no [wave-gate] marker" in only_failure(gate, "missing-wave-gate", "Q0")


def test_missing_cont_qa_verdict(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report="# Review\nThe verdict is in the marker.\n")
    detail = only_failure(gate, "missing-cont-qa-verdict", "Q0")
    assert "no [wave-verdict] marker" in detail


@pytest.mark.parametrize(
    ("marker", "code", "detail"),
    [
        ("[wave-verdict] concerns", "cont-qa-concerns", "verdict concerns"),
        ("[wave-verdict] HOLD", "cont-qa-concerns", "verdict hold"),
        ("[wave-verdict] hold detail=docs missing", "cont-qa-concerns", "docs missing"),
        ("[wave-verdict] blocked", "cont-qa-blocked", "verdict blocked"),
        ("[wave-verdict] Fail", "cont-qa-blocked", "verdict fail"),
        ("[wave-verdict] fail detail=tests red", "cont-qa-blocked", "tests red"),
    ],
)
def test_cont_qa_verdicts(tmp_path: Path, marker: str, code: str, detail: str) -> None:
    gate = cont_qa(tmp_path, GATE_OK, marker)
    assert only_failure(gate, code, "Q0") == detail


@pytest.mark.parametrize("dimension", DIMENSIONS)
@pytest.mark.parametrize("value", ["concerns", "blocked"])
def test_gate_dimension(tmp_path: Path, dimension: str, value: str) -> None:
    marker = GATE_OK.replace(f"{dimension}=pass", f"{dimension}={value.upper()}")
    gate = cont_qa(tmp_path, marker, VERDICT_OK)
    assert only_failure(gate, f"gate-{dimension}-{value}", "Q0") == marker
    gate = cont_qa(tmp_path, f"{marker} detail=see report", VERDICT_OK)
    assert only_failure(gate, f"gate-{dimension}-{value}", "Q0") == "see report"


def test_gate_several_dimensions_fail_together(tmp_path: Path) -> None:
    marker = (
        "[wave-gate] architecture=pass integration=blocked durability=pass live=concerns "
        "docs=concerns"
    )
    gate = cont_qa(tmp_path, marker, VERDICT_OK)
    assert codes(gate) == ["gate-integration-blocked", "gate-live-concerns", "gate-docs-concerns"]


def test_missing_cont_qa_report(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, VERDICT_OK, report=None)
    detail = only_failure(gate, "missing-cont-qa-report", "Q0")
    assert f"{QA_REPORT} does not exist" in detail


def test_missing_cont_qa_report_and_no_verdict(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report=None)
    assert codes(gate) == ["missing-cont-qa-verdict", "missing-cont-qa-report"]


def test_missing_cont_qa_report_when_only_folders_are_owned(tmp_path: Path) -> None:
    agent = qa_agent(owns=("docs/reviews/",))
    gate = judge_cont_qa([make_result(tmp_path, agent, GATE_OK, VERDICT_OK)])
    assert "(no owned file)" in only_failure(gate, "missing-cont-qa-report", "Q0")


@pytest.mark.parametrize(
    "line",
    [
        "Verdict: PASS",
        "verdict: pass",
        "**Verdict:** PASS",
        "## Verdict: PASS — ready to ship",
        "- Verdict: `PASS`",
        "> **Verdict**: **pass**",
    ],
)
def test_cont_qa_verdict_from_the_report(tmp_path: Path, line: str) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report=f"# Wave 1 review\n\nAll checks done.\n\n{line}\n")
    assert gate.passed, gate.failures


@pytest.mark.parametrize(
    ("line", "code", "detail"),
    [
        ("Verdict: HOLD", "cont-qa-concerns", "verdict hold"),
        ("**Verdict:** concerns", "cont-qa-concerns", "verdict concerns"),
        ("Verdict: BLOCKED", "cont-qa-blocked", "verdict blocked"),
        ("## Verdict: fail (tests red)", "cont-qa-blocked", "verdict fail"),
    ],
)
def test_cont_qa_failing_verdict_from_the_report(
    tmp_path: Path, line: str, code: str, detail: str
) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report=f"# Review\n{line}\n")
    assert only_failure(gate, code, "Q0") == detail


def test_cont_qa_last_verdict_line_of_the_report_counts(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report="Verdict: BLOCKED\n\nafter fixes:\nVerdict: PASS\n")
    assert gate.passed
    gate = cont_qa(tmp_path, GATE_OK, report="Verdict: PASS\n\nre-checked:\nVerdict: HOLD\n")
    assert only_failure(gate, "cont-qa-concerns", "Q0") == "verdict hold"


def test_cont_qa_marker_verdict_wins_over_the_report(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, "[wave-verdict] blocked", report="Verdict: PASS\n")
    assert only_failure(gate, "cont-qa-blocked", "Q0") == "verdict blocked"


def test_cont_qa_report_is_the_first_owned_file(tmp_path: Path) -> None:
    write(tmp_path, "docs/reviews/second.md", "Verdict: PASS\n")
    write(tmp_path, "docs/reviews/first.md", "Verdict: FAIL\n")
    agent = qa_agent(owns=("docs/reviews/", "docs/reviews/first.md", "docs/reviews/second.md"))
    result = make_result(tmp_path, agent, GATE_OK)
    assert result.report_file == tmp_path / "docs/reviews/first.md"
    gate = judge_cont_qa([result])
    assert only_failure(gate, "cont-qa-blocked", "Q0") == "verdict fail"


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("Verdict: BLOCKED.", id="trailing-period"),
        pytest.param("Verdict: FAIL, see below", id="trailing-comma"),
        pytest.param("Verdict: REJECTED", id="unknown-word"),
        pytest.param("Verdict: TBD", id="placeholder"),
    ],
)
def test_cont_qa_unrecognised_report_verdict_does_not_pass(tmp_path: Path, line: str) -> None:
    gate = cont_qa(tmp_path, GATE_OK, report=f"# Review\n{line}\n")
    assert not gate.passed


@pytest.mark.parametrize(
    ("lines", "code", "reason"),
    [
        (
            (VERDICT_OK, "[wave-gate] architecture=pass"),
            "invalid-gate-marker",
            "missing integration=",
        ),
        (
            (GATE_OK, "[wave-verdict] passed"),
            "invalid-verdict-marker",
            "expected one of",
        ),
        ((GATE_OK, "[wave-verdict]pass"), "invalid-verdict-marker", "must be followed by a space"),
    ],
)
def test_cont_qa_invalid_markers(
    tmp_path: Path, lines: tuple[str, ...], code: str, reason: str
) -> None:
    gate = cont_qa(tmp_path, *lines, report="Verdict: PASS\n")
    assert reason in only_failure(gate, code, "Q0")


def test_cont_qa_invalid_verdict_marker_is_not_rescued_by_the_report(tmp_path: Path) -> None:
    gate = cont_qa(tmp_path, GATE_OK, "[wave-verdict] okay", report="Verdict: PASS\n")
    assert codes(gate) == ["invalid-verdict-marker"]


def test_cont_qa_a_later_invalid_verdict_is_a_warning(tmp_path: Path) -> None:
    """A verdict restated as its template after the real one does not fail the gate."""
    gate = cont_qa(tmp_path, GATE_OK, VERDICT_OK, "[wave-verdict] <pass|concerns|blocked>")
    assert gate.passed, gate.failures
    assert gate.warnings == [
        "Q0: ignored a later invalid [wave-verdict] line (expected one of: pass, concerns, "
        "blocked, hold, fail): [wave-verdict] <pass|concerns|blocked>"
    ]


# -- a later invalid line: the last *valid* marker counts, the later line is a warning ----------
@pytest.mark.parametrize(
    ("stage", "role", "valid", "invalid", "code"),
    [
        ("cont-eval", "cont-eval", EVAL_OK, "[wave-eval] state=satisfied", "invalid-eval-marker"),
        ("security", "security", SEC_CLEAR, "[wave-security] clear", "invalid-security-marker"),
        (
            "integration",
            "integration",
            INTEGRATION_OK,
            "[wave-integration]state=ready-for-doc-closure claims=0 conflicts=0 blockers=0",
            "invalid-integration-marker",
        ),
        (
            "documentation",
            "documentation",
            CLOSED,
            "[wave-doc-closure] state=closed x",
            "invalid-doc-closure-marker",
        ),
        (
            "cont-qa",
            "cont-qa",
            GATE_OK,
            GATE_OK.replace("docs=pass", "docs=ok"),
            "invalid-gate-marker",
        ),
    ],
)
def test_invalid_marker_after_a_valid_one_is_a_warning_in_each_stage(
    tmp_path: Path, stage: str, role: str, valid: str, invalid: str, code: str
) -> None:
    """An agent that restates a template or prints a partial line after its real marker has
    still said it: the stage passes and the warning shows the later line."""
    write(tmp_path, "docs/reviews/report.md", "Verdict: PASS\n")
    agent = make_agent("C1", role=role, owns=("docs/reviews/report.md",))
    gate = judge_stage(stage, [make_result(tmp_path, agent, valid, invalid)])
    assert gate.passed, gate.failures
    assert len(gate.warnings) == 1
    assert gate.warnings[0].startswith("C1: ignored a later invalid [wave-")
    assert gate.warnings[0].endswith(invalid)
    # The invalid line alone fails the stage, naming the line.
    alone = judge_stage(stage, [make_result(tmp_path, agent, invalid)])
    assert only_failure(alone, code, "C1").endswith(invalid)


# -- judge_stage --------------------------------------------------------------------------------
PASSING_OUTPUT = {
    "cont-eval": (EVAL_OK,),
    "security": (SEC_CLEAR,),
    "integration": (INTEGRATION_OK,),
    "documentation": (CLOSED,),
    "cont-qa": (GATE_OK, VERDICT_OK),
}
MISSING_CODE = {
    "cont-eval": "missing-wave-eval",
    "security": "missing-wave-security",
    "integration": "missing-wave-integration",
    "documentation": "missing-doc-closure",
    "cont-qa": "missing-wave-gate",
}


@pytest.mark.parametrize("stage", list(PASSING_OUTPUT))
def test_judge_stage_dispatches_to_the_stage_judge(tmp_path: Path, stage: str) -> None:
    write(tmp_path, "docs/reviews/report.md")
    agent = make_agent("C1", role=stage, owns=("docs/reviews/report.md",))
    passing = judge_stage(stage, [make_result(tmp_path, agent, *PASSING_OUTPUT[stage])])
    assert passing.passed and passing.stage == stage
    failing = judge_stage(stage, [make_result(tmp_path, agent, "no markers")])
    assert failing.code == MISSING_CODE[stage]


@pytest.mark.parametrize("stage", list(PASSING_OUTPUT))
def test_judge_stage_agent_failed_before_markers_are_read(tmp_path: Path, stage: str) -> None:
    agent = make_agent("C1", role=stage, owns=("docs/reviews/report.md",))
    # Markers that would pass, and the report missing: neither is looked at.
    result = make_result(tmp_path, agent, *PASSING_OUTPUT[stage], status="failed", code=1)
    gate = judge_stage(stage, [result])
    assert only_failure(gate, "agent-failed", "C1") == "exited 1"
    assert gate.stage == stage


def test_judge_stage_agent_failed_hides_invalid_markers(tmp_path: Path) -> None:
    agent = make_agent("Q0", role="cont-qa", owns=(QA_REPORT,))
    result = make_result(tmp_path, agent, "[wave-gate] bogus", status="failed", code=2)
    gate = judge_stage("cont-qa", [result])
    assert only_failure(gate, "agent-failed", "Q0") == "exited 2"


def test_judge_stage_agent_timeout(tmp_path: Path) -> None:
    agent = make_agent("E0", role="cont-eval", owns=("docs/eval.md",))
    result = make_result(tmp_path, agent, EVAL_OK, status="timeout", code=None)
    gate = judge_stage("cont-eval", [result])
    assert only_failure(gate, "agent-timeout", "E0") == "timeout"


def test_judge_stage_reports_only_the_agents_that_did_not_succeed(tmp_path: Path) -> None:
    write(tmp_path, "docs/reviews/wave-1-S1.md")
    s1, s2 = reviewer("S1"), reviewer("S2")
    gate = judge_stage(
        "security",
        [
            make_result(tmp_path, s1, "[wave-security] state=blocked findings=1 approvals=0"),
            make_result(tmp_path, s2, SEC_CLEAR, status="timeout", code=None),
        ],
    )
    # S1's blocked marker is not read: the stage failed on S2 first.
    assert only_failure(gate, "agent-timeout", "S2") == "timeout"


def test_a_report_left_over_from_an_earlier_run_does_not_count(tmp_path: Path) -> None:
    import os
    import time

    from wave_orchestrator.closure.gates import AgentResult, judge_cont_qa
    from wave_orchestrator.closure.markers import parse_markers
    from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec

    agent = AgentDef(
        id="QA",
        title="qa",
        role="cont-qa",
        executor=ExecutorSpec(id="local"),
        prompt="p",
        owns=("r/qa.md",),
    )
    report = tmp_path / "r" / "qa.md"
    report.parent.mkdir()
    report.write_text("Verdict: PASS\n")
    old = time.time() - 3600
    os.utime(report, (old, old))
    markers = parse_markers(
        "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"
    )
    stale = judge_cont_qa(
        [AgentResult(agent, "success", 0, markers, tmp_path, launched_at=time.time())]
    )
    assert [f.code for f in stale.failures] == ["missing-cont-qa-verdict", "missing-cont-qa-report"]
    report.write_text("Verdict: PASS\n")  # written by this run
    fresh = judge_cont_qa(
        [AgentResult(agent, "success", 0, markers, tmp_path, launched_at=time.time() - 5)]
    )
    assert fresh.passed
