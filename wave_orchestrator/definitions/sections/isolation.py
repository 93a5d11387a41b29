"""``isolation``, ``base``, ``setup`` (lane or wave) and ``merge`` (lane): where agents work;
and what worktree isolation rules out: an agent id that is its integration worktree's name, a
``base`` that names no commit."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...names import INTEGRATION_WORKTREE
from ..model import IsolationSettings, is_closure_role
from ..repository.paths import normalise_repo_path
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

ISOLATION_MODES = ("shared", "worktree")
MERGE_MODES = ("none", "ff")
SETUP_KEYS = ("command", "copy")
KEYS = ("isolation", "base", "setup")
GIT_SECONDS = 30
# What would point git at another repository than the lane's (set by a hook or an agent).
GIT_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
)


def check_isolation(
    ck: Checker, raw: Mapping[str, Any], inherited: IsolationSettings
) -> IsolationSettings:
    """The settings a lane or wave file gives, each key overriding ``inherited``."""
    out = inherited
    if "isolation" in raw:
        mode = ck.string(raw["isolation"], ("isolation",), choices=ISOLATION_MODES, noun="mode")
        out = out._replace(mode=mode or out.mode)
    if "base" in raw:
        base = ck.string(raw["base"], ("base",), what="a git ref (branch, tag or commit)")
        if base is not None and (not base.strip() or base.startswith("-")):
            ck.error(("base",), f"invalid ref {base!r}", "a branch, tag or commit")
            base = None
        out = out._replace(base=base or out.base)
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
        out = out._replace(setup_copy=tuple(copies), setup_command=command)
    return out


def check_agent_id(
    ck: Checker, path: FieldPath, agent_id: str, role: str, wave: int, iso: IsolationSettings
) -> None:
    """An implementation agent's worktree is ``w<n>-<id>``, next to wave's own integration
    worktree ``w<n>-integration``: that id would share it (and have its work wiped). Compared
    case-insensitively, as a case-insensitive file system compares folder names."""
    if (
        iso.worktree
        and not is_closure_role(role)
        and agent_id.casefold() == INTEGRATION_WORKTREE.casefold()
    ):
        ck.error(
            path,
            f"agent id {agent_id!r} is reserved in isolation: worktree (wave's integration "
            f"worktree w{wave}-{INTEGRATION_WORKTREE}); rename the agent",
        )


def check_merge(ck: Checker, value: Any) -> str:
    if value is None:
        return "none"
    return ck.string(value, ("merge",), choices=MERGE_MODES, noun="merge mode") or "none"


def names_no_commit(repo: Path, ref: str) -> bool:
    """Whether ``ref`` names no commit of the git repository ``repo``. False when ``repo`` is
    not a git repository or git cannot run: the launch says so then, as it always has.

    git runs here, below ``worktrees`` (whose runner this layer may not import), because the
    ``base`` field's file:line:col is known only while its file is validated. Read-only
    ``rev-parse`` runs no hook, filter or pager; those are turned off all the same."""
    import subprocess  # only for a worktree wave that names its base, like schema's grep

    env = {k: v for k, v in os.environ.items() if k not in GIT_REDIRECTS}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    prefix = [
        "git",
        "--no-pager",
        "-C",
        str(repo),
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
    ]

    def status(*args: str) -> int:
        return subprocess.run(
            [*prefix, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=GIT_SECONDS,
            check=False,
        ).returncode

    try:
        if status("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") == 0:
            return False
        return status("rev-parse", "--git-dir") == 0  # a ref of a repository, or no repository
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass
class BaseRefs:
    """The ``base:`` of the lane's worktree waves, each ref asked of git once, and each one that
    names no commit reported once where it is written (a lane.yaml ``base`` for all waves)."""

    unresolved: dict[str, bool] = field(default_factory=dict)
    reported: set[tuple[str, str]] = field(default_factory=set)

    def check(self, ck: Checker, repo: Path, ref: str) -> None:
        if (ck.file, ref) in self.reported:
            return
        self.reported.add((ck.file, ref))
        if ref not in self.unresolved:
            self.unresolved[ref] = names_no_commit(repo, ref)
        if self.unresolved[ref]:
            ck.error(("base",), f"{ref!r} is not a branch, tag or commit in {repo}")
