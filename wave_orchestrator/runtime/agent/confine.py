"""An agent's sandbox as its attempt is planned: whether it runs confined on this machine,
and the ``bwrap`` command that confines it.

The decision (``none``, ``bubblewrap``, or ``auto`` come to one of them here) is taken when
the attempt is planned; the command is built when its run.sh is written, because the paths
it binds (its worktree, its channel files) exist only then. Only the CLI runs inside: its
wrapper stays outside, so the agent's status and output are written by run.sh, never by it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ...definitions.model import AgentDef, SandboxSettings, WaveDef
from ...state.layout import StateLayout

if TYPE_CHECKING:  # the sandbox's modules load with the first sandboxed agent, not before
    from ...sandbox.bwrap import Bind, WorktreeGit


class Worktree(NamedTuple):
    """The agent's worktree as the launcher made it: where, in which repository, on which
    branch (never read back from the worktree, which the agent can rewrite)."""

    path: Path
    common_dir: Path
    branch: str


class Confinement(NamedTuple):
    """A confined attempt: its settings, where its things are, and the ``bwrap`` to run."""

    settings: SandboxSettings
    layout: StateLayout
    repo: Path
    wave: int
    agent_id: str
    bwrap: str
    worktree: Worktree | None = None
    desk: bool = False  # its wave shares files: `wave desk` writes the lane's desk
    refused: str = ""  # sandbox: bubblewrap where it cannot run: why, and the fix

    def binds(self, executor: str, argv0: str, env: Mapping[str, str], live: bool) -> list[Bind]:
        """Its options, each with its reason; ``live``: the files bound are made first (a
        dry run makes nothing and shows what would be bound). A refused sandbox raises
        ``SandboxUnavailable``: the agent fails with it, never runs unconfined."""
        from ...sandbox.bwrap import build_binds
        from ...sandbox.plan import plan_sandbox, prepare
        from ...sandbox.probe import SandboxUnavailable

        if self.refused:
            raise SandboxUnavailable(self.refused)
        tree = self._worktree(live)
        if live and tree is not None:
            from ...worktrees.git import detach_head

            detach_head(tree.path, tree.admin_dir)  # its branch file is not within its reach
        plan = plan_sandbox(
            self.settings,
            layout=self.layout,
            repo=self.repo,
            wave=self.wave,
            agent_id=self.agent_id,
            executor=executor,
            worktree=tree,
            git_dir=None if tree is not None else _shared_git_dir(self.repo),
            programs=[argv0],
            desk=self.desk,
            env=env,
        )
        if live:
            prepare(plan)
        return build_binds(plan)

    def command(self, binds: Sequence[Bind], argv: Sequence[str]) -> list[str]:
        from ...sandbox.bwrap import to_argv

        return to_argv(binds, argv, self.bwrap)

    def _worktree(self, live: bool) -> WorktreeGit | None:
        from ...sandbox.bwrap import WorktreeGit
        from ...worktrees.git import WorktreeTampered, trusted_worktree_dir

        tree = self.worktree
        if tree is None:
            return None
        admin = tree.common_dir / "worktrees" / tree.path.name  # what git names it
        if live or (tree.path / ".git").is_file():
            try:
                admin = trusted_worktree_dir(tree.common_dir, tree.path)
            except WorktreeTampered:
                if live:
                    raise
        return WorktreeGit(tree.path, admin, tree.common_dir, tree.branch)


@functools.lru_cache(maxsize=8)
def _shared_git_dir(repo: Path) -> Path | None:
    """The git directory of a checkout whose ``.git`` is a file (a linked worktree, a
    submodule), asked of git once: its hooks and config are what a sandbox must protect.
    None when ``.git`` is a folder (found by the plan itself) or git does not answer."""
    if not (repo / ".git").is_file():
        return None
    from ...errors import WaveError
    from ...worktrees.git import absolute_git_dir, common_git_dir

    try:
        return common_git_dir(absolute_git_dir(repo))
    except (WaveError, OSError):
        return None


def confinement(
    agent: AgentDef,
    wave: WaveDef,
    layout: StateLayout,
    repo: Path,
    worktree: Worktree | None,
    shared_files: bool,
) -> Confinement | None:
    """The agent's confinement here, None when it runs unsandboxed (``none``, or ``auto``
    where bubblewrap cannot run: said once per launch). ``bubblewrap`` where it cannot run
    gives a confinement that refuses to start: the agent fails with the fix."""
    settings = agent.sandbox_settings
    if not settings.enabled:
        return None
    from ...sandbox.probe import SandboxUnavailable, effective_mode, probe

    found = probe()
    try:
        mode, _ = effective_mode(settings.mode, found)  # auto's fallback: said by warnings()
    except SandboxUnavailable as exc:
        mode, refused = "bubblewrap", str(exc)
    else:
        refused = ""
    if mode == "none":
        return None
    desk = shared_files or bool(wave.shared)
    where = (layout, repo, wave.number, agent.id, found.bwrap or "bwrap", worktree, desk)
    return Confinement(settings, *where, refused=refused)


def warnings(waves: Sequence[WaveDef]) -> list[str]:
    """What a person is told once at launch when a sandbox asked for cannot run here: with
    ``auto`` its agents run unsandboxed, with ``bubblewrap`` they fail; each with the fix."""
    modes = {a.sandbox_settings.mode for w in waves for a in w.agents}
    if not modes & {"bubblewrap", "auto"}:
        return []
    from ...sandbox.probe import probe

    found = probe()
    if found.ok:
        return []
    said = []
    if "auto" in modes:
        said.append(f"sandbox: auto runs its agents unsandboxed here: {found.message}")
    if "bubblewrap" in modes:
        said.append(f"sandbox: bubblewrap agents will fail: {found.message}")
    return said


def agent_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment the agent starts with: the launcher's, then its own (what the sandbox
    finds its HOME, its CLI's folders and its programs by)."""
    return {**os.environ, **env}
