"""Where lane and wave files are parsed and validated (SPEC 1) into frozen definitions.

Everything is checked before anything is built, and every problem is reported at once with the
file, line and column of the YAML node that breaks the rule.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .definitions import (
    AGENT_ID_RE,
    CLOSURE_ORDER,
    EXECUTOR_IDS,
    LANE_NAME_RE,
    ROLES,
    WAVE_FILE_RE,
    AgentDef,
    ExecutorSpec,
    ExitContract,
    LaneDef,
    LaneDefaults,
    RateLimitPolicy,
    WaveDef,
)
from .errors import LaneInvalid, LaneProblem
from .executors import (
    BUILTIN_SETTINGS,
    SETTING_KINDS,
    merge_settings,
    reasoning_for,
    reasoning_problem,
)
from .layout import resolve_state_dir
from .schema import Checker
from .yaml_source import FieldPath, Located, YamlSyntaxError, load_located

LANE_KEYS = (
    "description",
    "state_dir",
    "shared_files",
    "defaults",
    "closure",
    "role_prompts",
    "executors",
    "profiles",
)
DEFAULTS_KEYS = (
    "executor",
    "timeout_minutes",
    "max_retries_per_wave",
    "launch_stagger_ms",
    "stall_minutes",
    "rate_limit",
)
RATE_LIMIT_KEYS = (
    "retries",
    "base_delay_seconds",
    "max_delay_seconds",
    "jitter_seconds",
    "patterns",
    "usage_limit_patterns",
)
COMMON_EXECUTOR_KEYS = ("model", "reasoning", "budget", "fallbacks", "env", *EXECUTOR_IDS)
AGENT_EXECUTOR_KEYS = ("id", *COMMON_EXECUTOR_KEYS)
PROFILE_KEYS = ("executor", *COMMON_EXECUTOR_KEYS)
AGENT_KEYS = (
    "id",
    "title",
    "role",
    "profile",
    "executor",
    "prompt",
    "prompt_file",
    "owns",
    "deliverables",
    "exit_contract",
    "depends_on",
)
WAVE_KEYS = ("wave", "title", "commit_message", "agents", "shared")
CONTRACT_LEVELS = {
    "completion": ("contract", "integrated", "authoritative", "live"),
    "durability": ("none", "ephemeral", "durable"),
    "proof": ("unit", "integration", "live"),
    "doc_impact": ("none", "owned", "shared-plan"),
}


def _parse(path: Path, display: str, problems: list[LaneProblem]) -> Located | None:
    try:
        return load_located(path)
    except YamlSyntaxError as exc:
        problems.append(LaneProblem(display, exc.line, exc.column, "", str(exc)))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(LaneProblem(display, 1, 1, "", f"cannot read file: {exc}"))
    return None


def normalise_repo_path(raw: str) -> str | None:
    """A repository-relative POSIX path, or None when it is absolute, escapes, or is hostile."""
    if not raw or raw.startswith(("/", "~")) or any(ord(c) < 32 or c == "\x7f" for c in raw):
        return None
    trailing = raw.endswith("/")
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../") or norm == ".":
        return None
    return norm + "/" if trailing else norm


def paths_overlap(a: str, b: str) -> bool:
    """Two owned paths overlap when equal or when one is a folder holding the other."""
    if a.rstrip("/") == b.rstrip("/"):
        return True
    return (a.endswith("/") and b.startswith(a)) or (b.endswith("/") and a.startswith(b))


class _Layer(dict[str, Any]):
    """One layer of executor settings (lane, profile or agent), before merging."""


class LaneLoader:
    """Loads one lane; ``load()`` returns a LaneDef or raises LaneInvalid with every problem."""

    def __init__(self, repo: Path, name: str, default_executor: str | None = None) -> None:
        self.repo = repo
        self.name = name
        self.lane_dir = repo / "lanes" / name
        self.default_executor = default_executor
        self.problems: list[LaneProblem] = []

    def display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.repo))
        except ValueError:
            return str(path)

    # -- lane.yaml ---------------------------------------------------------------------------
    def load(self) -> LaneDef:
        lane_file = self.lane_dir / "lane.yaml"
        doc = _parse(lane_file, self.display(lane_file), self.problems)
        ck = Checker(self.display(lane_file), doc or Located(None), self.problems)
        if not LANE_NAME_RE.match(self.name):
            ck.error((), f"invalid lane name {self.name!r}", f"to match {LANE_NAME_RE.pattern}")
        raw = ck.mapping(doc.data if doc else None, (), LANE_KEYS) or {}
        description = ck.string(raw.get("description", ""), ("description",)) or ""
        shared_files = bool(ck.boolean(raw.get("shared_files", False), ("shared_files",)))
        defaults = self._defaults(ck, raw.get("defaults"))
        required = self._required_roles(ck, raw.get("closure"))
        role_prompts = self._role_prompts(ck, raw.get("role_prompts"))
        lane_settings = self._lane_executors(ck, raw.get("executors"))
        profiles = self._profiles(ck, raw.get("profiles"))
        state_dir = self._state_dir(ck, raw.get("state_dir"))
        if self.default_executor is not None:
            defaults = LaneDefaults(**{**defaults.__dict__, "executor": self.default_executor})
        waves = self._waves(ck, defaults, required, shared_files, lane_settings, profiles)
        if self.problems:
            raise LaneInvalid(self.problems)
        return LaneDef(
            name=self.name,
            repo=self.repo,
            path=self.lane_dir,
            state_dir=state_dir,
            description=description,
            shared_files=shared_files,
            defaults=defaults,
            required_roles=tuple(required),
            role_prompts=role_prompts,
            waves=tuple(waves),
        )

    def _state_dir(self, ck: Checker, value: Any) -> Path:
        text = None if value is None else ck.string(value, ("state_dir",), what="a path or null")
        return resolve_state_dir(self.repo, self.name, text)

    def _defaults(self, ck: Checker, value: Any) -> LaneDefaults:
        raw = ck.mapping(value, ("defaults",), DEFAULTS_KEYS) or {}
        base = LaneDefaults()
        p: FieldPath = ("defaults",)
        executor = base.executor
        if "executor" in raw:
            executor = (
                ck.string(raw["executor"], (*p, "executor"), choices=EXECUTOR_IDS) or executor
            )

        def num(key: str, default: float, **kw: Any) -> float:
            if key not in raw:
                return default
            got = ck.number(raw[key], (*p, key), **kw)
            return default if got is None else got

        return LaneDefaults(
            executor=executor,
            timeout_minutes=num("timeout_minutes", base.timeout_minutes, positive=True),
            max_retries_per_wave=int(
                num("max_retries_per_wave", base.max_retries_per_wave, integer=True)
            ),
            launch_stagger_ms=num("launch_stagger_ms", base.launch_stagger_ms),
            stall_minutes=num("stall_minutes", base.stall_minutes),
            rate_limit=self._rate_limit(ck, raw.get("rate_limit")),
        )

    def _rate_limit(self, ck: Checker, value: Any) -> RateLimitPolicy:
        p: FieldPath = ("defaults", "rate_limit")
        raw = ck.mapping(value, p, RATE_LIMIT_KEYS) or {}
        base = RateLimitPolicy()
        values: dict[str, Any] = {}
        for key, integer in (
            ("retries", True),
            ("base_delay_seconds", False),
            ("max_delay_seconds", False),
            ("jitter_seconds", False),
        ):
            if key in raw:
                got = ck.number(raw[key], (*p, key), integer=integer)
                if got is not None:
                    values[key] = int(got) if integer else got
        for key in ("patterns", "usage_limit_patterns"):
            if key in raw:
                got_list = ck.regex_list(raw[key], (*p, key))
                if got_list is not None:
                    values[key] = tuple(got_list)
        policy = RateLimitPolicy(**{**base.__dict__, **values})
        if policy.max_delay_seconds < policy.base_delay_seconds:
            ck.error(
                (*p, "max_delay_seconds"),
                f"max_delay_seconds ({policy.max_delay_seconds}) is less than base_delay_seconds "
                f"({policy.base_delay_seconds})",
                "max_delay_seconds >= base_delay_seconds",
            )
        return policy

    def _required_roles(self, ck: Checker, value: Any) -> list[str]:
        raw = ck.mapping(value, ("closure",), ("required_roles",)) or {}
        if "required_roles" not in raw:
            return []  # the closure sweep (a later issue) will make [cont-qa] the default
        got = ck.string_list(
            raw["required_roles"], ("closure", "required_roles"), choices=CLOSURE_ORDER
        )
        return got or []

    def _role_prompts(self, ck: Checker, value: Any) -> dict[str, str]:
        raw = ck.mapping(value, ("role_prompts",), ROLES) or {}
        out: dict[str, str] = {}
        for role, rel in raw.items():
            if role not in ROLES or rel is None:
                continue
            text = ck.string(rel, ("role_prompts", role), what="a path relative to the lane folder")
            if text is None:
                continue
            target = (self.lane_dir / text).resolve()
            try:
                out[role] = target.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                ck.error(
                    ("role_prompts", role),
                    f"cannot read {text!r}: {exc.__class__.__name__}",
                    "a readable file in the lane folder",
                )
        return out

    def _settings_block(
        self, ck: Checker, value: Any, path: FieldPath, executor_id: str
    ) -> dict[str, Any] | None:
        kinds = SETTING_KINDS[executor_id]
        raw = ck.mapping(value, path, kinds)
        if raw is None:
            return None
        out: dict[str, Any] = {}
        for key, val in raw.items():
            kind = kinds.get(key)
            where = (*path, key)
            if kind is None:
                continue
            if kind == "list":
                got: Any = ck.string_list(val, where)
            elif kind == "bool":
                got = ck.boolean(val, where)
            elif kind == "str":
                got = ck.string(val, where)
            elif kind == "str?":
                got = None if val is None else ck.string(val, where)
            elif kind == "int?":
                got = None if val is None else ck.number(val, where, integer=True, positive=True)
            elif kind == "command":
                got = self._local_command(ck, val, where)
            else:  # a tuple of choices
                got = (
                    val
                    if val is None and None in kind
                    else ck.string(val, where, choices=[c for c in kind if c])
                )
            if got is not None or val is None:
                out[key] = got
        return out

    def _local_command(self, ck: Checker, value: Any, path: FieldPath) -> Any:
        if value is None or (isinstance(value, str) and value.strip()):
            return value
        if isinstance(value, list) and value:
            return ck.string_list(value, path)
        ck.error(path, "empty or invalid command", "an argv list or one command string")
        return None

    def _lane_executors(self, ck: Checker, value: Any) -> dict[str, dict[str, Any]]:
        raw = ck.mapping(value, ("executors",), EXECUTOR_IDS) or {}
        settings = {ex: dict(block) for ex, block in BUILTIN_SETTINGS.items()}
        for ex, block in raw.items():
            if ex in EXECUTOR_IDS:
                got = self._settings_block(ck, block, ("executors", ex), ex)
                if got:
                    settings[ex] = merge_settings(settings[ex], got)
        return settings

    def _layer(self, ck: Checker, raw: Mapping[str, Any], path: FieldPath, id_key: str) -> _Layer:
        """Check an agent's `executor` block or a profile; both share every key but the id's."""
        layer = _Layer()
        if id_key in raw:
            layer["id"] = ck.string(raw[id_key], (*path, id_key), choices=EXECUTOR_IDS)
        for key in ("model", "reasoning"):
            if key in raw and raw[key] is not None:
                layer[key] = ck.string(raw[key], (*path, key))
        if "budget" in raw:
            budget = ck.mapping(raw["budget"], (*path, "budget"), ("minutes", "turns")) or {}
            if "minutes" in budget:
                layer["budget_minutes"] = ck.number(
                    budget["minutes"], (*path, "budget", "minutes"), positive=True
                )
            if "turns" in budget:
                layer["budget_turns"] = ck.number(
                    budget["turns"], (*path, "budget", "turns"), integer=True, positive=True
                )
        if "fallbacks" in raw:
            layer["fallbacks"] = ck.string_list(
                raw["fallbacks"], (*path, "fallbacks"), choices=EXECUTOR_IDS
            )
        if "env" in raw:
            layer["env"] = self._env(ck, raw["env"], (*path, "env"))
        layer["settings"] = {}
        for ex in EXECUTOR_IDS:
            if ex in raw:
                block = self._settings_block(ck, raw[ex], (*path, ex), ex)
                if block:
                    layer["settings"][ex] = block
        return layer

    def _env(self, ck: Checker, value: Any, path: FieldPath) -> dict[str, str]:
        if not isinstance(value, dict):
            ck.wrong_type(path, value, "a mapping of NAME: value")
            return {}
        out: dict[str, str] = {}
        for key, val in value.items():
            if not key.replace("_", "a").isalnum() or not key.isascii() or key[0].isdigit():
                ck.error(
                    (*path, key),
                    f"invalid variable name {key!r}",
                    "letters, digits and _",
                    key=True,
                )
            elif isinstance(val, bool) or not isinstance(val, str | int | float):
                ck.wrong_type((*path, key), val, "a string")
            elif "\x00" in str(val):
                ck.error((*path, key), "value contains a NUL byte", "a string")
            else:
                out[key] = str(val)
        return out

    def _profiles(self, ck: Checker, value: Any) -> dict[str, _Layer]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            ck.wrong_type(("profiles",), value, "a mapping of profile name to settings")
            return {}
        out: dict[str, _Layer] = {}
        for name, body in value.items():
            raw = ck.mapping(body, ("profiles", name), PROFILE_KEYS)
            if raw is not None:
                out[name] = self._layer(ck, raw, ("profiles", name), "executor")
        return out

    # -- waves -------------------------------------------------------------------------------
    def _waves(
        self,
        lane_ck: Checker,
        defaults: LaneDefaults,
        required: list[str],
        shared_files: bool,
        lane_settings: dict[str, dict[str, Any]],
        profiles: dict[str, _Layer],
    ) -> list[WaveDef]:
        waves_dir = self.lane_dir / "waves"
        files = sorted(waves_dir.iterdir()) if waves_dir.is_dir() else []
        seen: dict[int, Path] = {}
        waves: list[WaveDef] = []
        for path in files:
            match = WAVE_FILE_RE.match(path.name)
            if not match:
                if path.suffix in (".yaml", ".yml"):
                    self.problems.append(
                        LaneProblem(
                            self.display(path), 1, 1, "", "file name must match wave-<n>.yaml"
                        )
                    )
                continue
            number = int(match.group(1))
            if number in seen:
                self.problems.append(
                    LaneProblem(
                        self.display(path),
                        1,
                        1,
                        "",
                        f"wave {number} is defined twice (also in {self.display(seen[number])})",
                    )
                )
                continue
            seen[number] = path
            ctx = _WaveContext(
                self, path, number, defaults, required, shared_files, lane_settings, profiles
            )
            wave = ctx.load()
            if wave is not None:
                waves.append(wave)
        if not seen:
            lane_ck.error(
                (),
                f"lane {self.name!r} has no waves",
                f"files {self.display(waves_dir)}/wave-<n>.yaml",
            )
        return sorted(waves, key=lambda w: w.number)


class _WaveContext:
    """Validates one wave file against the lane it belongs to."""

    def __init__(
        self,
        loader: LaneLoader,
        path: Path,
        number: int,
        defaults: LaneDefaults,
        required: list[str],
        shared_files: bool,
        lane_settings: dict[str, dict[str, Any]],
        profiles: dict[str, _Layer],
    ) -> None:
        self.loader = loader
        self.path = path
        self.number = number
        self.defaults = defaults
        self.required = required
        self.shared_files = shared_files
        self.lane_settings = lane_settings
        self.profiles = profiles

    def load(self) -> WaveDef | None:
        display = self.loader.display(self.path)
        doc = _parse(self.path, display, self.loader.problems)
        if doc is None:
            return None
        ck = self.ck = Checker(display, doc, self.loader.problems)
        raw = ck.mapping(doc.data, (), WAVE_KEYS)
        if raw is None:
            return None
        if "wave" in raw:
            got = ck.number(raw["wave"], ("wave",), integer=True)
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
        agents_raw = raw.get("agents")
        if not isinstance(agents_raw, list) or not agents_raw:
            if agents_raw is None or isinstance(agents_raw, list):
                ck.error(("agents",), "a wave needs at least one agent", "a list of agents")
            else:
                ck.wrong_type(("agents",), agents_raw, "a list of agents")
            return None
        agents = [a for i, item in enumerate(agents_raw) if (a := self._agent(item, i)) is not None]
        if len(agents) != len(agents_raw):
            return None
        self._check_wave_rules(agents, [s for s in shared if s])
        return WaveDef(
            number=self.number,
            title=title,
            path=self.path,
            agents=tuple(agents),
            commit_message=commit,
            shared=tuple(s for s in shared if s),
        )

    def _owned(self, raw: str, path: FieldPath) -> str | None:
        norm = normalise_repo_path(raw)
        if norm is None:
            self.ck.error(
                path,
                f"path {raw!r} is absolute, escapes the repository or has control characters",
                "a path relative to the repository",
            )
        return norm

    def _agent(self, item: Any, i: int) -> AgentDef | None:
        ck, p = self.ck, ("agents", i)
        raw = ck.mapping(item, p, AGENT_KEYS)
        if raw is None:
            return None
        before = len(ck.problems)
        agent_id = (
            ck.string(raw.get("id"), (*p, "id"), pattern=AGENT_ID_RE, what="an agent id")
            if "id" in raw
            else None
        )
        if "id" not in raw:
            ck.error(p, "missing id", "an agent id matching " + AGENT_ID_RE.pattern)
        role = (
            ck.string(raw.get("role", "implementation"), (*p, "role"), choices=ROLES)
            or "implementation"
        )
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
        spec = self._executor(raw, p)
        if len(ck.problems) > before or agent_id is None or spec is None:
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
        )

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
                return (self.loader.repo / norm).read_text(encoding="utf-8"), norm
            except (OSError, UnicodeDecodeError) as exc:
                ck.error(
                    (*p, "prompt_file"),
                    f"cannot read {rel!r}: {exc.__class__.__name__}",
                    "a readable file in the repository",
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

    def _executor(self, raw: Mapping[str, Any], p: FieldPath) -> ExecutorSpec | None:
        """Merge built-ins → lane executors → profile → the agent's own block (SPEC 4)."""
        ck = self.ck
        profile = _Layer()
        if "profile" in raw:
            name = ck.string(raw["profile"], (*p, "profile"))
            if name is not None and name not in self.profiles:
                ck.error(
                    (*p, "profile"),
                    f"unknown profile {name!r}",
                    "one of: " + (", ".join(sorted(self.profiles)) or "(no profiles in lane.yaml)"),
                )
                return None
            profile = self.profiles.get(name or "", _Layer())
        own = _Layer()
        if "executor" in raw:
            block = ck.mapping(raw["executor"], (*p, "executor"), AGENT_EXECUTOR_KEYS)
            if block is None:
                return None
            own = self.loader._layer(ck, block, (*p, "executor"), "id")
        layers = (profile, own)
        pick = lambda key, default=None: next(
            (lay[key] for lay in reversed(layers) if lay.get(key) is not None), default
        )
        executor_id = pick("id", self.defaults.executor)
        settings = {ex: dict(block) for ex, block in self.lane_settings.items()}
        env: dict[str, str] = {}
        for lay in layers:
            for ex, block in lay.get("settings", {}).items():
                settings[ex] = merge_settings(settings[ex], block)
            env.update(lay.get("env") or {})
        spec = ExecutorSpec(
            id=executor_id,
            model=pick("model"),
            reasoning=pick("reasoning"),
            budget_minutes=pick("budget_minutes"),
            budget_turns=pick("budget_turns"),
            fallbacks=tuple(pick("fallbacks", [])),
            env=env,
            settings=settings,
        )
        for ex in (executor_id, *spec.fallbacks):
            level = reasoning_for(spec, ex)
            if (
                level
                and (ex != "local" or ex == executor_id)
                and (problem := reasoning_problem(ex, level))
            ):
                ck.error((*p, "executor", "reasoning"), problem)
            if ex == "local" and not settings["local"].get("command"):
                ck.error(
                    (*p, "executor", "local", "command"),
                    "the local executor needs a command",
                    "local: {command: [program, args...]} or a command string",
                )
        return spec

    def _check_wave_rules(self, agents: list[AgentDef], shared: list[str]) -> None:
        ck = self.ck
        index: dict[str, int] = {}
        for i, a in enumerate(agents):
            if a.id in index:
                ck.error(
                    ("agents", i, "id"),
                    f"duplicate agent id {a.id!r} (also agents[{index[a.id]}])",
                    "ids unique in the wave",
                )
            index.setdefault(a.id, i)
        for i, a in enumerate(agents):
            for j, dep in enumerate(a.depends_on):
                if dep not in index or dep == a.id:
                    ck.error(
                        ("agents", i, "depends_on", j),
                        f"unknown agent {dep!r}"
                        if dep != a.id
                        else "an agent cannot depend on itself",
                        "one of: " + ", ".join(x for x in index if x != a.id),
                    )
        self._check_cycles(agents, index)
        for role in CLOSURE_ORDER:
            members = [i for i, a in enumerate(agents) if a.role == role]
            if role in self.required and not members:
                ck.error(
                    ("agents",),
                    f"no agent with the required closure role {role!r}",
                    "closure.required_roles: " + ", ".join(self.required),
                )
            if role != "security" and len(members) > 1:
                ck.error(
                    ("agents", members[1], "role"),
                    f"more than one {role!r} agent",
                    f"at most one {role} agent per wave",
                )
        if not self.shared_files:
            self._check_ownership(agents, shared)

    def _check_cycles(self, agents: list[AgentDef], index: dict[str, int]) -> None:
        graph = {a.id: [d for d in a.depends_on if d in index and d != a.id] for a in agents}
        state: dict[str, int] = {}

        def visit(node: str, trail: list[str]) -> list[str] | None:
            state[node] = 1
            for nxt in graph[node]:
                if state.get(nxt) == 1:
                    return [*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt]
                if nxt not in state and (cycle := visit(nxt, [*trail, nxt])):
                    return cycle
            state[node] = 2
            return None

        for a in agents:
            if a.id not in state and (cycle := visit(a.id, [a.id])):
                self.ck.error(
                    ("agents", index[cycle[0]], "depends_on"),
                    "depends_on forms a cycle: " + " -> ".join(cycle),
                    "no cycles",
                )
                return

    def _check_ownership(self, agents: list[AgentDef], shared: list[str]) -> None:
        claimed: list[tuple[str, int, str]] = []
        for i, a in enumerate(agents):
            for j, path in enumerate(a.owns):
                if any(paths_overlap(path, s) for s in shared):
                    continue
                for other_path, other_i, other_id in claimed:
                    if other_id != a.id and paths_overlap(path, other_path):
                        self.ck.error(
                            ("agents", i, "owns", j),
                            f"{path!r} is also owned by {other_id} ({other_path!r})",
                            "each path owned by one agent (or shared_files: true / shared: in the wave)",
                        )
                        break
                claimed.append((path, i, a.id))


def load_lane(repo: Path, name: str, *, default_executor: str | None = None) -> LaneDef:
    """Load and validate the whole lane; raises LaneInvalid listing every problem."""
    return LaneLoader(repo, name, default_executor).load()
