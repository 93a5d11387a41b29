"""The implementation gate: each implementation agent's deliverables exist inside the
repository, its components are met at the level the wave promotes them to, and its
``[wave-proof]`` and ``[wave-doc-delta]`` reach its exit contract. And the proof artifacts a
stage's gate needs, whichever agents promised them."""

from __future__ import annotations

from collections.abc import Sequence

from ..definitions.repository.paths import inside_repository
from .gates import AgentResult, GateResult, last_marker, level_index
from .markers import DOC_LEVELS, PROOF_LEVELS, InvalidMarker


def judge_implementation(results: Sequence[AgentResult]) -> GateResult:
    gate = GateResult("implementation")
    for result in results:
        agent = result.agent
        for deliverable in agent.deliverables:
            if not (result.repo / deliverable).exists():
                gate.fail("missing-deliverable", f"{deliverable} does not exist", agent.id)
            elif inside_repository(result.repo, deliverable) is None:
                gate.fail(
                    "deliverable-outside-repository",
                    f"{deliverable} leads out of the repository through a symbolic link",
                    agent.id,
                )
        _judge_components(result, gate)
        contract = agent.exit_contract
        if contract is None:
            continue
        proof = last_marker(result, "proof", gate, "missing-wave-proof")
        if proof is not None:
            if proof.get("state") == "gap":
                gate.fail(
                    "wave-proof-gap", proof.detail or "the agent reported state=gap", agent.id
                )
            for key, code in (
                ("completion", "completion-gap"),
                ("durability", "durability-gap"),
                ("proof", "proof-level-gap"),
            ):
                want = getattr(contract, key)
                if level_index(PROOF_LEVELS[key], proof.get(key)) < level_index(
                    PROOF_LEVELS[key], want
                ):
                    gate.fail(
                        code, f"{key}={proof.get(key)} is below the contract's {want}", agent.id
                    )
        if contract.doc_impact != "none":
            delta = last_marker(result, "doc-delta", gate, "missing-doc-delta")
            if delta is not None and level_index(DOC_LEVELS, delta.get("state")) < level_index(
                DOC_LEVELS, contract.doc_impact
            ):
                gate.fail(
                    "doc-impact-gap",
                    f"doc delta state={delta.get('state')} is below "
                    f"the contract's {contract.doc_impact}",
                    agent.id,
                )
    return gate


def _judge_components(result: AgentResult, gate: GateResult) -> None:
    """Each component the agent owns: its last ``[wave-component]`` says ``state=met`` at the
    level the wave promotes it to."""
    agent, found = result.agent, result.markers
    for component, level in agent.components:
        m = found.components.get(component)
        if m is None:
            broken = found.get("component")
            if isinstance(broken, InvalidMarker):
                gate.fail(broken.code, f"{broken.reason}: {broken.line}", agent.id)
                continue
            said = f"no [wave-component] for {component} (promoted to {level})"
            gate.fail("missing-wave-component", said, agent.id)
        elif m.get("state") == "gap":
            said = m.detail or "the agent reported state=gap"
            gate.fail("component-gap", f"{component}: {said}", agent.id, said=m.detail)
        elif str(m.get("level")) != level:
            said = f"{component} is at level {m.get('level')}; the wave promotes it to {level}"
            gate.fail("component-level-mismatch", said, agent.id)


def judge_proof_artifacts(gate: GateResult, owners: Sequence[AgentResult]) -> None:
    """Every proof artifact the gate's stage needs, of the ``owners`` that ran: it must exist
    inside the repository (``missing-proof-artifact``, naming the agent that promised it)."""
    for r in owners:
        for proof in r.agent.proof_artifacts:
            if proof.gate != gate.stage:
                continue
            if not (r.repo / proof.path).exists() or inside_repository(r.repo, proof.path) is None:
                said = (
                    f"proof artifact {proof.path} (needed by the {gate.stage} gate) does not exist"
                )
                gate.fail("missing-proof-artifact", said, r.agent.id)
