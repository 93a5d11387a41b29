"""``skills`` of lane.yaml (the folder of skill bundles and which of them each agent gets:
``base``, ``by_role``, ``by_executor``) and an agent's own ``skills: [id, ...]``.

The bundles are read only for a lane that uses skills: a repository may hold a ``skills``
folder of its own that has nothing to do with wave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import LaneProblem
from ..model import EXECUTOR_IDS, ROLES
from ..repository.paths import inside_repository, normalise_repo_path
from ..skill_model import SKILL_ID_RE, SkillBundle, SkillsSettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

SKILLS_KEYS = ("dir", "base", "by_role", "by_executor")
DEFAULT_DIR = "skills"


def read_catalog(
    repo: Path, folder: str, problems: list[LaneProblem], ck: Checker | None = None
) -> SkillsSettings:
    """The bundles of ``repo/folder`` (and those found broken); a folder that leads out of
    the repository, or is missing, is a problem (at ``skills.dir`` of lane.yaml when ``ck``
    is given)."""
    where: FieldPath = ("skills", "dir")
    root = inside_repository(repo, folder)
    if root is None or not root.is_dir():
        why = "leads out of the repository" if root is None else "is not a folder"
        message = f"the skills folder {folder!r} {why}"
        if ck is not None:
            ck.error(where, message, "a folder of skill bundles in the repository")
        else:
            problems.append(LaneProblem(folder, 1, 1, "", message))
        return SkillsSettings(dir=folder)
    from .skill_bundles import BundleReader  # a lane that uses skills only

    reader = BundleReader(root, folder.rstrip("/"), problems)
    return SkillsSettings(dir=folder, bundles=reader.read_all(), broken=tuple(reader.broken))


def check_lane_skills(ck: Checker, value: Any, repo: Path) -> SkillsSettings | None:
    """``skills`` of lane.yaml, its bundles read and every id it names checked against them;
    None when the lane has no ``skills`` key."""
    if value is None:
        return None
    raw = ck.mapping(value, ("skills",), SKILLS_KEYS)
    if raw is None:
        return None
    folder = DEFAULT_DIR
    if "dir" in raw:
        text = ck.string(raw["dir"], ("skills", "dir"), what="a folder in the repository")
        norm = normalise_repo_path(text) if text is not None else None
        if text is not None and norm is None:
            ck.error(("skills", "dir"), f"path {text!r} leaves the repository", "a folder in it")
        folder = (norm or DEFAULT_DIR).rstrip("/")
    found = read_catalog(repo, folder, ck.problems, ck)
    base = check_skill_ids(ck, raw.get("base"), ("skills", "base"), found)
    by_role = _keyed(ck, raw.get("by_role"), "by_role", ROLES, found)
    by_executor = _keyed(ck, raw.get("by_executor"), "by_executor", EXECUTOR_IDS, found)
    return found._replace(base=base, by_role=by_role, by_executor=by_executor)


def _keyed(
    ck: Checker, value: Any, key: str, names: tuple[str, ...], found: SkillsSettings
) -> dict[str, tuple[str, ...]]:
    raw = ck.mapping(value, ("skills", key), names) or {}
    return {
        name: check_skill_ids(ck, ids, ("skills", key, name), found)
        for name, ids in raw.items()
        if name in names
    }


def check_skill_ids(
    ck: Checker, value: Any, path: FieldPath, found: SkillsSettings
) -> tuple[str, ...]:
    """A list of skill ids: each well formed, named once, and a bundle of the skills folder
    (one found broken is not reported again)."""
    items = ck.string_list(value, path)
    if not items:
        return ()
    out: list[str] = []
    for i, item in enumerate(items):
        if not SKILL_ID_RE.fullmatch(item):
            ck.error((*path, i), f"invalid skill id {item!r}", f"to match {SKILL_ID_RE.pattern}")
        elif item in out:
            ck.error((*path, i), f"skill {item!r} is named twice", "each skill once")
        elif item not in found.bundles and item not in found.broken:
            known = ", ".join(sorted(found.bundles)) or "(the skills folder has none)"
            ck.error((*path, i), f"unknown skill {item!r}", "one of: " + known)
        else:
            out.append(item)
    return tuple(out)


def skill_digest(bundles: tuple[SkillBundle, ...]) -> str:
    """What an agent's skills add to its reuse fingerprint: their ids, order and contents."""
    if not bundles:
        return ""
    import hashlib

    text = "\n".join(f"{b.id} {b.digest}" for b in bundles)
    return hashlib.sha256(text.encode()).hexdigest()
