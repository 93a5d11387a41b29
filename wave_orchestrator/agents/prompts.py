"""What each agent reads on stdin: standing role prompt, harness preamble, why it runs again
(on a retry), its gate's instructions (closure agents), the wave so far, messages from the
coordination log (inbox, guidance, shared summary), then its own task."""

from __future__ import annotations

from typing import Any

from ..definitions.model import AgentDef, LaneDef, WaveDef, is_closure_role
from ..definitions.signal_words import DEPLOY_STATES, INFRA_PASSING

# The infra gate's words: the infra states that let the wave go on, the states of a deploy.
INFRA_WORDS, DEPLOY_WORDS = INFRA_PASSING, DEPLOY_STATES
SIGNAL_ROLES = {"infra": "infra-status", "deploy": "deploy-status"}  # the role that prints it


def _bullets(items: tuple[str, ...]) -> str:
    return "\n".join(f"  - {item}" for item in items) if items else "  - (none)"


def harness_preamble(lane: LaneDef, wave: WaveDef, agent: AgentDef, attempt: int) -> str:
    """The short part `wave` adds so an agent knows who it is and what it must leave behind."""
    lines = [
        "## wave harness",
        f"You are agent {agent.id} ({agent.title}) with role {agent.role} in wave {wave.number} "
        f"({wave.title}) of lane {lane.name}, attempt {attempt}.",
        "Paths you own (change nothing else):",
        _bullets(agent.owns),
        "Deliverables that must exist when you finish:",
        _bullets(agent.deliverables),
    ]
    if agent.exit_contract is not None:
        c = agent.exit_contract
        lines += [
            "When done, print this line exactly when you met your exit contract "
            "(state=gap instead of state=met when you did not):",
            f"[wave-proof] completion={c.completion} durability={c.durability} "
            f"proof={c.proof} state=met",
        ]
        if c.doc_impact != "none":
            lines += [
                "and this line, listing the docs you changed after paths= "
                "(comma-separated, or nothing):",
                f"[wave-doc-delta] state={c.doc_impact} paths=",
            ]
    if agent.components:
        lines.append(
            "You own components this wave promotes. When done, print one line per component, "
            "exactly (state=gap and a detail= instead when it does not reach that level):"
        )
        lines += [
            f"[wave-component] component={c} level={level} state=met"
            for c, level in agent.components
        ]
        lines.append(
            "and `[wave-gap] kind=<one word> detail=<what is missing>` for each gap you notice "
            "that this wave leaves open."
        )
    lines += shared_plan_lines(lane, wave, agent)
    lines.append(
        "As you move between phases, print `[wave-phase] coding` "
        "(or validating, deploying, finalizing) on a line of its own."
    )
    lines += signal_lines(wave, agent)
    lines += closer_lines(wave, agent)
    lines += [
        "Talk to the other agents of this wave (and to people) through the coordination log:",
        "  wave coord inbox        (items addressed to you, guidance from people; read it often)",
        "  wave coord post --kind request --target agent:ID --summary '...'   (ask an agent)",
        "  wave coord post --kind ack --depends-on ITEM --summary '...'       (acknowledge/answer)",
        "  wave coord post --kind blocker --priority high --summary '...'    (you are stuck)",
        "  wave coord resolve ITEM --note '...'      (an item is done)",
        "  wave feedback ask --question '...' --wait   (ask a person; prints the answer)",
    ]
    if lane.shared_files or wave.shared:
        lines += [
            "Other agents of this wave may edit the same files. Claim a file before you edit it,",
            "and hand it over when you are done with it (paths are relative to the repository):",
            "  wave desk claim PATH --intent 'what you will change'   (granted, held or queued)",
            "  wave desk handover PATH --note 'what the next holder should know'",
            "  wave desk mine                 (what you hold and wait for)",
            "  wave desk wait --timeout 100   (a file handed to you, with its note; exit 1: again)",
            "`wave desk wait` is refused while you hold a file someone waits for: hand over first.",
            "Everything you hold is handed over automatically when you finish.",
        ]
    return "\n".join(lines) + "\n"


def closer_lines(wave: WaveDef, agent: AgentDef) -> list[str]:
    """Who judges an implementation agent's work after it: the closure agents by stage."""
    stages = wave.closure_stages()
    if agent.is_closure or not stages:
        return []
    named = "; ".join(f"{role}: {', '.join(a.id for a in group)}" for role, group in stages)
    return [
        f"Closure agents close this wave after its implementation agents, stage by stage: "
        f"{named}. They judge your marker lines, your deliverables and your log."
    ]


