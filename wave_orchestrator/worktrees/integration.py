"""The integration branch ``wave/<lane>/wave-<n>``: the agent branches merged ``--no-ff`` onto
the wave's base in wave-file order (closure agents run in its worktree), then, when the wave
completes, the person's branch fast-forwarded to it or the one command to take it.

It is never reset over a commit wave did not make: wave resets it only when its tip is the
very commit wave last left it at; any other branch (a person's commit, an amend, a rebase, no
record of wave's tip, or checked out in a worktree of the person's) is first moved aside to
``wave/<lane>/runs/<stamp>/wave-<n>`` and the move is said.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .git import GitError
from .isolation import HUNK_LIMIT, INTEGRATION, AgentTree, Isolation

# Not titled `wave: ...`: with no record of wave's tip it still shows as not wave's own.
LEFT_IN_INTEGRATION = "work left uncommitted in the integration worktree (committed by wave)"
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Conflict:
    agent: str  # whose branch did not merge
    other: str | None  # the agent merged before it that changed the same files
    files: tuple[str, ...]
    hunks: str  # the conflicting hunks, with markers, for the retry prompt
    missing: bool = False  # its branch is gone (deleted), nothing to merge


@dataclass
class Integration:
    branch: str
    path: Path
    merged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    moved: str = ""  # what was moved aside first, said to the person
    tip: str = ""  # the branch's commit once built: a later run knows it as wave's own


def foreign_commits(iso: Isolation, branch: str, made: str | None, base: str) -> list[str]:
    """Commits on ``branch`` that wave did not make ("abc123def456 subject"): those past the
    base that ``made`` (the tip wave left it at) does not hold, so an amend or a rebase of
    wave's own commits counts too; with no record, those not titled ``wave: ...``."""
    tip = iso.sha(branch)
    if tip is None or tip == made:
        return []
    known = made is not None and _SHA.fullmatch(made) is not None and iso.sha(made) == made
    since = [f"^{made}"] if known else []
    listed = iso.main().out("log", "--format=%H%x00%s", f"{base}..{tip}", *since).splitlines()
    commits = [tuple(line.split("\0", 1)) for line in listed if "\0" in line]
    if not known:  # no record of wave's own tip: its commits are known by their title
        commits = [c for c in commits if not c[1].startswith("wave: ")]
    return [f"{sha[:12]} {subject}" for sha, subject in commits]


def set_aside(
    iso: Isolation, branch: str, made: str | None, base: str, stamp: str | None = None
) -> str:
    """Move ``branch`` to its dated name under ``runs/``; what to tell the person (words
    with "did not make" in them when it may hold more than wave's own work: a warning)."""
    extra = foreign_commits(iso, branch, made, base)
    tip = iso.sha(branch) or ""
    users = [str(p) for p, b in iso._worktrees() if b == branch]
    kept = move_aside(iso, branch, stamp)
    if extra:
        listed = "; ".join(extra[:3])
        return f"{branch} held {len(extra)} commit(s) wave did not make ({listed}): moved to {kept}"
    if users:  # git resets no branch checked out elsewhere; that worktree follows the rename
        return (
            f"{branch} is checked out at {users[0]}, where work wave did not make may land: "
            f"moved to {kept} (that worktree is on it now)"
        )
    if tip != made:
        return (
            f"{branch} is not at the commit wave left it at ({tip[:12]}), so it may hold work "
            f"wave did not make: moved to {kept}"
        )
    return f"{branch} of the earlier run kept as {kept}"


def _checked_out(iso: Isolation, branch: str) -> bool:
    return any(b == branch for _, b in iso._worktrees())


def commit_leftover(iso: Isolation, path: Path, branch: str, message: str) -> None:
    """Commit what was left uncommitted in ``path`` on ``branch`` before the worktree goes;
    when wave cannot, the worktree stays and the error says what to do."""
    try:
        iso.commit(path, message, branch=branch)
    except GitError as exc:
        raise GitError(
            f"{path} holds work that wave cannot commit ({exc}); save it, then "
            f"`wave worktrees prune --lane {iso.lane} --force`"
        ) from exc


