"""What every wave file of a lane is read against: the lane's settings, the list its problems
are collected in, and the repository its paths must stay inside."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LaneProblem
from ..model import IsolationSettings, PlacementSettings, SandboxSettings
from ..repository.paths import inside_repository, normalise_repo_path
from ..sections.closure import ClosureRules
from ..sections.context7 import LaneContext7
from ..sections.executor_settings import LaneSettings
from ..sections.isolation import BaseRefs
from ..sections.skills import DEFAULT_DIR, read_catalog
from ..skill_model import SkillsSettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath, Located, YamlSyntaxError, load_located, read_lane_file


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


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class LaneContext:
    """What every wave of a lane is checked against, and where its problems are collected."""

    repo: Path
    display: Callable[[Path], str]
    problems: list[LaneProblem]
    settings: LaneSettings
    closure: ClosureRules
    shared_files: bool
    isolation: IsolationSettings = field(default_factory=IsolationSettings)
    placement: PlacementSettings = field(default_factory=PlacementSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # the lane defaults'
    lane_checker: Checker | None = None  # lane.yaml's, for the base a wave inherits
    benchmarks: tuple[str, ...] = ()  # lane.yaml's catalog: what eval_targets may pin
    name: str = ""  # the lane's own name (a wave may not wait on its own lane)
    base_refs: BaseRefs = field(default_factory=BaseRefs)
    context7: LaneContext7 | None = None  # its bundle index and lane default: docs for agents
    skills: SkillsSettings | None = None  # lane.yaml's; None until an agent names a skill
    _folders: dict[str, Path | None] = field(default_factory=dict)

    def skill_settings(self) -> SkillsSettings:
        """The lane's skills; the default folder's bundles, read the first time an agent of a
        lane without a ``skills`` key names one."""
        if self.skills is None:
            self.skills = read_catalog(self.repo, DEFAULT_DIR, self.problems)
        return self.skills

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

    def owned(self, ck: Checker, raw: str, path: FieldPath) -> str | None:
        """A path a wave file names (owned, shared, a deliverable, a prompt file, a proof),
        normalised, or None with the problem reported at ``path``."""
        norm = normalise_repo_path(raw)
        if norm is None:
            ck.error(
                path,
                f"path {raw!r} is absolute, escapes the repository or has control characters",
                "a path relative to the repository",
            )
        elif self.confine(norm) is None:
            ck.error(
                path,
                f"path {raw!r} leads out of the repository through a symbolic link",
                "a path that stays inside the repository",
            )
            return None
        return norm
