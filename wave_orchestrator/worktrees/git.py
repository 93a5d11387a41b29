"""The one place that runs git, and runs nothing of the agents' while doing it.

Agents can write into the repository's git dir (hooks, config) and into their worktree (a
``.git`` file of their own, ``.gitattributes`` naming a filter). wave's own git commands run
after an agent ended, outside its process group and outside any sandbox its CLI had, so each
one runs with hooks, fsmonitor, pagers, signing, auto-gc and every filter, diff or merge
driver from configuration turned off, against a git dir wave checked, in a process group of
its own that is killed at the timeout. argv lists only, never a shell; no prompts.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import WaveError

GIT_TIMEOUT_SECONDS = 300
FALLBACK_IDENTITY = ("user.name=wave", "user.email=wave@localhost")
# Settings that would run a program, block, or write where wave did not ask.
SAFE_SETTINGS = (
    "core.hooksPath=/dev/null",  # no hook of the repository's runs (they are the agents' too)
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.bare=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "diff.external=",
    "advice.addIgnoredFile=false",
)
# What git runs for a file whose merge driver configuration defines: its built-in text merge
# (the paths are git's own temporary files, quoted by git).
BUILTIN_MERGE = "git merge-file -L ours -L base -L theirs --marker-size=%L %A %O %B"
# A driver named in configuration runs its command when .gitattributes (an agent's) names it.
_DRIVER = re.compile(r"^(filter|diff|merge)\.(.+)\.(clean|smudge|process|textconv|command|driver)$")
_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TRACE2": "0",  # trace2 targets from configuration could name a FIFO
    "GIT_TRACE2_EVENT": "0",
    "GIT_TRACE2_PERF": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_ATTR_NOSYSTEM": "1",
}
_DROPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "GIT_OBJECT_DIRECTORY",
)


class GitError(WaveError):
    """A git command failed; the message has the command and git's own words."""


class WorktreeTampered(GitError):
    """A worktree's ``.git`` no longer leads to the git dir wave made for it."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(_QUIET_ENV)
    return env


class Git:
    """git for one checkout: ``git_dir`` is the one wave trusts (None: git finds it from
    ``cwd``, only for a question asked before any agent ran, such as "is this a repository")."""

    def __init__(self, cwd: Path, git_dir: Path | None = None) -> None:
        self.cwd = cwd
        self.git_dir = git_dir
        self._settings: list[str] | None = None
        self._identity = False  # user.email is set: commits are the person's, not "wave"'s

    def _prefix(self) -> list[str]:
        argv = ["git", "--no-pager"]
        if self.git_dir is not None:
            argv += [f"--git-dir={self.git_dir}", f"--work-tree={self.cwd}"]
        else:
            argv += ["-C", str(self.cwd)]
        for setting in SAFE_SETTINGS:
            argv += ["-c", setting]
        return argv

    def settings(self) -> list[str]:
        """``-c`` overrides for every filter, diff and merge driver configuration defines,
        looked up once per ``Git`` (an operation of a few commands), with the identity."""
        if self._settings is None:
            listed = _run([*self._prefix(), "config", "--list", "-z"], self.cwd)
            entries = listed.stdout.split("\0") if listed.returncode == 0 else []
            found = dict(e.partition("\n")[::2] for e in entries if e)
            self._identity = bool(found.get("user.email", "").strip())
            self._settings = []
            for name in {n.strip() for n in found if _DRIVER.match(n.strip())}:
                # A blank merge driver is a command git cannot run (every merge of such a file
                # would fail); git's own three-way file merge takes its place instead.
                safe = BUILTIN_MERGE if name.endswith(".driver") else ""
                self._settings += ["-c", f"{name}={safe}"]
                if name.startswith("filter."):
                    self._settings += ["-c", name.rsplit(".", 1)[0] + ".required=false"]
        return self._settings

    def run(
        self,
        *args: str,
        check: bool = True,
        identity: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run one git command; with ``identity``, commit as ``wave`` when git has no user;
        ``env`` adds to its environment (how it reaches a host)."""
        argv = [*self._prefix(), *self.settings()]
        if identity and not self._identity:
            for setting in FALLBACK_IDENTITY:
                argv += ["-c", setting]
        done = _run([*argv, *args], self.cwd, env)
        if check and done.returncode != 0:
            raise self.failure(args, done)
        return done

    def failure(self, args: Sequence[str], done: subprocess.CompletedProcess[str]) -> GitError:
        """The error for a command that failed: the command and git's own words."""
        said = (done.stderr or done.stdout).strip().splitlines()
        said = [s for s in said if s.startswith(("fatal:", "error:"))][:3] or said[-3:]
        return GitError(f"git {' '.join(args[:3])} failed in {self.cwd}: {' '.join(said)}")

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()


