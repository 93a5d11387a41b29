"""What the harness preamble tells each agent beyond its own task: who closes its wave, the
lane's shared plan docs when its work touches them, and the infra and deploy markers when its
wave or role uses them; an agent of a lane using none of these is told none of it."""

from __future__ import annotations

from pathlib import Path

from wave_orchestrator.agents.prompts import DEPLOY_WORDS, INFRA_WORDS, harness_preamble
from wave_orchestrator.closure.markers import DEPLOY_STATES, parse_line
from wave_orchestrator.closure.signals import INFRA_PASSING
from wave_orchestrator.definitions.model import (
    AgentDef,
    ExecutorSpec,
    ExitContract,
    LaneDef,
    WaveDef,
)


def agent(aid: str, role: str = "implementation", **kw: object) -> AgentDef:
    return AgentDef(
        id=aid, title=aid, role=role, executor=ExecutorSpec(id="local"), prompt="p", **kw
    )  # type: ignore[arg-type]


def lane(docs: tuple[str, ...] = ()) -> LaneDef:
    p = Path("/r")
    return LaneDef(name="main", repo=p, path=p, state_dir=p, shared_plan_docs=docs)


def told(who: AgentDef, agents: tuple[AgentDef, ...], docs: tuple[str, ...] = ()) -> str:
    wave = WaveDef(number=1, title="w", path=Path("/r/w.yaml"), agents=agents)
    return harness_preamble(lane(docs), wave, who, 1)


SWEEP = (
    agent("S2", "security"),
    agent("QA", "cont-qa"),
    agent("I1", "integration"),
    agent("S1", "security"),
    agent("D1", "documentation"),
)


def test_an_implementation_agent_learns_who_closes_its_wave_in_sweep_order() -> None:
    a1 = agent("A1")
    text = told(a1, (a1, *SWEEP))
    line = next(x for x in text.splitlines() if x.startswith("Closure agents"))
    assert "security: S2, S1; integration: I1; documentation: D1; cont-qa: QA." in line
    # a closure agent is not told its own sweep as someone else's
    assert "Closure agents" not in told(SWEEP[1], (a1, *SWEEP))


def test_a_wave_without_closure_agents_tells_nothing_of_them() -> None:
    a1 = agent("A1")
    assert "Closure agents" not in told(a1, (a1,))


def test_shared_plan_docs_reach_the_agents_that_need_them_only() -> None:
    docs = ("docs/plans/current-state.md", "docs/plans/master-plan.md")
    planner = agent("A1", exit_contract=ExitContract(doc_impact="shared-plan"), owns=(docs[0],))
    owned = agent("A2", exit_contract=ExitContract(doc_impact="owned"))
    doc = agent("D1", "documentation")
    wave = (planner, owned, doc, agent("QA", "cont-qa"))
    text = told(planner, wave, docs)
    assert "The lane's shared plan docs" in text
    assert "  - docs/plans/current-state.md (yours: update it)" in text
    assert "  - docs/plans/master-plan.md (not yours: name it in paths=" in text
    assert "docs/plans" not in told(owned, wave, docs)
    doc_text = told(doc, wave, docs)
    assert "  - docs/plans/master-plan.md" in doc_text
    assert "A1 declared a shared-plan doc impact" in doc_text
    assert "docs/plans" not in told(wave[3], wave, docs)
    assert "shared plan" not in told(planner, wave, ())  # a lane with none: nothing said


def test_infra_and_deploy_agents_are_taught_their_markers() -> None:
    infra, deploy, impl = agent("N1", "infra"), agent("P1", "deploy"), agent("A1")
    alone = told(impl, (impl, agent("QA", "cont-qa")))
    assert "[infra-status]" not in alone and "[deploy-status]" not in alone
    assert "[wave-phase] coding" in alone
    text = told(infra, (infra, impl))
    assert "[infra-status] kind=" in text and "[deploy-status]" not in text
    # the wave uses it: its other implementation agents learn it too
    assert "[infra-status] kind=" in told(impl, (infra, impl))
    both = told(impl, (infra, deploy, impl))
    assert "[deploy-status] service=" in both
    assert "[infra-status]" not in told(agent("QA", "cont-qa"), (deploy, agent("QA", "cont-qa")))


def test_the_taught_marker_lines_parse_and_name_the_gates_states() -> None:
    deploy = agent("P1", "deploy")
    text = told(deploy, (deploy, agent("N1", "infra")))
    examples = [x.strip() for x in text.splitlines() if x.strip().startswith(("[infra", "[deploy"))]
    assert examples and all(parse_line(x) is not None for x in examples)
    assert all(getattr(parse_line(x), "values", None) for x in examples)  # valid, not invalid
    assert INFRA_WORDS == INFRA_PASSING  # what they are told is what the infra gate passes
    assert DEPLOY_WORDS == DEPLOY_STATES
