"""Agent worktrees (``isolation: worktree``): one per implementation agent, on its own branch.

base commit ──┬── wave/<lane>/w<n>-<agent>   its branch: from the base, or, with depends_on,
              │                              from its dependencies' branches merged onto it
              └── wave/<lane>/wave-<n>       the integration branch (``integration``)
Nothing is lost: an agent's uncommitted work is committed on its own branch when it ends, or
the agent fails saying why; a worktree with uncommitted work is never removed without
``force``. Every git command goes through ``git.Git`` (no hook, filter or driver runs).
"""

from __future__ import annotations

import shlex
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from ..errors import WaveError
from ..names import INTEGRATION_WORKTREE
from .copying import copy_setup_files
from .git import Git, GitError, absolute_git_dir, common_git_dir, trusted_worktree_dir

HUNK_LIMIT = 4000
INTEGRATION = INTEGRATION_WORKTREE
# What an agent can leave half done in its worktree; committing over it would lose it.
_UNFINISHED = {
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or `git am`",
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
}


class Setup(NamedTuple):
    """What runs in each new worktree before its agent: copies from the main checkout, then
    a command (a string for ``bash -c``, or an argv list)."""

    copy: tuple[str, ...] = ()
    command: tuple[str, ...] | str | None = None


class AgentTree(NamedTuple):
    agent: str
    path: Path
    branch: str
    base: str
    start: str = ""  # the commit it started from: the base, or its dependencies merged onto it


class Leftover(NamedTuple):
    path: Path
    branch: str | None
    changes: int  # uncommitted changes in it


class DependencyConflict(GitError):
    """The branches an agent depends on do not merge: it cannot start from their work."""

    def __init__(self, agent: str, pair: tuple[str, str | None], files: Sequence[str]) -> None:
        self.agent, self.pair, self.files = agent, pair, tuple(files)
        who = f"{pair[0]} and {pair[1]}" if pair[1] else pair[0]
        where = ", ".join(files) or "(files unknown)"
        super().__init__(
            f"merge-conflict: {who} changed the same lines of {where}, so {agent}, which "
            "depends on them, cannot start from their work"
        )


