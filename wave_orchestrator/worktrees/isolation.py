"""Agent worktrees and the integration branch (``isolation: worktree``).

base commit ──┬── wave/<lane>/w<n>-<agent>   one worktree and branch per implementation agent
              └── wave/<lane>/wave-<n>       the integration branch: the agent branches merged
                                             --no-ff in wave-file order; closure agents run here
Nothing is lost: an agent's uncommitted work is committed on its branch when it ends, a branch
is never deleted, and a worktree with uncommitted work is never removed without ``force``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .git import GitError, branch_exists, current_branch, dirty, git, out, resolve_commit

HUNK_LIMIT = 4000
INTEGRATION = "integration"


@dataclass(frozen=True)
class Setup:
    """What runs in each new worktree before its agent: copies from the main checkout, then
    a command (a string for ``bash -c``, or an argv list)."""

    copy: tuple[str, ...] = ()
    command: tuple[str, ...] | str | None = None


@dataclass(frozen=True)
class AgentTree:
    agent: str
    path: Path
    branch: str
    base: str


@dataclass(frozen=True)
class Conflict:
    agent: str  # whose branch did not merge
    other: str | None  # the agent merged before it that changed the same files
    files: tuple[str, ...]
    hunks: str  # the conflicting hunks, with markers, for the retry prompt


@dataclass
class Integration:
    branch: str
    path: Path
    merged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


@dataclass(frozen=True)
class Leftover:
    path: Path
    branch: str | None
    changes: int  # uncommitted changes in it


class Isolation:
    """Worktrees of one lane, under ``root`` (``.wave/<lane>/worktrees``)."""

    def __init__(self, repo: Path, root: Path, lane: str) -> None:
        self.repo = repo.resolve()
        self.root = root.resolve()  # git reports worktrees by their real paths
        self.lane = lane

    # -- names ------------------------------------------------------------------------
    def branch(self, wave: int, agent: str) -> str:
        return f"wave/{self.lane}/w{wave}-{agent}"

    def integration_branch(self, wave: int) -> str:
        return f"wave/{self.lane}/wave-{wave}"

    def path(self, wave: int, agent: str) -> Path:
        return self.root / f"w{wave}-{agent}"

    def base(self, ref: str | None) -> str:
        return resolve_commit(self.repo, ref or "HEAD")

    # -- agent worktrees ------------------------------------------------------------------
    def prepare(self, wave: int, agent: str, base: str, setup: Setup | None = None) -> AgentTree:
        """The agent's worktree: reused when it exists (a retry, a resume), else made from its
        branch if that exists (nothing on it is lost), else a new branch at ``base``."""
        tree = AgentTree(agent, self.path(wave, agent), self.branch(wave, agent), base)
        if self._registered(tree.path):
            return tree
        if tree.path.exists():
            raise GitError(
                f"{tree.path} exists but is not a worktree of {self.repo}: move it away first"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        if branch_exists(self.repo, tree.branch):
            git(self.repo, "worktree", "add", str(tree.path), tree.branch)
        else:
            git(self.repo, "worktree", "add", "-b", tree.branch, str(tree.path), base)
        if setup is not None:
            try:
                self._setup(tree.path, setup)
            except (GitError, OSError):  # a half set-up worktree is made anew next time
                git(self.repo, "worktree", "remove", "--force", str(tree.path), check=False)
                raise
        return tree

    def _registered(self, path: Path) -> bool:
        return any(p == path for p, _ in self._worktrees())

    def _worktrees(self) -> list[tuple[Path, str | None]]:
        """Every worktree of the repository: (path, branch or None when detached)."""
        found: list[tuple[Path, str | None]] = []
        path: Path | None = None
        branch: str | None = None
        for line in [*out(self.repo, "worktree", "list", "--porcelain").splitlines(), ""]:
            if line.startswith("worktree "):
                path, branch = Path(line[9:]), None
            elif line.startswith("branch "):
                branch = line[7:].removeprefix("refs/heads/")
            elif not line and path is not None:
                found.append((path, branch))
                path = None
        return found

    def _setup(self, path: Path, setup: Setup) -> None:
        for rel in setup.copy:
            source = self.repo / rel
            target = path / rel
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
            elif source.exists() or source.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
        if setup.command:
            argv = (
                ["bash", "-c", setup.command]
                if isinstance(setup.command, str)
                else list(setup.command)
            )
            done = subprocess.run(
                argv,
                cwd=path,
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                said = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise GitError(
                    f"setup.command {shlex.join(argv)} exited {done.returncode} in {path}: "
                    + " ".join(said)
                )

    def commit(self, path: Path, message: str, keep_out: Sequence[str] = ()) -> str | None:
        """Commit everything the agent left uncommitted (new files too), except ``keep_out``
        (what ``setup.copy`` put there, such as ``.env``: never committed); the new commit, or
        None when there was nothing to commit."""
        if not dirty(path):
            return None
        git(path, "add", "--all", "--", ".", *(f":(exclude){p}" for p in keep_out))
        if git(path, "diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        git(path, "commit", "--quiet", "--no-verify", "-m", message, identity=True)
        return out(path, "rev-parse", "HEAD")

    # -- integration ------------------------------------------------------------------------
    def integrate(self, wave: int, base: str, trees: Sequence[AgentTree]) -> Integration:
        """Build ``wave/<lane>/wave-<n>`` from ``base`` and merge each agent branch into it,
        in order; a branch that conflicts is left out (and named), the others are kept."""
        result = Integration(self.integration_branch(wave), self.path(wave, INTEGRATION))
        if self._registered(result.path):
            git(self.repo, "worktree", "remove", "--force", str(result.path))
        self.root.mkdir(parents=True, exist_ok=True)
        git(self.repo, "worktree", "add", "--force", "-B", result.branch, str(result.path), base)
        changed: dict[str, set[str]] = {}
        for tree in trees:
            merged = git(
                result.path, "merge", "--no-ff", "--no-edit", "-m",
                f"wave: merge {tree.agent} into wave {wave}", tree.branch,
                check=False, identity=True,
            )  # fmt: skip
            if merged.returncode == 0:
                result.merged.append(tree.agent)
                changed[tree.agent] = set(
                    out(self.repo, "diff", "--name-only", base, tree.branch).splitlines()
                )
                continue
            files = tuple(out(result.path, "diff", "--name-only", "--diff-filter=U").splitlines())
            hunks = out(result.path, "diff")[:HUNK_LIMIT]
            git(result.path, "merge", "--abort", check=False)
            other = next((a for a, paths in changed.items() if paths & set(files)), None)
            result.conflicts.append(Conflict(tree.agent, other, files, hunks))
        return result

    def commit_integration(self, integration: Integration, message: str) -> str | None:
        return self.commit(integration.path, message)

    def finish(self, wave: int, base: str, fast_forward: bool) -> str:
        """After a completed wave: fast-forward the user's branch (``merge: ff``) when it has
        not moved and has no uncommitted change, else say the one command to run."""
        branch = self.integration_branch(wave)
        here = current_branch(self.repo)
        command = f"git merge {branch}"
        if not fast_forward:
            return f"wave {wave}'s work is on branch {branch}; to take it: {command}"
        if here is None:
            return f"HEAD is detached, so nothing was merged; to take wave {wave}'s work: {command}"
        if out(self.repo, "rev-parse", "HEAD") != base:
            return f"{here} moved since wave {wave} started; to take its work: {command}"
        if dirty(self.repo, untracked=False):
            return f"{here} has uncommitted changes, so nothing was merged; then: {command}"
        done = git(self.repo, "merge", "--ff-only", "--quiet", branch, check=False)
        if done.returncode != 0:
            return f"could not fast-forward {here} ({done.stderr.strip()}); run: {command}"
        return f"fast-forwarded {here} to {branch}"

    # -- clean-up -----------------------------------------------------------------------
    def remove(self, path: Path, force: bool = False) -> bool:
        """Remove one worktree (its branch stays); refused when it has uncommitted work."""
        if not self._registered(path):
            return False
        if not force and dirty(path):
            return False
        git(self.repo, "worktree", "remove", *(["--force"] if force else []), str(path))
        return True

    def leftovers(self) -> list[Leftover]:
        """This lane's worktrees that still exist, with their uncommitted change counts."""
        git(self.repo, "worktree", "prune")  # forget folders someone deleted by hand
        found = []
        for path, branch in self._worktrees():
            if path.parent == self.root:
                changes = len(dirty(path)) if path.exists() else 0
                found.append(Leftover(path, branch, changes))
        return found

    def prune(self, force: bool = False) -> tuple[list[Leftover], list[Leftover]]:
        """Remove leftovers: (removed, refused because they hold uncommitted work)."""
        removed, refused = [], []
        for left in self.leftovers():
            if left.changes and not force:
                refused.append(left)
            elif self.remove(left.path, force=force):
                removed.append(left)
        return removed, refused
