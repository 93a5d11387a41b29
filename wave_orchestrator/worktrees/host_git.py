"""The git work on this machine for agents on SSH hosts: an agent's worktree here is where its
commit leaves from (``git push`` to the host's mirror) and where its work comes back to
(``git fetch``, then a fast-forward of its branch), through the one place that runs git."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .git import Git, absolute_git_dir, common_git_dir, trusted_worktree_dir


class HostGit:
    """For one repository: its agents' worktrees, checked before git runs in them."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo.resolve()
        self._common: Path | None = None

    def _tree(self, cwd: Path) -> Git:
        if self._common is None:
            self._common = common_git_dir(absolute_git_dir(self.repo))
        return Git(cwd, trusted_worktree_dir(self._common, cwd))

    def head(self, cwd: Path) -> tuple[str, str] | None:
        """(branch, commit) of an agent's worktree; None for the main checkout."""
        if cwd.resolve() == self.repo:
            return None
        tree = self._tree(cwd)
        return tree.out("symbolic-ref", "--short", "HEAD"), tree.out("rev-parse", "HEAD")

    def push(self, cwd: Path, url: str, refspec: str, env: Mapping[str, str]) -> None:
        self._tree(cwd).run("push", "--quiet", "--force", url, refspec, env=env)

    def take(self, cwd: Path, url: str, ref: str, env: Mapping[str, str]) -> None:
        """Its branch moved to what the host has (only forward: nothing here is lost)."""
        tree = self._tree(cwd)
        # A ref of its own, not FETCH_HEAD: the repository's worktrees share that one file,
        # and two agents' work comes back at once.
        kept = "refs/wave-hosts/" + ref.removeprefix("refs/heads/")
        tree.run("fetch", "--quiet", "--no-tags", url, f"+{ref}:{kept}", env=env)
        tree.run("merge", "--ff-only", "--quiet", kept)