def signal_lines(wave: WaveDef, agent: AgentDef) -> list[str]:
    """The infra and deploy markers, for a non-closure agent whose role or wave prints them
    (the wave has an agent of that role): the wave's infra gate reads them from any agent."""
    if agent.is_closure:
        return []
    used = {SIGNAL_ROLES[a.role] for a in wave.agents if a.role in SIGNAL_ROLES}
    lines = []
    if "infra-status" in used:
        lines += [
            "Report each infrastructure check on a line of its own (your last one counts), e.g.:",
            "  [infra-status] kind=dns target=api.example state=conformant",
            f"  kind and target: one word each; state: {', '.join(INFRA_WORDS)} let the wave "
            "go on; any other word (drift, failed) fails the wave's infra gate as infra-<state>. "
            "detail=why may follow.",
        ]
    if "deploy-status" in used:
        lines += [
            "Report a deployment's state on a line of its own as it moves (your last one "
            "counts), e.g.:",
            "  [deploy-status] service=api state=healthy",
            f"  service: one word; state: one of {', '.join(DEPLOY_WORDS)}; failed fails the "
            "wave's infra gate as deploy-failed. detail=why may follow.",
        ]
    return lines


def shared_plan_lines(lane: LaneDef, wave: WaveDef, agent: AgentDef) -> list[str]:
    """The lane's shared plan docs, for an agent whose exit contract touches them and for the
    documentation agent that brings them in line (with who said they changed them)."""
    docs = lane.shared_plan_docs
    contract = agent.exit_contract
    if not docs:
        return []
    if contract is not None and contract.doc_impact == "shared-plan":
        lines = ["The lane's shared plan docs, which your work changes:"]
        for doc in docs:
            mine = doc in agent.owns or any(
                o.endswith("/") and doc.startswith(o) for o in agent.owns
            )
            lines.append(
                f"  - {doc} (yours: update it)"
                if mine
                else f"  - {doc} (not yours: name it in paths= of [wave-doc-delta] and say in "
                "detail= what must change; the documentation agent updates it)"
            )
        return lines
    if agent.role != "documentation":
        return []
    planners = [
        a.id
        for a in wave.implementation_agents
        if a.exit_contract is not None and a.exit_contract.doc_impact == "shared-plan"
    ]
    said = (
        f" {', '.join(planners)} declared a shared-plan doc impact: read their "
        "[wave-doc-delta] lines."
        if planners
        else ""
    )
    return ["The lane's shared plan docs: bring them in line with this wave." + said] + [
        f"  - {doc}" for doc in docs
    ]


def closure_briefing(wave: WaveDef, rows: list[dict[str, Any]], extra: str = "") -> str:
    """What a closure agent reviews: every agent of the wave, its result, deliverables, log;
    then ``extra``, what its stage adds (the integration summary, for the integration agent)."""
    lines = ["## the wave so far"]
    if wave.commit_message:
        lines.append(f"Commit message: {wave.commit_message}")
    for row in rows:
        agent: AgentDef = row["agent"]
        code = "" if row["code"] is None else f", exit {row['code']}"
        lines.append(f"- {agent.id} ({agent.role}, {agent.title}): {row['status']}{code}")
        if agent.deliverables:
            lines.append(f"  deliverables: {', '.join(agent.deliverables)}")
        if agent.owns:
            lines.append(f"  owns: {', '.join(agent.owns)}")
        if row["log"]:
            lines.append(f"  log: {row['log']}")
    return "\n".join(lines) + "\n" + (f"\n{extra}" if extra else "")


def compose_prompt(
    lane: LaneDef,
    wave: WaveDef,
    agent: AgentDef,
    attempt: int,
    briefing: str = "",
    retry_context: str = "",
    coordination: str = "",
    skill_context: str = "",
    reference: str = "",
) -> str:
    parts = []
    standing = lane.role_prompts.get(agent.role)
    if standing:
        parts.append(standing.rstrip("\n") + "\n")
    parts.append(harness_preamble(lane, wave, agent, attempt))
    if retry_context:
        parts.append(retry_context)
    if is_closure_role(agent.role):
        from .briefings import closure_instructions  # the gates' texts: closure agents only

        parts.append(closure_instructions(agent, wave.eval_targets, lane.benchmarks))
    if briefing:
        parts.append(briefing)
    if coordination:
        parts.append("## messages from the wave\n" + coordination.rstrip("\n") + "\n")
    if skill_context:  # the catalog of its skill bundles (agents/skills_projection.py)
        parts.append(skill_context.rstrip("\n") + "\n")
    if reference:  # library docs fetched for it, fenced and marked external (context7_docs)
        parts.append(reference)
    parts.append("## task\n" + agent.prompt)
    return "\n".join(parts)
