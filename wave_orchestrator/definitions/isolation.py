"""``isolation``, ``base``, ``setup`` (lane or wave) and ``merge`` (lane): where agents work."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .model import IsolationSettings
from .repo_paths import normalise_repo_path
from .schema import Checker

ISOLATION_MODES = ("shared", "worktree")
MERGE_MODES = ("none", "ff")
SETUP_KEYS = ("command", "copy")
KEYS = ("isolation", "base", "setup")


def check_isolation(
    ck: Checker, raw: Mapping[str, Any], inherited: IsolationSettings
) -> IsolationSettings:
    """The settings a lane or wave file gives, each key overriding ``inherited``."""
    out = inherited
    if "isolation" in raw:
        mode = ck.string(raw["isolation"], ("isolation",), choices=ISOLATION_MODES, noun="mode")
        out = replace(out, mode=mode or out.mode)
    if "base" in raw:
        base = ck.string(raw["base"], ("base",), what="a git ref (branch, tag or commit)")
        if base is not None and (not base.strip() or base.startswith("-")):
            ck.error(("base",), f"invalid ref {base!r}", "a branch, tag or commit")
            base = None
        out = replace(out, base=base or out.base)
    if "setup" in raw:
        setup = ck.mapping(raw["setup"], ("setup",), SETUP_KEYS) or {}
        copies = []
        for i, item in enumerate(ck.string_list(setup.get("copy"), ("setup", "copy")) or []):
            norm = normalise_repo_path(item)
            if norm is None:
                ck.error(("setup", "copy", i), f"invalid path {item!r}", "a path inside the repo")
            else:
                copies.append(norm)
        command: tuple[str, ...] | str | None = None
        value = setup.get("command")
        if isinstance(value, list):
            command = tuple(ck.string_list(value, ("setup", "command")) or ()) or None
        elif value is not None:
            command = ck.string(value, ("setup", "command"), what="a command string or list")
        out = replace(out, setup_copy=tuple(copies), setup_command=command)
    return out


def check_merge(ck: Checker, value: Any) -> str:
    if value is None:
        return "none"
    return ck.string(value, ("merge",), choices=MERGE_MODES, noun="merge mode") or "none"
