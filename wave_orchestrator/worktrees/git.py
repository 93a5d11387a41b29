"""The one place that runs git: argv lists (never a shell), no prompts, errors a user can read."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..errors import WaveError

GIT_TIMEOUT_SECONDS = 300
FALLBACK_IDENTITY = ("-c", "user.name=wave", "-c", "user.email=wave@localhost")


class GitError(WaveError):
    """A git command failed; the message has the command and git's own words."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_EDITOR": "true"})
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # from a hook or an agent
        env.pop(name, None)
    return env


def git(
    cwd: Path, *args: str, check: bool = True, identity: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``git -C cwd args``; with ``identity``, commit as ``wave`` when git has no user."""
    argv = ["git", "-C", str(cwd)]
    if identity and not has_identity(cwd):
        argv += FALLBACK_IDENTITY
    argv += args
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            env=_env(),
            stdin=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed (isolation: worktree needs it)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {' '.join(args[:2])} took over {GIT_TIMEOUT_SECONDS}s") from exc
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args[:3])} failed in {cwd}: {' '.join(said[-3:])}")
    return done


def out(cwd: Path, *args: str) -> str:
    return git(cwd, *args).stdout.strip()


def has_identity(cwd: Path) -> bool:
    got = subprocess.run(
        ["git", "-C", str(cwd), "config", "user.email"],
        capture_output=True,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return got.returncode == 0 and bool(got.stdout.strip())


def is_repository(path: Path) -> bool:
    return git(path, "rev-parse", "--git-dir", check=False).returncode == 0


def resolve_commit(repo: Path, ref: str) -> str:
    done = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if done.returncode != 0:
        raise GitError(f"base {ref!r} is not a commit in {repo}")
    return done.stdout.strip()


def branch_exists(repo: Path, branch: str) -> bool:
    found = git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return found.returncode == 0


def dirty(path: Path, untracked: bool = True) -> list[str]:
    """Uncommitted changes in a checkout (with ``untracked``, new files too), one line each."""
    mode = "--untracked-files=all" if untracked else "--untracked-files=no"
    return [line for line in out(path, "status", "--porcelain", mode).splitlines() if line]


def current_branch(repo: Path) -> str | None:
    done = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return done.stdout.strip() if done.returncode == 0 else None