def move_aside(iso: Isolation, branch: str, stamp: str | None = None) -> str:
    """Rename ``branch`` to its dated name under ``runs/``; returns the new name."""
    target = iso.run_branch(stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), branch)
    candidate, n = target, 1
    while iso.exists(candidate):
        n += 1
        candidate = f"{target}-{n}"
    iso.main().run("branch", "-m", branch, candidate)
    return candidate


def integrate(
    iso: Isolation, wave: int, base: str, trees: Sequence[AgentTree], made: str | None = None
) -> Integration:
    """Build the integration branch from ``base`` and merge each agent branch into it, in
    order; a branch that conflicts is left out (and named), the others are kept. ``made``:
    the tip wave last left the branch at: only a branch still there is reset; any other is
    moved aside first (never reset: it may hold a person's commits)."""
    result = Integration(iso.integration_branch(wave), iso.path(wave, INTEGRATION))
    if iso._registered(result.path):  # what is left uncommitted there is kept, then moved
        commit_leftover(iso, result.path, result.branch, LEFT_IN_INTEGRATION)
        iso.main().run("worktree", "remove", "--force", str(result.path))
    tip = iso.sha(result.branch)
    if tip is not None and (tip != made or _checked_out(iso, result.branch)):
        result.moved = set_aside(iso, result.branch, made, base)
    iso.root.mkdir(parents=True, exist_ok=True)
    iso.main().run("worktree", "add", "--quiet", "-B", result.branch, str(result.path), base)
    g = iso.tree(result.path)
    changed: dict[str, set[str]] = {}
    for tree in trees:
        if not iso.exists(tree.branch):
            result.conflicts.append(Conflict(tree.agent, None, (), "", missing=True))
            continue
        merged = g.run(
            "merge",
            "--no-ff",
            "--no-edit",
            "--no-stat",
            "-m",
            f"wave: merge {tree.agent} into wave {wave}",
            tree.branch,
            check=False,
            identity=True,
        )
        if merged.returncode == 0:
            result.merged.append(tree.agent)
            names = g.out("diff", "--name-only", "--no-renames", base, tree.branch)
            changed[tree.agent] = set(names.splitlines())
            continue
        files = tuple(g.out("diff", "--name-only", "--diff-filter=U").splitlines())
        hunks = g.out("diff", "--no-ext-diff", "--no-textconv")[:HUNK_LIMIT]
        g.run("merge", "--abort", check=False)
        other = next((a for a, paths in changed.items() if paths & set(files)), None)
        result.conflicts.append(Conflict(tree.agent, other, files, hunks))
    result.tip = g.out("rev-parse", "HEAD")
    return result


def finish(iso: Isolation, wave: int, base: str, fast_forward: bool) -> str:
    """After a completed wave: nothing to do when the person's branch already holds the
    wave's work; else fast-forward it (``merge: ff``) when it has not moved and has no
    uncommitted change, else say the one command to run."""
    branch = iso.integration_branch(wave)
    g = iso.main()
    done = g.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    here = done.stdout.strip() if done.returncode == 0 else None
    command = f"git merge {branch}"
    if iso.contains(branch, "HEAD"):  # merged already (a rerun after the person took it)
        return f"wave {wave}'s work is already in {here or 'HEAD'}: nothing to merge"
    if not fast_forward:
        return f"wave {wave}'s work is on branch {branch}; to take it: {command}"
    if here is None:
        return f"HEAD is detached, so nothing was merged; to take wave {wave}'s work: {command}"
    if g.out("rev-parse", "HEAD") != base:
        return f"{here} moved since wave {wave} started; to take its work: {command}"
    if g.out("status", "--porcelain", "--untracked-files=no"):
        return f"{here} has uncommitted changes, so nothing was merged; then: {command}"
    merged = g.run("merge", "--ff-only", "--quiet", "--no-stat", branch, check=False)
    if merged.returncode != 0:
        return f"could not fast-forward {here} ({merged.stderr.strip()}); run: {command}"
    return f"fast-forwarded {here} to {branch}"