class Isolation:
    """Worktrees of one lane, under ``root`` (``.wave/<lane>/worktrees``)."""

    def __init__(self, repo: Path, root: Path, lane: str) -> None:
        self.repo = repo.resolve()
        self.root = root.resolve()  # git reports worktrees by their real paths
        self.lane = lane
        # Worktrees are added one at a time (the pool's git workers share this lock); commits
        # in different worktrees go side by side (each has its own index; refs lock singly),
        # and setup commands, which may take minutes, run outside any lock.
        self.lock = threading.RLock()
        self._tree_locks: dict[Path, threading.Lock] = {}
        self._local = threading.local()

    @cached_property
    def git_dir(self) -> Path:
        """The main checkout's git dir, found once: every later command names it."""
        return absolute_git_dir(self.repo)

    @cached_property
    def common(self) -> Path:
        return common_git_dir(self.git_dir)

    def main(self) -> Git:
        """git in the person's checkout, against its git dir (within ``_operation``, one
        ``Git`` for all its commands: the configuration is looked up once)."""
        shared = getattr(self._local, "main", None)
        return shared if shared is not None else Git(self.repo, self.git_dir)

    @contextmanager
    def _operation(self) -> Iterator[None]:
        """The commands of one short operation (making a worktree) on this thread share
        one look-up of the configuration's drivers, not one each."""
        if getattr(self._local, "main", None) is not None:
            yield
            return
        self._local.main = Git(self.repo, self.git_dir)
        try:
            yield
        finally:
            self._local.main = None

    def tree(self, path: Path) -> Git:
        """git in an agent worktree, once its ``.git`` is checked (``WorktreeTampered``)."""
        return Git(path, trusted_worktree_dir(self.common, path))

    # -- names ------------------------------------------------------------------------
    def branch(self, wave: int, agent: str) -> str:
        return f"wave/{self.lane}/w{wave}-{agent}"

    def integration_branch(self, wave: int) -> str:
        return f"wave/{self.lane}/wave-{wave}"

    def run_branch(self, stamp: str, branch: str) -> str:
        """Where a branch of an earlier run is kept: ``wave/<lane>/runs/<stamp>/<name>``."""
        return f"wave/{self.lane}/runs/{stamp}/{branch.rsplit('/', 1)[-1]}"

    def path(self, wave: int, agent: str) -> Path:
        return self.root / f"w{wave}-{agent}"

    def base(self, ref: str | None) -> str:
        done = self.main().run(
            "rev-parse", "--verify", "--quiet", f"{ref or 'HEAD'}^{{commit}}", check=False
        )
        if done.returncode != 0:
            raise GitError(f"base {ref or 'HEAD'!r} is not a commit in {self.repo}")
        return done.stdout.strip()

    def exists(self, branch: str) -> bool:
        return self.sha(branch) is not None

    def sha(self, ref: str) -> str | None:
        done = self.main().run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    def contains(self, ancestor: str, ref: str) -> bool:
        done = self.main().run("merge-base", "--is-ancestor", ancestor, ref, check=False)
        return done.returncode == 0

    # -- agent worktrees ------------------------------------------------------------------
    def prepare(
        self,
        wave: int,
        agent: str,
        base: str,
        setup: Setup | None = None,
        deps: Sequence[tuple[str, str]] = (),
    ) -> AgentTree:
        """The agent's worktree: reused when it exists (a retry, a resume), else made from its
        branch if that exists (nothing on it is lost), else a new branch at ``base``. ``deps``
        (agent, branch), in wave-file order: their work is merged in before the agent starts."""
        path, branch = self.path(wave, agent), self.branch(wave, agent)
        with self.lock, self._operation():
            if self._registered(path):
                self.tree(path)  # refuses a worktree whose .git was replaced
                return self._start_from(AgentTree(agent, path, branch, base), deps, made=False)
            if path.exists() or path.is_symlink():
                raise GitError(f"{path} exists but is not a worktree of {self.repo}: move it")
            self.root.mkdir(parents=True, exist_ok=True)
            made = not self.exists(branch)
            if made:
                self.main().run("worktree", "add", "--quiet", "-b", branch, str(path), base)
            else:
                self.main().run("worktree", "add", "--quiet", str(path), branch)
            tree = self._start_from(AgentTree(agent, path, branch, base), deps, made=made)
        if setup is not None:
            try:
                self._setup(path, setup)
            except (WaveError, OSError):  # a half set-up worktree is made anew next time
                self.main().run("worktree", "remove", "--force", str(path), check=False)
                raise
        return tree

    def _start_from(
        self, tree: AgentTree, deps: Sequence[tuple[str, str]], made: bool
    ) -> AgentTree:
        """Merge each dependency's branch not yet in the agent's (in order); a conflict
        aborts, and a branch made for this start is dropped so a retry starts clean."""
        if made and not deps:  # a new branch at the base: nothing to merge, nothing to ask
            return tree._replace(start=tree.base)
        g = self.tree(tree.path)
        changed: dict[str, set[str]] = {}
        for dep, dep_branch in deps:
            if not self.exists(dep_branch) or self.contains(dep_branch, tree.branch):
                continue
            merged = g.run(
                "merge",
                "--no-ff",
                "--no-edit",
                "--no-stat",
                "-m",
                f"wave: {tree.agent} starts from {dep}'s work",
                dep_branch,
                check=False,
                identity=True,
            )
            if merged.returncode != 0:
                files = g.out("diff", "--name-only", "--diff-filter=U").splitlines()
                g.run("merge", "--abort", check=False)
                other = next((a for a, p in changed.items() if p & set(files)), None)
                if made:
                    self.main().run("worktree", "remove", "--force", str(tree.path), check=False)
                    self.main().run("branch", "-D", tree.branch, check=False)
                raise DependencyConflict(tree.agent, (dep, other), files)
            names = g.out("diff", "--name-only", "--no-renames", tree.base, dep_branch)
            changed[dep] = set(names.splitlines())
        return AgentTree(tree.agent, tree.path, tree.branch, tree.base, g.out("rev-parse", "HEAD"))

    def _registered(self, path: Path) -> bool:
        return any(p == path for p, _ in self._worktrees())

    def _worktrees(self) -> list[tuple[Path, str | None]]:
        """Every worktree of the repository: (path, branch or None when detached)."""
        found: list[tuple[Path, str | None]] = []
        path: Path | None = None
        branch: str | None = None
        listed = self.main().out("worktree", "list", "--porcelain").splitlines()
        for line in [*listed, ""]:
            if line.startswith("worktree "):
                path, branch = Path(line[9:]), None
            elif line.startswith("branch "):
                branch = line[7:].removeprefix("refs/heads/")
            elif not line and path is not None:
                found.append((path, branch))
                path = None
        return found

    def _setup(self, path: Path, setup: Setup) -> None:
        copy_setup_files(self.repo, path, setup.copy)
        if not setup.command:
            return
        argv = ["bash", "-c", setup.command] if isinstance(setup.command, str) else [*setup.command]
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

    def commit(
        self, path: Path, message: str, keep_out: Sequence[str] = (), branch: str | None = None
    ) -> str | None:
        """Commit everything the agent left uncommitted (new files too) on ``branch`` (its
        own), except ``keep_out`` (what ``setup.copy`` put there: never committed); the new
        commit, or None when there was nothing to commit. Raises ``GitError`` saying why
        when it cannot, and never leaves work where only the reflog would find it."""
        with self.lock:
            own = self._tree_locks.setdefault(path, threading.Lock())
        with own:
            return self._commit(path, message, keep_out, branch)

    def _commit(
        self, path: Path, message: str, keep_out: Sequence[str], branch: str | None
    ) -> str | None:
        g = self.tree(path)
        admin = g.git_dir
        assert admin is not None
        for name, what in _UNFINISHED.items():
            if (admin / name).exists():
                raise GitError(
                    f"{what} is in progress in {path}: wave committed nothing and kept the "
                    "worktree; finish or abort it there (git status says how)"
                )
        # One status gives the branch, its commit and what is uncommitted (porcelain v2).
        listed = g.out("status", "--porcelain=v2", "--branch", "--untracked-files=all")
        headers = (ln[2:].partition(" ") for ln in listed.splitlines() if ln.startswith("# "))
        head = {k: v for k, _, v in headers}
        if branch is not None:
            self._onto_branch(g, path, branch, head.get("branch.head"), head.get("branch.oid"))
        if all(ln.startswith("# ") for ln in listed.splitlines()):
            return None
        g.run("add", "--all", "--", ".")
        if keep_out:  # unstaged again: an ignored one was never staged, a tracked one stays
            g.run("reset", "--quiet", "--", *keep_out, check=False)
            if g.run("diff", "--cached", "--quiet", check=False).returncode == 0:
                return None  # only what setup.copy put there had changed
        args = ("commit", "--quiet", "--no-verify", "-m", message)
        if (done := g.run(*args, check=False, identity=True)).returncode != 0:
            if g.run("diff", "--cached", "--quiet", check=False).returncode == 0:
                return None  # nothing staged after all (changes inside a submodule, say)
            raise g.failure(args, done)
        return g.out("rev-parse", "HEAD")

    def _onto_branch(
        self, g: Git, path: Path, branch: str, head: str | None, oid: str | None
    ) -> None:
        """Make sure HEAD is the agent's own branch before committing on it. ``head`` and
        ``oid``: what ``status --branch`` said (``(detached)``, ``(initial)`` for none)."""
        ref = f"refs/heads/{branch}"
        if head == branch and oid not in (None, "(initial)"):
            return
        if head not in (branch, "(detached)"):
            raise GitError(
                f"{path} is on {head}, not on its own branch "
                f"{branch}: wave committed nothing there and kept the worktree"
            )
        if head == branch:  # its branch was deleted: put it back where the worktree's HEAD was
            last = _last_head(g.git_dir)
            if last is None:
                raise GitError(f"the agent deleted its branch {branch} and wave cannot restore it")
            g.run("update-ref", ref, last)
            return
        # Detached: its commits (and what it left uncommitted) go onto its branch if they
        # carry it forward, else onto a branch of their own that the failure names.
        here = g.out("rev-parse", "HEAD")
        found = g.run("rev-parse", "--verify", "--quiet", ref, check=False)
        tip = found.stdout.strip() if found.returncode == 0 else None
        ahead = g.run("merge-base", "--is-ancestor", tip, here, check=False) if tip else None
        if ahead is not None and ahead.returncode != 0:
            rescue = f"{branch}-detached"
            g.run("branch", "--force", rescue, here)
            raise GitError(
                f"the agent left HEAD detached at {here[:12]}, off its branch {branch}: "
                f"its commits are kept on branch {rescue}, not merged"
            )
        g.run("update-ref", ref, here)
        g.run("symbolic-ref", "HEAD", ref)

    # -- clean-up -----------------------------------------------------------------------
    def remove(self, path: Path, force: bool = False) -> bool:
        """Remove one worktree (its branch stays); refused when it has uncommitted work, or
        (without ``force``) when its ``.git`` was replaced."""
        if not self._registered(path):
            return False
        if not force and (not path.exists() or self.tree(path).out("status", "--porcelain")):
            return False
        self.main().run("worktree", "remove", *(["--force"] if force else []), str(path))
        return True

    def changes(self, path: Path) -> int:
        """Uncommitted changes in a worktree (0 when it is gone or not to be trusted)."""
        try:
            status = self.tree(path).out("status", "--porcelain", "--untracked-files=all")
        except GitError:
            return 0
        return len(status.splitlines())

    def leftovers(self) -> list[Leftover]:
        """This lane's worktrees that still exist, with their uncommitted change counts."""
        self.main().run("worktree", "prune")  # forget folders someone deleted by hand
        return [
            Leftover(path, branch, self.changes(path) if path.exists() else 0)
            for path, branch in self._worktrees()
            if path.parent == self.root
        ]

    def prune(self, force: bool = False) -> tuple[list[Leftover], list[Leftover]]:
        """Remove leftovers: (removed, refused because they hold uncommitted work)."""
        removed, refused = [], []
        for left in self.leftovers():
            if left.changes and not force:
                refused.append(left)
            elif self.remove(left.path, force=force):
                removed.append(left)
        return removed, refused


def _last_head(git_dir: Path | None) -> str | None:
    """The commit a worktree's HEAD last pointed at, from its reflog."""
    try:
        lines = (Path(str(git_dir)) / "logs" / "HEAD").read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        parts = line.split(" ", 2)
        if len(parts) >= 2 and len(parts[1]) == 40 and parts[1].strip("0"):
            return parts[1]
    return None
