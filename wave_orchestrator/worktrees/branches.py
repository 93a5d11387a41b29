"""The wave branches between runs: a new run starts every agent from the current base, keeping
the previous run's branches under ``wave/<lane>/runs/<stamp>/``; ``wave worktrees prune
--branches`` deletes those already merged; ``wave diff`` shows one agent's work."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .git import GitError
from .integration import LEFT_IN_INTEGRATION, commit_leftover, move_aside, set_aside
from .isolation import INTEGRATION, Isolation


@dataclass(frozen=True)
class PrunedBranch:
    branch: str
    merged_into: str | None  # None: not merged (kept, or deleted with force)
    deleted: bool


def start_fresh(
    iso: Isolation,
    wave: int,
    agents: Sequence[str],
    stamp: str,
    made: str | None,
    base: str,
    keep: Collection[str] = (),
) -> list[str]:
    """Before a new run (not ``--resume``) of a wave: what an earlier run left uncommitted
    in its worktrees is committed on its branch, the worktrees are removed, and its agent
    and integration branches are moved to ``runs/<stamp>/``, so that every agent starts
    from the current base. The agents of ``keep`` (reused: their work stands) keep their
    branch and worktree. Returns what was done, one line each, for the person."""
    said = []
    for agent in [*(a for a in agents if a not in keep), INTEGRATION]:
        path = iso.path(wave, agent)
        branch = iso.integration_branch(wave) if agent == INTEGRATION else iso.branch(wave, agent)
        if iso._registered(path):
            message = f"wave: {agent}'s uncommitted work from an earlier run"
            if agent == INTEGRATION:
                message = LEFT_IN_INTEGRATION
            commit_leftover(iso, path, branch, message)
            iso.main().run("worktree", "remove", "--force", str(path))
        if not iso.exists(branch):
            continue
        if agent == INTEGRATION:
            said.append(set_aside(iso, branch, made, base, stamp))
        else:
            said.append(f"{branch} of the earlier run kept as {move_aside(iso, branch, stamp)}")
    return said


def wave_branches(iso: Isolation) -> list[str]:
    prefix = f"refs/heads/wave/{iso.lane}/"
    listed = iso.main().out("for-each-ref", "--format=%(refname)", prefix)
    return [line.removeprefix("refs/heads/") for line in listed.splitlines() if line]


def prune_branches(iso: Isolation, force: bool = False) -> list[PrunedBranch]:
    """Delete the lane's wave branches whose work is already in an integration branch or in
    the person's branch; an unmerged one only with ``force``. Checked-out ones stay."""
    branches = wave_branches(iso)
    checked_out = {b for _, b in iso._worktrees() if b}
    here = iso.main().run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    yours = [here.stdout.strip()] if here.returncode == 0 else []
    integration = [b for b in branches if b.rsplit("/", 1)[-1].startswith("wave-")]
    agents = [b for b in branches if b not in integration]
    # Agent branches first, while the integration branches they merged into still exist.
    done = [_prune(iso, b, [*yours, *integration], force) for b in agents if b not in checked_out]
    done += [_prune(iso, b, yours, force) for b in integration if b not in checked_out]
    return done


def _prune(iso: Isolation, branch: str, targets: Sequence[str], force: bool) -> PrunedBranch:
    tip = iso.sha(branch)
    into = next((t for t in targets if t != branch and tip and iso.contains(tip, t)), None)
    if into is None and not force:
        return PrunedBranch(branch, None, False)
    iso.main().run("branch", "-D", branch)
    return PrunedBranch(branch, into, True)


def diff(iso: Isolation, branch: str, start: str, stat: bool = False) -> str:
    """The agent's work: its branch against the commit it started from."""
    if not iso.exists(branch):
        raise GitError(f"branch {branch} does not exist")
    args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
    return iso.main().run(*args, *(["--stat"] if stat else []), f"{start}...{branch}").stdout
