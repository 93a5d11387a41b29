"""Which implementation agents a failed closure gate names, and which deliverables are stale."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.closure.gates import AgentResult, GateResult, judge_cont_qa
from wave_orchestrator.closure.markers import Marker, Markers, parse_line, parse_markers
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec
from wave_orchestrator.runtime.wave.retry import named_agents, unfinished_deliverables


def agent(agent_id: str, role: str = "implementation", **extra: Any) -> AgentDef:
    return AgentDef(
        id=agent_id,
        title=agent_id,
        role=role,
        executor=ExecutorSpec(id="local"),
        prompt="p",
        **extra,
    )


IMPL = [agent("A1"), agent("A2"), agent("docs")]


def failed(
    detail: str, values: dict[str, Any] | None = None
) -> tuple[GateResult, list[AgentResult]]:
    """A cont-qa gate failed by QA, whose last [wave-gate] carries ``values``."""
    gate = GateResult("cont-qa")
    gate.fail("gate-integration-blocked", detail, "QA", said=detail)
    marker = Marker("gate", {"integration": "blocked", **(values or {})}, detail, "[wave-gate]")
    result = AgentResult(agent("QA", "cont-qa"), "success", 0, Markers({"gate": marker}), Path())
    return gate, [result]


def ids(agents: list[AgentDef]) -> list[str]:
    return [a.id for a in agents]


def test_the_agents_field_names_agents_in_wave_order() -> None:
    gate, results = failed("see the report", {"agents": ("A2", "A1")})
    assert ids(named_agents(gate, results, IMPL)) == ["A1", "A2"]


def test_the_agents_field_wins_over_ids_in_the_detail() -> None:
    gate, results = failed("A1 is fine, A2 is not", {"agents": ("A2",)})
    assert ids(named_agents(gate, results, IMPL)) == ["A2"]


def test_ids_written_as_words_in_the_detail_count_without_the_field() -> None:
    gate, results = failed("A1 and A2 disagree; XA1 and A10 are not agents")
    assert ids(named_agents(gate, results, IMPL)) == ["A1", "A2"]


def test_unknown_and_closure_ids_are_not_named() -> None:
    gate, results = failed("QA thinks Z9 is wrong", {"agents": ("Z9", "QA")})
    assert named_agents(gate, results, IMPL) == []


def test_owner_on_a_parsed_verdict_names_agents() -> None:
    verdict = parse_line("[wave-verdict] blocked owner=A2, A1 detail=A1 is fine")
    assert isinstance(verdict, Marker)
    gate = GateResult("cont-qa")
    gate.fail("cont-qa-blocked", verdict.detail, "QA", said=verdict.detail)
    qa = AgentResult(agent("QA", "cont-qa"), "success", 0, Markers({"verdict": verdict}), Path())
    assert ids(named_agents(gate, [qa], IMPL)) == ["A1", "A2"]


def test_words_wave_composed_never_name_agents(tmp_path: Path) -> None:
    """A blocked verdict with no detail=: the gate's detail is wave's ("verdict blocked", the
    whole marker line), whose words include agent ids by chance; none is rerun."""
    unlucky = [agent("docs"), agent("live"), agent("architecture"), agent("blocked")]
    (tmp_path / "qa.md").write_text("report\n")
    text = (
        "[wave-gate] architecture=pass integration=pass durability=pass live=blocked docs=pass\n"
        "[wave-verdict] blocked\n"
    )
    qa = AgentResult(
        agent("QA", "cont-qa", owns=("qa.md",)), "success", 0, parse_markers(text), tmp_path
    )
    gate = judge_cont_qa([qa])
    assert {f.code for f in gate.failures} == {"gate-live-blocked", "cont-qa-blocked"}
    assert any("docs" in f.detail for f in gate.failures)  # wave's words hold the ids ...
    assert named_agents(gate, [qa], unlucky) == []  # ... and name nobody
    said = parse_markers("[wave-verdict] blocked detail=live must retry\n")
    qa = AgentResult(qa.agent, "success", 0, said, tmp_path)
    assert ids(named_agents(judge_cont_qa([qa]), [qa], unlucky)) == ["live"]  # its own words do


def test_missing_or_stale_deliverables(tmp_path: Path) -> None:
    (tmp_path / "a1.txt").write_text("fresh")
    (tmp_path / "a2.txt").write_text("old")
    os.utime(tmp_path / "a2.txt", (1_000_000_000, 1_000_000_000))
    agents = [
        agent("A1", deliverables=("a1.txt",)),
        agent("A2", deliverables=("a2.txt",)),
        agent("A3", deliverables=("a3.txt",)),
        agent("A4"),
    ]
    launched = (tmp_path / "a1.txt").stat().st_mtime - 0.5
    latest: Any = {a.id: SimpleNamespace(launched_wall=launched) for a in agents}
    assert ids(unfinished_deliverables(agents, latest, tmp_path)) == ["A2", "A3"]
