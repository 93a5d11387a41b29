"""One entry of a wave file's ``agents:`` list, validated into an AgentDef: its id and role,
prompt, owned paths and deliverables, exit contract, executor, placement, sandbox and proofs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...names import AGENT_ID_RE
from ..model import (
    CLOSURE_ORDER,
    ROLES,
    AgentDef,
    ExecutorSpec,
    ExitContract,
    IsolationSettings,
    PlacementSettings,
    ProofArtifact,
    SandboxSettings,
)
from ..repository.paths import normalise_repo_path
from ..sections.components import check_owned_components
from ..sections.context7 import Pick, check_pick, resolve_selection
from ..sections.executor_settings import resolve_executor
from ..sections.isolation import check_agent_id
from ..sections.ownership import paths_overlap
from ..sections.placement import check_placement_override
from ..sections.sandbox import agent_sandbox, check_sandbox
from ..sections.skills import check_skill_ids, skill_digest
from ..sections.ssh import check_ssh_sandbox
from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from .lane_context import LaneContext, read_inside

AGENT_KEYS = (
    "id",
    "title",
    "role",
    "profile",
    "account",
    "executor",
    "prompt",
    "prompt_file",
    "owns",
    "deliverables",
    "exit_contract",
    "depends_on",
    "placement",
    "proof_artifacts",
    "components",
    "sandbox",
    "skills",
    "context7",
)
CONTRACT_LEVELS = {
    "completion": ("contract", "integrated", "authoritative", "live"),
    "durability": ("none", "ephemeral", "durable"),
    "proof": ("unit", "integration", "live"),
    "doc_impact": ("none", "owned", "shared-plan"),
}


class AgentLoader:
    """Validates the agents of one wave file, against what the wave around them settled."""

    def __init__(
        self,
        lane: LaneContext,
        ck: Checker,
        number: int,
        isolation: IsolationSettings,
        placement: PlacementSettings,
        components: Mapping[str, str],
        sandbox: SandboxSettings | None = None,
    ) -> None:
        self.lane = lane
        self.ck = ck
        self.number = number  # agent ids of a worktree wave depend on it
        self.isolation = isolation
        self.placement = placement  # the wave's, which an agent's own overrides
        self.components = components  # what the wave promotes, for the agents that own them
        self.sandbox = sandbox or SandboxSettings()  # the wave's, which an agent's own overrides
        self.docs = Pick()  # the wave's Context7 bundle and query, which an agent's override

    def load(self, item: Any, i: int) -> AgentDef | None:
        """``agents[i]``, or None when it cannot be built; its problems are recorded."""
        ck, p = self.ck, ("agents", i)
        raw = ck.mapping(item, p, AGENT_KEYS)
        if raw is None:
            return None
        agent_id = (
            ck.string(raw.get("id"), (*p, "id"), pattern=AGENT_ID_RE, what="an agent id")
            if "id" in raw
            else None
        )
        if "id" not in raw:
            ck.error(p, "missing id", "an agent id matching " + AGENT_ID_RE.pattern)
        role = (
            ck.string(raw.get("role", "implementation"), (*p, "role"), choices=ROLES, noun="role")
            or "implementation"
        )
        if agent_id is not None:
            check_agent_id(ck, (*p, "id"), agent_id, role, self.number, self.isolation)
        title = ck.string(raw.get("title", agent_id or ""), (*p, "title")) or ""
        prompt, prompt_file = self._prompt(raw, p)
        owns = [
            self._owned(x, (*p, "owns", j))
            for j, x in enumerate(ck.string_list(raw.get("owns"), (*p, "owns")) or [])
        ]
        deliverables = ck.string_list(raw.get("deliverables"), (*p, "deliverables")) or []
        clean_owns = [o for o in owns if o]
        for j, d in enumerate(deliverables):
            norm = self._owned(d, (*p, "deliverables", j))
            if norm and not any(
                paths_overlap(norm, o) and (o.endswith("/") or o == norm) for o in clean_owns
            ):
                ck.error(
                    (*p, "deliverables", j),
                    f"deliverable {d!r} is outside the agent's owned paths",
                    "a path inside owns: " + ", ".join(clean_owns or ["(none)"]),
                )
        depends = ck.string_list(raw.get("depends_on"), (*p, "depends_on")) or []
        contract = (
            self._contract(raw.get("exit_contract"), (*p, "exit_contract"))
            if raw.get("exit_contract") is not None
            else None
        )
        spec = resolve_executor(ck, raw, p, self.lane.settings)
        placement = check_placement_override(ck, raw.get("placement"), self.placement, p)
        sandbox = check_sandbox(ck, raw.get("sandbox"), self.sandbox, p)
        check_ssh_sandbox(ck, raw.get("sandbox"), self.placement, p)
        proofs = self._proof_artifacts(raw.get("proof_artifacts"), (*p, "proof_artifacts"), role)
        docs = check_pick(ck, raw.get("context7"), self.lane.context7, p)
        owned = check_owned_components(
            ck, raw.get("components"), (*p, "components"), self.components, role
        )
        skills, digest = self._skills(raw.get("skills"), (*p, "skills"), role, spec)
        # An agent with other problems is still built, so the rules across agents see it;
        # the lane stays invalid because its problems are recorded.
        if agent_id is None or spec is None:
            return None
        return AgentDef(
            id=agent_id,
            title=title,
            role=role,
            executor=spec,
            prompt=prompt,
            prompt_file=prompt_file,
            owns=tuple(clean_owns),
            deliverables=tuple(normalise_repo_path(d) or d for d in deliverables),
            depends_on=tuple(depends),
            exit_contract=contract,
            placement=placement,
            proof_artifacts=proofs,
            components=owned,
            sandbox=agent_sandbox(sandbox),
            skills=skills,
            skill_digest=digest,
            context7=resolve_selection(self.lane.context7, self.lane.name, self.docs, docs, prompt),
        )

    def _skills(
        self, value: Any, p: FieldPath, role: str, spec: ExecutorSpec | None
    ) -> tuple[tuple[str, ...], str]:
        """The skills it names (checked against the lane's bundles), and the digest of all it
        resolves to on its own executor ("" with none)."""
        lane_skills = self.lane.skills
        if value is not None:
            lane_skills = self.lane.skill_settings()
        if lane_skills is None:
            return (), ""
        named = check_skill_ids(self.ck, value, p, lane_skills)
        if spec is None:
            return named, ""
        return named, skill_digest(lane_skills.resolve(role, spec.id, named))

    def _owned(self, raw: str, path: FieldPath) -> str | None:
        return self.lane.owned(self.ck, raw, path)

    def _proof_artifacts(self, value: Any, p: FieldPath, role: str) -> tuple[ProofArtifact, ...]:
        """Paths (the agent's own gate needs them) or ``{path, gate}``: repository paths."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.ck.wrong_type(p, value, "a list of paths or {path, gate}")
            return ()
        own = "implementation" if role not in CLOSURE_ORDER else role
        found = []
        for j, item in enumerate(value):
            raw = (
                {"path": item}
                if isinstance(item, str)
                else self.ck.mapping(item, (*p, j), ("path", "gate"))
            )
            if raw is None:
                continue
            where = (*p, j, "path") if isinstance(item, dict) else (*p, j)
            text = self.ck.string(raw.get("path"), where, what="a path")
            gate = self.ck.string(
                raw.get("gate", own),
                (*p, j, "gate"),
                noun="gate",
                choices=("implementation", *CLOSURE_ORDER),
            )
            norm = self._owned(text, where) if text is not None else None
            if norm is not None and gate is not None:
                found.append(ProofArtifact(norm, gate))
        return tuple(found)

    def _prompt(self, raw: Mapping[str, Any], p: FieldPath) -> tuple[str, str | None]:
        ck = self.ck
        if "prompt" in raw and "prompt_file" in raw:
            ck.error(
                (*p, "prompt_file"),
                "give prompt or prompt_file, not both",
                "one of prompt, prompt_file",
                key=True,
            )
            return "", None
        if "prompt" in raw:
            text = ck.string(raw["prompt"], (*p, "prompt"))
            if text is not None and not text.strip():
                ck.error((*p, "prompt"), "empty prompt", "the agent's task as text")
            return text or "", None
        if "prompt_file" in raw:
            rel = ck.string(raw["prompt_file"], (*p, "prompt_file"))
            norm = self._owned(rel, (*p, "prompt_file")) if rel is not None else None
            if norm is None:
                return "", None
            try:
                return read_inside(self.lane.repo, norm), norm
            except (OSError, ValueError) as exc:
                ck.error(
                    (*p, "prompt_file"),
                    f"cannot use {rel!r}: {exc}",
                    "a readable, non-empty file in the repository",
                )
                return "", None
        ck.error(p, "missing prompt", "prompt or prompt_file")
        return "", None

    def _contract(self, value: Any, p: FieldPath) -> ExitContract | None:
        raw = self.ck.mapping(value, p, tuple(CONTRACT_LEVELS))
        if raw is None:
            return None
        levels = {
            k: self.ck.string(v, (*p, k), choices=CONTRACT_LEVELS[k])
            for k, v in raw.items()
            if k in CONTRACT_LEVELS
        }
        return ExitContract(**{k: v for k, v in levels.items() if v is not None})