def detach_head(path: Path, git_dir: Path) -> None:
    """Leave the worktree at ``path`` on its commit, off its branch: a sandboxed agent's
    commits then move only its own HEAD, and the launcher carries them onto its branch when
    it ends, so the folder of branch files stays out of every agent's reach."""
    Git(path, git_dir).run("checkout", "--quiet", "--detach")


def _run(
    argv: list[str], cwd: Path, extra: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One git process in a process group of its own: at the timeout the whole group is
    killed, so nothing git started can hold the launcher (or git's pipes) after it."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env={**_env(), **(extra or {})},
            process_group=0,  # wave's own session: processes.reap_adopted leaves it alone
        )
    except FileNotFoundError as exc:
        if not cwd.is_dir():
            raise GitError(f"{cwd} does not exist (git cannot run there)") from exc
        raise GitError("git is not installed (isolation: worktree needs it)") from exc
    try:
        stdout, stderr = proc.communicate(timeout=GIT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc)
        what = " ".join(a for a in argv if not a.startswith("-") and a not in ("git",))[:80]
        raise GitError(f"git {what} took over {GIT_TIMEOUT_SECONDS}s and was ended") from exc
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


# -- the functions the rest of wave uses ------------------------------------------------------
def git(
    cwd: Path, *args: str, check: bool = True, identity: bool = False, git_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """One git command in ``cwd`` (against ``git_dir`` when given)."""
    return Git(cwd, git_dir).run(*args, check=check, identity=identity)


def out(cwd: Path, *args: str, git_dir: Path | None = None) -> str:
    return git(cwd, *args, git_dir=git_dir).stdout.strip()


def is_repository(path: Path) -> bool:
    return git(path, "rev-parse", "--git-dir", check=False).returncode == 0


def absolute_git_dir(repo: Path) -> Path:
    """The main checkout's git dir, resolved once, before anything of an agent's runs."""
    return Path(out(repo, "rev-parse", "--absolute-git-dir"))


def common_git_dir(git_dir: Path) -> Path:
    """Where a git dir's shared parts are (itself, or the main one of a linked worktree)."""
    try:
        text = (git_dir / "commondir").read_text().strip()
    except OSError:
        return git_dir
    return (git_dir / text).resolve()


def resolve_commit(repo: Path, ref: str, git_dir: Path | None = None) -> str:
    done = git(
        repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False, git_dir=git_dir
    )
    if done.returncode != 0:
        raise GitError(f"base {ref!r} is not a commit in {repo}")
    return done.stdout.strip()


def branch_exists(repo: Path, branch: str, git_dir: Path | None = None) -> bool:
    found = git(
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        f"refs/heads/{branch}",
        check=False,
        git_dir=git_dir,
    )
    return found.returncode == 0


def dirty(path: Path, untracked: bool = True, git_dir: Path | None = None) -> list[str]:
    """Uncommitted changes in a checkout (with ``untracked``, new files too), one line each."""
    mode = "--untracked-files=all" if untracked else "--untracked-files=no"
    lines = out(path, "status", "--porcelain", "--no-renames", mode, git_dir=git_dir)
    return [line for line in lines.splitlines() if line]


def current_branch(repo: Path, git_dir: Path | None = None) -> str | None:
    done = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False, git_dir=git_dir)
    return done.stdout.strip() if done.returncode == 0 else None


def trusted_worktree_dir(common: Path, path: Path) -> Path:
    """The git dir of the linked worktree at ``path``, after checking that its ``.git`` is
    still the file ``git worktree add`` wrote: an agent that replaced it would otherwise
    have wave commit into a git dir of its own (and run that dir's config)."""
    dot_git = path / ".git"
    try:
        if not dot_git.is_file() or dot_git.is_symlink():
            raise WorktreeTampered(f"{dot_git} is no longer the file git made (replaced)")
        text = dot_git.read_text(errors="replace").strip()
    except OSError as exc:
        raise WorktreeTampered(f"{dot_git} cannot be read: {exc.strerror}") from exc
    admin = Path(text.removeprefix("gitdir:").strip())
    admin = admin if admin.is_absolute() else (path / admin)
    admin = Path(os.path.normpath(admin))
    home = common / "worktrees"
    if not text.startswith("gitdir:") or admin.parent != home or admin.is_symlink():
        raise WorktreeTampered(
            f"{dot_git} was replaced: it points to {admin}, not to a worktree of {common}"
        )
    try:
        back = Path((admin / "gitdir").read_text().strip())
        commondir = (admin / "commondir").read_text().strip()
    except OSError as exc:
        raise WorktreeTampered(f"{admin} is not a worktree git dir: {exc.strerror}") from exc
    if back != dot_git or Path(os.path.normpath(admin / commondir)) != common:
        raise WorktreeTampered(f"{admin} was replaced: it is not {path}'s git dir in {common}")
    return admin
