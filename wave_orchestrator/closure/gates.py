"""Where gates are judged: what a gate is given and says (``AgentResult``, ``GateResult``), and
one closure gate per stage over the markers its agents printed. The implementation gate, over
deliverables and exit contracts, is ``implementation_gate``; a report's verdict line,
``report_verdict``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..definitions.model import AgentDef, EvalTarget
from ..definitions.repository.paths import inside_repository
from .markers import GATE_DIMENSIONS, InvalidMarker, Marker, Markers
from .report_verdict import VERDICTS, report_verdict


class AgentResult(NamedTuple):
    """What a gate needs to know about one finished agent."""

    agent: AgentDef
    status: str  # the agent_finished status word: success, failed, timeout, ...
    code: int | None
    markers: Markers
    repo: Path
    launched_at: float | None = None  # epoch seconds; a report older than this is stale

    @property
    def report_file(self) -> Path | None:
        """A closure agent's report: its first owned path that names a file."""
        owned = next((p for p in self.agent.owns if not p.endswith("/")), None)
        return self.repo / owned if owned else None

    def report_written(self) -> bool:
        """The report exists inside the repository (not through a link out of it) and was
        written by this run, not left over from an earlier one."""
        report = self.report_file
        if (
            report is not None
            and inside_repository(self.repo, str(report.relative_to(self.repo))) is None
        ):
            return False
        try:
            mtime = report.stat().st_mtime if report else None
        except OSError:
            return False
        return mtime is not None and (self.launched_at is None or mtime >= self.launched_at - 1)


class GateFailure(NamedTuple):
    code: str
    detail: str
    agent: str | None = None
    said: str = ""  # the agent's own `detail=` text, if any: the only words ids are read from

    def fields(self) -> dict[str, str | None]:
        """As the ``gate_failed`` event lists it."""
        return {"code": self.code, "detail": self.detail, "agent": self.agent}


