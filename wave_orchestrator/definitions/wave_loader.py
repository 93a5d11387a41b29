"""Where one wave file is validated: agents, prompts, owned paths,
deliverables, depends_on, closure roles; every problem located in the file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LaneProblem
from ..names import AGENT_ID_RE, LANE_NAME_RE
from .components import check_component_owners, check_components, check_owned_components
from .eval_targets import check_eval_targets
from .executor_settings import LaneSettings, resolve_executor
from .governance import check_wave_governance
from .isolation import BaseRefs, check_agent_id, check_isolation
from .model import (
    CLOSURE_ORDER,
    NUMBER_RANGES,
    ROLES,
    AgentDef,
    ExitContract,
    IsolationSettings,
    PlacementSettings,
    ProofArtifact,
    WaveDef,
)
from .ownership import OwnedPaths, paths_overlap
from .placement import check_placement_override
from .repo_paths import normalise_repo_path
from .repository import inside_repository
from .schema import Checker
from .yaml_source import FieldPath, Located, YamlSyntaxError, load_located, read_lane_file

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
)
WAVE_KEYS = (
    "wave",
    "title",
    "commit_message",
    "agents",
    "shared",
    "isolation",
    "base",
    "setup",
    "placement",
    "eval_targets",
    "depends_on_lanes",
    "components",
    "max_running",
    "spend_limit_usd",
)
CONTRACT_LEVELS = {
    "completion": ("contract", "integrated", "authoritative", "live"),
    "durability": ("none", "ephemeral", "durable"),
    "proof": ("unit", "integration", "live"),
    "doc_impact": ("none", "owned", "shared-plan"),
}


def parse_file(path: Path, display: str, problems: list[LaneProblem]) -> Located | None:
    """Parse one YAML file, turning syntax and read errors into located problems."""
    try:
        return load_located(path)
    except YamlSyntaxError as exc:
        problems.append(LaneProblem(display, exc.line, exc.column, "", str(exc)))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(LaneProblem(display, 1, 1, "", f"cannot read file: {exc}"))
    return None


def read_inside(base: Path, rel: str) -> str:
    """Read ``base/rel``, refusing a symlink (or anything) that resolves outside ``base``."""
    target = (base / rel).resolve()
    if not target.is_relative_to(base.resolve()):
        raise PermissionError(f"{rel!r} resolves outside {base}")
    text = read_lane_file(target).decode("utf-8")  # a FIFO or device is refused, never waited on
    if not text.strip():
        raise ValueError(f"{rel!r} is empty")
    return text


@dataclass
class LaneContext:
    """What every wave of a lane is checked against, and where its problems are collected."""

    repo: Path
    display: Callable[[Path], str]
    problems: list[LaneProblem]
    settings: LaneSettings
    required_roles: list[str]
    shared_files: bool
    isolation: IsolationSettings = field(default_factory=IsolationSettings)
    placement: PlacementSettings = field(default_factory=PlacementSettings)
    lane_checker: Checker | None = None  # lane.yaml's, for the base a wave inherits
    benchmarks: tuple[str, ...] = ()  # lane.yaml's catalog: what eval_targets may pin
    name: str = ""  # the lane's own name (a wave may not wait on its own lane)
    base_refs: BaseRefs = field(default_factory=BaseRefs)
    _folders: dict[str, Path | None] = field(default_factory=dict)

    def confine(self, rel: str) -> Path | None:
        """``inside_repository`` for an owned path, each parent folder resolved once: the
        agents of a wide wave share a few folders, and links are followed at every level."""
        parent, _, name = rel.rstrip("/").rpartition("/")
        if parent not in self._folders:
            self._folders[parent] = inside_repository(self.repo, parent or ".")
        folder = self._folders[parent]
        if folder is None:
            return None
        if not (folder / name).is_symlink():
            return folder / name
        return inside_repository(self.repo, str(folder.relative_to(self.repo.resolve()) / name))


class WaveLoader:
    """Validates one wave file against the lane it belongs to."""

    def __init__(self, lane: LaneContext, path: Path, number: int) -> None:
        self.lane = lane
        self.path = path
        self.number = number

    def load(self) -> WaveDef | None:
        display = self.lane.display(self.path)
        doc = parse_file(self.path, display, self.lane.problems)
        if doc is None:
            return None
        ck = self.ck = Checker(display, doc, self.lane.problems)
        raw = ck.mapping(doc.data, (), WAVE_KEYS)
        if raw is None:
            return None
        if "wave" in raw:
            got = ck.number(raw["wave"], ("wave",), integer=True, limits=NUMBER_RANGES["wave"])
            if got is not None and got != self.number:
                ck.error(
                    ("wave",),
                    f"wave: {got} disagrees with the file name (wave {self.number})",
                    f"wave: {self.number}",
                )
        title = ck.string(raw.get("title", f"Wave {self.number}"), ("title",)) or ""
        commit = None
        if raw.get("commit_message") is not None:
            commit = ck.string(raw["commit_message"], ("commit_message",))
        shared = [
            self._owned(p, ("shared", i))
            for i, p in enumerate(ck.string_list(raw.get("shared"), ("shared",)) or [])
        ]
        self.placement = check_placement_override(ck, raw.get("placement"), self.lane.placement)
        self.isolation = check_isolation(ck, raw, self.lane.isolation)  # agent ids depend on it
        self.components = check_components(ck, raw.get("components"))  # agents own them
        self._check_base(raw)
        agents_raw = raw.get("agents")
        if not isinstance(agents_raw, list) or not agents_raw:
            if agents_raw is None or isinstance(agents_raw, list):
                ck.error(("agents",), "a wave needs at least one agent", "a list of agents")
            else:
                ck.wrong_type(("agents",), agents_raw, "a list of agents")
            return None
        loaded = [(i, a) for i, item in enumerate(agents_raw) if (a := self._agent(item, i))]
        # Wave-level rules run on the agents that loaded, so their errors show up now too.
        self._check_wave_rules(loaded, [s for s in shared if s], agents_raw)
        judged = any(a.role == "cont-eval" for _, a in loaded)
        targets = check_eval_targets(ck, raw.get("eval_targets"), self.lane.benchmarks, judged)
        lanes = self._lane_dependencies(raw.get("depends_on_lanes"))
        caps, spend = check_wave_governance(ck, raw, self.lane.settings.accounts)
        check_component_owners(ck, self.components, loaded)
        if len(loaded) != len(agents_raw):
            return None
        agents = [a for _, a in loaded]
        return WaveDef(
            number=self.number,
            title=title,
            path=self.path,
            agents=tuple(agents),
            commit_message=commit,
            shared=tuple(s for s in shared if s),
            isolation=self.isolation,
            placement=self.placement,
            eval_targets=targets,
            depends_on_lanes=lanes,
            components=tuple(self.components.items()),
            caps=caps,
            spend_limit_usd=spend,
        )

    def _lane_dependencies(self, value: Any) -> tuple[tuple[str, int], ...]:
        """``depends_on_lanes: [lane:wave, ...]``: waves of other lanes of this repository
        that must have completed before this wave starts."""
        p: FieldPath = ("depends_on_lanes",)
        found: list[tuple[str, int]] = []
        for j, item in enumerate(self.ck.string_list(value, p) or []):
            lane, _, number = item.partition(":")
            if not (LANE_NAME_RE.fullmatch(lane) and number.isdigit() and int(number) >= 1):
                self.ck.error((*p, j), f"invalid lane wave {item!r}", "lane:wave, e.g. infra:2")
            elif lane == self.lane.name:
                self.ck.error((*p, j), f"{item!r} is a wave of this lane", "another lane's wave")
            elif not (self.lane.repo / "lanes" / lane / "lane.yaml").is_file():
                self.ck.error((*p, j), f"no lane {lane!r} in this repository",
                              f"a lanes/{lane}/lane.yaml")  # fmt: skip
            else:
                found.append((lane, int(number)))
        return tuple(found)

    def _check_base(self, raw: Mapping[str, Any]) -> None:
        """A worktree wave's base must name a commit (when the repository is a git one), or
        the launch would record the wave running and then fail: reported where it is written."""
        iso = self.isolation
        if not iso.worktree or iso.base is None:
            return
        if raw.get("base") == iso.base:
            self.lane.base_refs.check(self.ck, self.lane.repo, iso.base)
        elif self.lane.lane_checker is not None and iso.base == self.lane.isolation.base:
            self.lane.base_refs.check(self.lane.lane_checker, self.lane.repo, iso.base)

    def _owned(self, raw: str, path: FieldPath) -> str | None:
        norm = normalise_repo_path(raw)
        if norm is None:
            self.ck.error(
                path,
                f"path {raw!r} is absolute, escapes the repository or has control characters",
                "a path relative to the repository",
            )
        elif self.lane.confine(norm) is None:
            self.ck.error(
                path,
                f"path {raw!r} leads out of the repository through a symbolic link",
                "a path that stays inside the repository",
            )
            return None
        return norm

    def _agent(self, item: Any, i: int) -> AgentDef | None:
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
        proofs = self._proof_artifacts(raw.get("proof_artifacts"), (*p, "proof_artifacts"), role)
        owned = check_owned_components(ck, raw.get("components"), (*p, "components"),
                                       self.components, role)  # fmt: skip
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
        )

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
            raw = {"path": item} if isinstance(item, str) else self.ck.mapping(
                item, (*p, j), ("path", "gate"))  # fmt: skip
            if raw is None:
                continue
            where = (*p, j, "path") if isinstance(item, dict) else (*p, j)
            text = self.ck.string(raw.get("path"), where, what="a path")
            gate = self.ck.string(raw.get("gate", own), (*p, j, "gate"), noun="gate",
                                  choices=("implementation", *CLOSURE_ORDER))  # fmt: skip
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

    def _check_wave_rules(
        self, loaded: list[tuple[int, AgentDef]], shared: list[str], raw_items: list[Any]
    ) -> None:
        """Rules across agents. ``loaded`` keeps each agent's index in the file; ids and roles of
        agents that failed to load still count, so their absence is not reported twice."""
        ck = self.ck
        raw_ids = {item.get("id") for item in raw_items if isinstance(item, dict)}
        raw_roles = {item.get("role") for item in raw_items if isinstance(item, dict)}
        closure_ids = {a.id for _, a in loaded if a.is_closure}
        index: dict[str, int] = {}
        for i, a in loaded:
            if a.id in index:
                ck.error(
                    ("agents", i, "id"),
                    f"duplicate agent id {a.id!r} (also agents[{index[a.id]}])",
                    "ids unique in the wave",
                )
            index.setdefault(a.id, i)
        for i, a in loaded:
            for j, dep in enumerate(a.depends_on):
                if dep == a.id:
                    ck.error(
                        ("agents", i, "depends_on", j),
                        "an agent cannot depend on itself",
                        "another agent of this wave",
                    )
                elif dep not in raw_ids:
                    ck.error(
                        ("agents", i, "depends_on", j),
                        f"unknown agent {dep!r}",
                        "one of: " + ", ".join(x for x in index if x != a.id),
                    )
                elif dep in closure_ids and not a.is_closure:
                    ck.error(
                        ("agents", i, "depends_on", j),
                        f"{dep!r} is a closure agent, which runs after every implementation agent",
                        "an implementation agent of this wave",
                    )
        self._check_cycles(loaded, index)
        for role in CLOSURE_ORDER:
            members = [i for i, a in loaded if a.role == role]
            if role in self.lane.required_roles and not members and role not in raw_roles:
                ck.error(
                    ("agents",),
                    f"no agent with the required closure role {role!r}",
                    "closure.required_roles: " + ", ".join(self.lane.required_roles),
                )
            if role != "security" and len(members) > 1:
                ck.error(
                    ("agents", members[1], "role"),
                    f"more than one {role!r} agent",
                    f"at most one {role} agent per wave",
                )
        if not self.lane.shared_files:
            self._check_ownership(loaded, shared)

    def _check_cycles(self, loaded: list[tuple[int, AgentDef]], index: dict[str, int]) -> None:
        """The first depends_on cycle, found without recursion (a chain of thousands of
        agents must not overflow the stack) in time linear in agents and edges."""
        graph = {a.id: [d for d in a.depends_on if d in index and d != a.id] for _, a in loaded}
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        for _, a in loaded:
            if a.id in state:
                continue
            trail: list[str] = [a.id]
            where: dict[str, int] = {a.id: 0}
            stack = [iter(graph[a.id])]
            state[a.id] = 1
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:
                    state[trail.pop()] = 2
                    stack.pop()
                    continue
                if state.get(nxt) == 1:
                    cycle = [*trail[where[nxt] :], nxt]
                    self.ck.error(
                        ("agents", index[cycle[0]], "depends_on"),
                        "depends_on forms a cycle: " + " -> ".join(cycle),
                        "no cycles",
                    )
                    return
                if nxt not in state:
                    state[nxt] = 1
                    where[nxt] = len(trail)
                    trail.append(nxt)
                    stack.append(iter(graph[nxt]))

    def _check_ownership(self, loaded: list[tuple[int, AgentDef]], shared: list[str]) -> None:
        """Each owned path overlaps no earlier path of another agent (unless shared); an index
        makes each check cost the path's depth, not the number of paths claimed so far."""
        shared_index = OwnedPaths()
        for path in shared:
            shared_index.add(path, -1, "")
        claimed = OwnedPaths()
        for i, a in loaded:
            for j, path in enumerate(a.owns):
                if shared_index.overlap(path, -2) is not None:
                    continue
                other = claimed.overlap(path, i)
                if other is not None:
                    self.ck.error(
                        ("agents", i, "owns", j),
                        f"{path!r} is also owned by {other.owner_id} ({other.path!r})",
                        "each path owned by one agent, or shared_files: true, "
                        "or the path listed in the wave's shared:",
                    )
                claimed.add(path, i, a.id)
