"""Where lane and wave files are parsed and validated into frozen definitions.

Everything is checked before anything is built, and every problem is reported at once with the
file, line and column of the YAML node that breaks the rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import LaneInvalid, LaneProblem
from ...names import LANE_NAME_RE, WAVE_FILE_RE
from ...state.layout import resolve_state_dir
from ..model import (
    NUMBER_RANGES,
    ROLES,
    IsolationSettings,
    LaneDef,
    WaveDef,
)
from ..repository.lanes import state_dir_problem
from ..repository.paths import normalise_repo_path
from ..sections.closure import check_closure
from ..sections.context7 import check_lane_context7
from ..sections.defaults import check_defaults
from ..sections.eval_targets import check_catalog
from ..sections.executor_settings import (
    LaneSettings,
    check_lane_executors,
    check_profiles,
)
from ..sections.governance import check_governance
from ..sections.isolation import check_isolation, check_merge
from ..sections.notify import check_feedback_minutes, check_notify
from ..sections.placement import check_lane_placement
from ..sections.shared_plan import check_shared_plan_docs
from ..sections.skills import check_lane_skills
from ..sections.ssh import check_lane_ssh, check_ssh_placement
from ..sections.stall import check_stall
from ..source.schema import Checker
from ..source.yaml_source import Located
from .lane_context import LaneContext, parse_file, read_inside
from .wave_loader import WaveLoader

LANE_KEYS = (
    "description",
    "state_dir",
    "shared_files",
    "defaults",
    "closure",
    "role_prompts",
    "executors",
    "profiles",
    "notify",
    "feedback",
    "isolation",
    "base",
    "setup",
    "merge",
    "placement",
    "benchmarks",
    "usage_limit",
    "stall",
    "accounts",
    "spend_limit_usd",
    "spend_limit",
    "context7",
    "skills",
    "shared_plan_docs",
    "ssh",
)


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
        doc = parse_file(lane_file, self.display(lane_file), self.problems)
        ck = Checker(self.display(lane_file), doc or Located(None), self.problems)
        if not LANE_NAME_RE.fullmatch(self.name):
            ck.error((), f"invalid lane name {self.name!r}", f"to match {LANE_NAME_RE.pattern}")
        if not utf8_path(self.repo):
            # prompts, run.sh and every state file name the repository: they are UTF-8 text
            ck.error((), f"the repository path {str(self.repo)!r} is not UTF-8", "a UTF-8 path")
        raw = ck.mapping(doc.data if doc else None, (), LANE_KEYS) or {}
        description = ck.string(raw.get("description", ""), ("description",)) or ""
        shared_files = bool(ck.boolean(raw.get("shared_files", False), ("shared_files",)))
        defaults = check_defaults(ck, raw.get("defaults"))
        closure = check_closure(ck, raw.get("closure"))
        role_prompts = self._role_prompts(ck, raw.get("role_prompts"))
        lane_settings = check_lane_executors(ck, raw.get("executors"))
        if self.default_executor is not None:
            defaults = defaults._replace(executor=self.default_executor)
        profiles = check_profiles(ck, raw.get("profiles"), defaults.executor)
        state_dir = self._state_dir(ck, raw.get("state_dir"))
        notify = check_notify(ck, raw.get("notify"))
        feedback_minutes = check_feedback_minutes(ck, raw.get("feedback"))
        isolation = check_isolation(ck, raw, IsolationSettings())
        merge = check_merge(ck, raw.get("merge"))
        placement = check_lane_placement(ck, raw.get("placement"))
        ssh = check_lane_ssh(ck, raw.get("ssh"), self.repo)
        placement = placement._replace(ssh=ssh) if placement.remote else placement
        check_ssh_placement(ck, raw, placement, isolation)
        catalog = check_catalog(ck, raw.get("benchmarks"))
        governance = check_governance(ck, raw, raw.get("defaults"))
        docs = check_lane_context7(ck, raw.get("context7"), self.repo, self.display, self.problems)
        skills = check_lane_skills(ck, raw.get("skills"), self.repo)
        plan_docs = check_shared_plan_docs(ck, raw.get("shared_plan_docs"))
        stall = check_stall(ck, raw.get("stall"))
        lane = LaneContext(
            repo=self.repo,
            display=self.display,
            problems=self.problems,
            settings=LaneSettings(defaults.executor, lane_settings, profiles, governance.accounts),
            closure=closure,
            shared_files=shared_files,
            isolation=isolation,
            placement=placement,
            sandbox=defaults.sandbox,
            lane_checker=ck,
            benchmarks=catalog,
            name=self.name,
            context7=docs,
            skills=skills,
        )
        waves = self._waves(ck, lane)
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
            required_roles=closure.required_roles,
            role_prompts=role_prompts,
            waves=tuple(waves),
            notify_command=notify.command,
            notify=notify,
            feedback_timeout_minutes=feedback_minutes,
            merge=merge,
            placement=placement,
            benchmarks=catalog,
            governance=governance,
            context7=docs.settings if docs else None,
            skills=lane.skills,
            shared_plan_docs=plan_docs,
            stall=stall,
        )

    def _state_dir(self, ck: Checker, value: Any) -> Path:
        text = None if value is None else ck.string(value, ("state_dir",), what="a path or null")
        if text is not None and (why := state_dir_problem(text)):
            ck.error(("state_dir",), why, "a path or null")
            text = None
        return resolve_state_dir(self.repo, self.name, text)

    def _role_prompts(self, ck: Checker, value: Any) -> dict[str, str]:
        raw = ck.mapping(value, ("role_prompts",), ROLES) or {}
        out: dict[str, str] = {}
        for role, rel in raw.items():
            if role not in ROLES or rel is None:
                continue
            where = ("role_prompts", role)
            text = ck.string(rel, where, what="a path relative to the lane folder")
            norm = normalise_repo_path(text) if text is not None else None
            if text is not None and norm is None:
                ck.error(
                    where,
                    f"path {text!r} is absolute or leaves the lane folder",
                    "a path relative to the lane folder",
                )
            if norm is None:
                continue
            try:
                out[role] = read_inside(self.lane_dir, norm)
            except (OSError, ValueError) as exc:
                ck.error(where, f"cannot use {text!r}: {exc}", "a readable file in the lane folder")
        return out

    # -- waves -------------------------------------------------------------------------------
    def _waves(self, lane_ck: Checker, lane: LaneContext) -> list[WaveDef]:
        """Each ``waves/wave-<n>.yaml``, loaded against what lane.yaml settled."""
        waves_dir = self.lane_dir / "waves"
        files = sorted(waves_dir.iterdir()) if waves_dir.is_dir() else []
        seen: dict[int, Path] = {}
        waves: list[WaveDef] = []
        for path in files:
            match = WAVE_FILE_RE.fullmatch(path.name)
            if not match:
                if path.suffix in (".yaml", ".yml"):
                    self.problems.append(
                        LaneProblem(
                            self.display(path), 1, 1, "", "file name must match wave-<n>.yaml"
                        )
                    )
                continue
            number = int(match.group(1))
            low, high = NUMBER_RANGES["wave"]
            if not low <= number <= high:
                self.problems.append(
                    LaneProblem(
                        self.display(path), 1, 1, "", f"wave number {number} is over {high:g}"
                    )
                )
                continue
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
            wave = WaveLoader(lane, path, number).load()
            if wave is not None:
                waves.append(wave)
        if not seen:
            lane_ck.error(
                (),
                f"lane {self.name!r} has no waves",
                f"files {self.display(waves_dir)}/wave-<n>.yaml",
            )
        return sorted(waves, key=lambda w: w.number)


def utf8_path(path: Path) -> bool:
    """Whether ``path`` is text: bytes that are not UTF-8 decode to surrogates."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_lane(repo: Path, name: str, *, default_executor: str | None = None) -> LaneDef:
    """Load and validate the whole lane; raises LaneInvalid listing every problem."""
    return LaneLoader(repo, name, default_executor).load()