@dataclass
class GateResult:
    stage: str
    failures: list[GateFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the retry prompt only (merge hunks)

    @property
    def passed(self) -> bool:
        return not self.failures

    def fail(self, code: str, detail: str, agent: str | None = None, said: str = "") -> None:
        self.failures.append(GateFailure(code, detail, agent, said))

    @property
    def code(self) -> str | None:
        return self.failures[0].code if self.failures else None

    @property
    def agents(self) -> list[str]:
        """The agents its failures name, sorted."""
        return sorted({f.agent for f in self.failures if f.agent})

    @property
    def detail(self) -> str:
        return "; ".join(f"{f.agent}: {f.detail}" if f.agent else f.detail for f in self.failures)


def last_marker(result: AgentResult, kind: str, gate: GateResult, missing: str) -> Marker | None:
    """The agent's last valid marker of ``kind``; records ``missing`` or invalid-<kind>-marker,
    and a warning for each invalid line of that kind printed after it."""
    found = result.markers.get(kind)
    gate.warnings.extend(f"{result.agent.id}: {w}" for w in result.markers.warnings(kind))
    if isinstance(found, InvalidMarker):
        gate.fail(found.code, f"{found.reason}: {found.line}", result.agent.id)
        return None
    if found is None:
        gate.fail(
            missing, f"no [wave-{kind}] marker in the output of its last try", result.agent.id
        )
    return found


def level_index(levels: Sequence[str], value: object) -> int:
    """Where ``value`` stands among ``levels`` (lowest first); -1 when it is none of them."""
    return levels.index(str(value)) if str(value) in levels else -1


# -- closure gates ------------------------------------------------------------------------------
def judge_cont_eval(
    results: Sequence[AgentResult],
    targets: Sequence[EvalTarget] = (),
    catalog: Sequence[str] = (),
) -> GateResult:
    """``targets``: the wave's eval_targets, which the evaluator must report exactly (with
    its report); ``catalog``: the lane's benchmark ids (empty: any)."""
    gate = GateResult("cont-eval")
    for r in results:
        if targets and not r.report_written():
            said = f"report file {r.report_file or '(no owned file)'} does not exist"
            gate.fail("missing-cont-eval-report", said, r.agent.id)
        m = last_marker(r, "eval", gate, "missing-wave-eval")
        if m is None:
            continue
        if targets:
            _check_targets(m, r.agent.id, gate, targets, catalog)
        state = m.get("state")
        if state == "needs-more-work":
            gate.fail(
                "cont-eval-needs-more-work",
                m.detail or "evaluation needs more work",
                r.agent.id,
                said=m.detail,
            )
        elif state == "blocked":
            gate.fail(
                "cont-eval-blocked", m.detail or "evaluation is blocked", r.agent.id, said=m.detail
            )
        if m.get("regressions") != 0:
            gate.fail("cont-eval-regressions", f"regressions={m.get('regressions')}", r.agent.id)
        for count, ids in (("targets", "target_ids"), ("benchmarks", "benchmark_ids")):
            listed = m.get(ids)
            if isinstance(listed, tuple) and len(listed) != m.get(count):
                gate.fail(
                    "cont-eval-count-mismatch",
                    f"{count}={m.get(count)} but {ids} lists {len(listed)}",
                    r.agent.id,
                )
    return gate


def _check_targets(
    m: Marker, agent: str, gate: GateResult, targets: Sequence[EvalTarget], catalog: Sequence[str]
) -> None:
    """The reported ids against the declared targets, their pinned benchmarks, the catalog."""
    declared = sorted(t.id for t in targets)
    reported = m.get("target_ids")
    if not isinstance(reported, tuple):
        said = f"the wave declares targets {','.join(declared)}: target_ids= must list them"
        gate.fail("missing-cont-eval-target-ids", said, agent)
    elif sorted(set(reported)) != declared:
        missing = ",".join(sorted(set(declared) - set(reported)))
        extra = ",".join(sorted(set(reported) - set(declared)))
        why = [f"missing {missing}" if missing else "", f"not declared {extra}" if extra else ""]
        said = f"target_ids={','.join(reported)} but the wave declares {','.join(declared)}"
        gate.fail("cont-eval-target-mismatch", f"{said} ({'; '.join(w for w in why if w)})", agent)
    benchmarks = m.get("benchmark_ids")
    if not isinstance(benchmarks, tuple):
        said = "benchmark_ids= must list the benchmarks run"
        gate.fail("missing-cont-eval-benchmark-ids", said, agent)
        return
    pinned = ",".join(sorted({b for t in targets for b in t.benchmarks} - set(benchmarks)))
    if pinned:
        said = f"pinned benchmark(s) {pinned} missing from benchmark_ids"
        gate.fail("cont-eval-benchmark-mismatch", said, agent)
    unknown = ",".join(b for b in benchmarks if catalog and b not in catalog)
    if unknown:
        said = f"benchmark_ids names {unknown}, not in the lane's catalog ({','.join(catalog)})"
        gate.fail("cont-eval-benchmark-mismatch", said, agent)


def judge_security(results: Sequence[AgentResult]) -> GateResult:
    gate = GateResult("security")
    for r in results:
        m = last_marker(r, "security", gate, "missing-wave-security")
        report = r.report_file
        if not r.report_written():
            gate.fail(
                "missing-security-report",
                f"report file {report or '(no owned file)'} does not exist",
                r.agent.id,
            )
        if m is None:
            continue
        state = m.get("state")
        if state == "clear" and (m.get("findings") or m.get("approvals")):
            gate.fail(
                "invalid-security-clear-state",
                f"state=clear with findings={m.get('findings')} approvals={m.get('approvals')}",
                r.agent.id,
            )
        elif state == "blocked":
            gate.fail(
                "security-blocked",
                m.detail or "the reviewer blocked the wave",
                r.agent.id,
                said=m.detail,
            )
        elif state == "concerns":
            gate.warnings.append(f"{r.agent.id}: security concerns: {m.detail or m.line}")
    return gate


def judge_integration(results: Sequence[AgentResult]) -> GateResult:
    gate = GateResult("integration")
    for r in results:
        m = last_marker(r, "integration", gate, "missing-wave-integration")
        if m is not None and m.get("state") != "ready-for-doc-closure":
            gate.fail("integration-needs-more-work", m.detail or m.line, r.agent.id, said=m.detail)
    return gate


def judge_documentation(results: Sequence[AgentResult]) -> GateResult:
    gate = GateResult("documentation")
    for r in results:
        m = last_marker(r, "doc-closure", gate, "missing-doc-closure")
        if m is not None and m.get("state") not in ("closed", "no-change"):
            gate.fail("doc-closure-open", m.detail or m.line, r.agent.id, said=m.detail)
    return gate


def judge_cont_qa(results: Sequence[AgentResult]) -> GateResult:
    gate = GateResult("cont-qa")
    for r in results:
        m = last_marker(r, "gate", gate, "missing-wave-gate")
        if m is not None:
            for dim in GATE_DIMENSIONS:
                if m.get(dim) != "pass":
                    gate.fail(
                        f"gate-{dim}-{m.get(dim)}", m.detail or m.line, r.agent.id, said=m.detail
                    )
        _judge_verdict(r, gate)
        report = r.report_file
        if not r.report_written():
            gate.fail(
                "missing-cont-qa-report",
                f"report file {report or '(no owned file)'} does not exist",
                r.agent.id,
            )
    return gate


def _judge_verdict(r: AgentResult, gate: GateResult) -> None:
    """From `[wave-verdict]`, or else the last `Verdict:` line of the report file. Only a
    clear pass passes: a verdict word we cannot read is no verdict."""
    found = r.markers.get("verdict")
    gate.warnings.extend(f"{r.agent.id}: {w}" for w in r.markers.warnings("verdict"))
    if isinstance(found, InvalidMarker):
        gate.fail(found.code, f"{found.reason}: {found.line}", r.agent.id)
        return
    word = (
        str(found.get("value"))
        if found
        else report_verdict(r.report_file if r.report_written() else None)
    )
    detail = (found.detail if found else "") or f"verdict {word}"
    verdict = VERDICTS.get(word or "")
    if verdict is None:
        seen = f" (unrecognised verdict {word!r})" if word else ""
        gate.fail(
            "missing-cont-qa-verdict",
            "no [wave-verdict] marker and no `Verdict: PASS|CONCERNS|BLOCKED` line "
            f"in the report{seen}",
            r.agent.id,
        )
    said = found.detail if found else ""
    if verdict == "concerns":
        gate.fail("cont-qa-concerns", detail, r.agent.id, said)
    elif verdict == "blocked":
        gate.fail("cont-qa-blocked", detail, r.agent.id, said)


CLOSURE_JUDGES: dict[str, Callable[[Sequence[AgentResult]], GateResult]] = {
    "cont-eval": judge_cont_eval,
    "security": judge_security,
    "integration": judge_integration,
    "documentation": judge_documentation,
    "cont-qa": judge_cont_qa,
}


def judge_stage(
    stage: str,
    results: Sequence[AgentResult],
    targets: Sequence[EvalTarget] = (),
    catalog: Sequence[str] = (),
) -> GateResult:
    """A closure stage: an agent that did not succeed fails it before its marker is read.
    ``targets`` and ``catalog`` are the cont-EVAL's (``judge_cont_eval``)."""
    gate = GateResult(stage)
    for r in results:
        if r.status != "success":
            gate.fail(
                f"agent-{r.status}",
                f"exited {r.code}" if r.status == "failed" and r.code is not None else r.status,
                r.agent.id,
            )
    if gate.failures:
        return gate
    if stage == "cont-eval":
        return judge_cont_eval(results, targets, catalog)
    return CLOSURE_JUDGES[stage](results)
