"""Skill bundles as the lane's definition holds them: a bundle of the skills folder, and
lane.yaml's ``skills`` with the rule that picks an agent's bundles (``resolve``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

EMPTY: Mapping[Any, Any] = MappingProxyType({})
SKILL_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")  # a bundle's folder name


class SkillBundle(NamedTuple):
    """One folder of the lane's skills folder, its manifest checked: who it is for
    (``roles``, ``executors``: empty matches any) and the files an agent is given of it,
    relative to ``folder`` (the manifest, SKILL.md, adapters, references)."""

    id: str
    title: str
    description: str
    folder: Path
    manifest: str  # skill.yaml or skill.json
    files: tuple[str, ...] = ()
    adapters: tuple[str, ...] = ()  # executors with an adapters/<executor>.md
    version: str = ""
    tags: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    executors: tuple[str, ...] = ()
    digest: str = ""  # of every file's bytes: a changed skill changes the fingerprint

    def active_for(self, role: str, executor: str) -> bool:
        return (not self.roles or role in self.roles) and (
            not self.executors or executor in self.executors
        )


class SkillsSettings(NamedTuple):
    """``skills`` of lane.yaml: the folder of skill bundles (repository-relative) and which
    of them every agent gets (``base``), an agent of a role gets, an executor gets."""

    dir: str = "skills"
    base: tuple[str, ...] = ()
    by_role: Mapping[str, tuple[str, ...]] = EMPTY
    by_executor: Mapping[str, tuple[str, ...]] = EMPTY
    bundles: Mapping[str, SkillBundle] = EMPTY
    broken: tuple[str, ...] = ()  # bundles whose check failed: named, they add no problem

    def resolve(
        self, role: str, executor: str, explicit: tuple[str, ...] = ()
    ) -> tuple[SkillBundle, ...]:
        """An agent's bundles: the lane's for every agent, its role and its executor, each
        kept when its activation matches; then the ones it names itself, whatever theirs."""
        named = (*self.base, *self.by_role.get(role, ()), *self.by_executor.get(executor, ()))
        ids = [
            i
            for i in dict.fromkeys(named)
            if i in self.bundles and self.bundles[i].active_for(role, executor)
        ]
        ids += [i for i in explicit if i not in ids]
        return tuple(self.bundles[i] for i in ids if i in self.bundles)
