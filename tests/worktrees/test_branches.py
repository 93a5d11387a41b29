"""Wave branches between runs, against real git: a new run's fresh start, `prune --branches`
and the agent diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import committed_repo, sh

from wave_orchestrator.worktrees.branches import diff, prune_branches, start_fresh
from wave_orchestrator.worktrees.git import GitError
from wave_orchestrator.worktrees.integration import integrate
from wave_orchestrator.worktrees.isolation import Isolation


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "one\n", ".gitignore": ".wave/\n"})


def iso(repo: Path) -> Isolation:
    return Isolation(repo, repo / ".wave" / "main" / "worktrees", "main")


def branches(repo: Path) -> set[str]:
    listed = sh(repo, "git", "branch", "--list", "wave/*", "--format=%(refname:short)")
    return set(listed.splitlines())


def one_wave(w: Isolation, agents: dict[str, str]) -> str:
    """Agents each writing one file, committed and merged; returns the integration tip."""
    base = w.base(None)
    trees = []
    for agent, text in agents.items():
        tree = w.prepare(1, agent, base)
        (tree.path / f"{agent}.txt").write_text(text)
        w.commit(tree.path, f"wave: {agent} attempt 1", branch=tree.branch)
        trees.append(tree)
    result = integrate(w, 1, base, trees)
    assert not result.conflicts
    return result.tip


def test_start_fresh_commits_leftover_work_and_keeps_the_old_branches_under_runs(
    repo: Path,
) -> None:
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    (w.path(1, "A") / "late.txt").write_text("left uncommitted\n")
    said = start_fresh(w, 1, ["A"], "20260101T000000Z", tip, w.base(None))
    assert not w.path(1, "A").exists() and not w.path(1, "integration").exists()
    kept = "wave/main/runs/20260101T000000Z/w1-A"
    assert branches(repo) == {kept, "wave/main/runs/20260101T000000Z/wave-1"}
    assert sh(repo, "git", "show", f"{kept}:late.txt") == "left uncommitted"  # not lost
    assert said == [
        f"wave/main/w1-A of the earlier run kept as {kept}",
        "wave/main/wave-1 of the earlier run kept as wave/main/runs/20260101T000000Z/wave-1",
    ]


def test_start_fresh_names_a_persons_commit_on_the_integration_branch(repo: Path) -> None:
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    g = w.tree(w.path(1, "integration"))
    (w.path(1, "integration") / "fix.txt").write_text("mine\n")
    g.run("add", "fix.txt")
    g.run("commit", "-qm", "my fix", identity=True)
    said = start_fresh(w, 1, ["A"], "20260101T000000Z", tip, w.base(None))
    assert any("held 1 commit(s) wave did not make" in s and "my fix" in s for s in said)
    assert sh(repo, "git", "show", "wave/main/runs/20260101T000000Z/wave-1:fix.txt") == "mine"


def test_prune_deletes_only_merged_branches_unless_forced(repo: Path) -> None:
    w = iso(repo)
    one_wave(w, {"A": "a\n", "B": "b\n"})
    for name in ("A", "B", "integration"):
        w.remove(w.path(1, name))
    # An agent branch with work that reached no integration branch and not yours.
    sh(repo, "git", "branch", "wave/main/w2-C", "HEAD")
    sh(repo, "git", "worktree", "add", "-q", str(repo.parent / "c"), "wave/main/w2-C")
    (repo.parent / "c" / "c.txt").write_text("c\n")
    sh(repo.parent / "c", "git", "add", "c.txt")
    sh(repo.parent / "c", "git", "commit", "-qm", "c")
    sh(repo, "git", "worktree", "remove", str(repo.parent / "c"))
    done = {p.branch: (p.deleted, p.merged_into) for p in prune_branches(w)}
    assert done == {
        "wave/main/w1-A": (True, "wave/main/wave-1"),
        "wave/main/w1-B": (True, "wave/main/wave-1"),
        "wave/main/w2-C": (False, None),  # unmerged: kept
        "wave/main/wave-1": (False, None),  # not in your branch yet
    }
    assert branches(repo) == {"wave/main/w2-C", "wave/main/wave-1"}
    sh(repo, "git", "merge", "-q", "--ff-only", "wave/main/wave-1")
    done = {p.branch: p.deleted for p in prune_branches(w)}
    assert done == {"wave/main/w2-C": False, "wave/main/wave-1": True}
    forced = prune_branches(w, force=True)
    assert [(p.branch, p.deleted, p.merged_into) for p in forced] == [
        ("wave/main/w2-C", True, None)
    ]
    assert branches(repo) == set()


def test_prune_never_deletes_a_branch_checked_out_in_a_worktree(repo: Path) -> None:
    w = iso(repo)
    w.prepare(1, "A", w.base(None))  # no work yet: merged everywhere, but in use
    assert prune_branches(w, force=True) == []
    assert "wave/main/w1-A" in branches(repo)


def test_diff_shows_the_agents_own_change_and_its_stat(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    one_wave(w, {"A": "a\n"})
    (repo / "later.txt").write_text("yours\n")  # the person's branch moves on: not shown
    sh(repo, "git", "add", "later.txt")
    sh(repo, "git", "commit", "-qm", "later")
    text = diff(w, "wave/main/w1-A", base)
    assert "+++ b/A.txt" in text and "later.txt" not in text
    assert "A.txt | 1 +" in diff(w, "wave/main/w1-A", base, stat=True)
    with pytest.raises(GitError, match="branch wave/main/w1-Z does not exist"):
        diff(w, "wave/main/w1-Z", base)


def _amend_as_a_person(repo: Path, branch: str, name: str) -> str:
    """A person amends wave's last commit on ``branch`` (its title stays ``wave: ...``) in a
    worktree of their own, then removes that worktree; the amended commit."""
    mine = repo.parent / "mine"
    sh(repo, "git", "worktree", "add", "-q", str(mine), branch)
    (mine / name).write_text("by hand\n")
    sh(mine, "git", "add", name)
    sh(mine, "git", "commit", "-q", "--amend", "--no-edit")
    sh(repo, "git", "worktree", "remove", str(mine))
    return sh(repo, "git", "rev-parse", branch)


def _holding(repo: Path, commit: str) -> set[str]:
    listed = sh(repo, "git", "branch", "--contains", commit, "--format=%(refname:short)")
    return set(listed.splitlines())


def test_a_rebuild_moves_aside_an_amended_commit_that_keeps_waves_title(repo: Path) -> None:
    """The integration branch is rebuilt (a retry, a resume) over a tip that is not the one
    wave left: however its commits are titled, they are kept aside, not reset away."""
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    w.remove(w.path(1, "integration"))
    amended = _amend_as_a_person(repo, "wave/main/wave-1", "fix.txt")
    a = w.prepare(1, "A", w.base(None))
    result = integrate(w, 1, w.base(None), [a], tip)
    said = f"wave/main/wave-1 held 1 commit(s) wave did not make ({amended[:12]} wave: merge A"
    assert result.moved.startswith(said)
    (kept,) = _holding(repo, amended)
    assert kept.startswith("wave/main/runs/") and kept in result.moved
    assert sh(repo, "git", "show", f"{kept}:fix.txt") == "by hand"


def test_a_rebuild_with_no_record_of_waves_tip_keeps_the_old_branch(repo: Path) -> None:
    w = iso(repo)
    one_wave(w, {"A": "a\n"})
    w.remove(w.path(1, "integration"))
    amended = _amend_as_a_person(repo, "wave/main/wave-1", "fix.txt")
    a = w.prepare(1, "A", w.base(None))
    result = integrate(w, 1, w.base(None), [a], None)  # branches.json gone or unreadable
    assert result.moved and any(b.startswith("wave/main/runs/") for b in _holding(repo, amended))


def test_a_rebuild_over_waves_own_tip_moves_nothing(repo: Path) -> None:
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    a = w.prepare(1, "A", w.base(None))
    result = integrate(w, 1, w.base(None), [a], tip)
    assert result.moved == "" and branches(repo) == {"wave/main/w1-A", "wave/main/wave-1"}


def test_a_rebuild_commits_and_keeps_work_left_uncommitted_in_the_integration_worktree(
    repo: Path,
) -> None:
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    (w.path(1, "integration") / "wip.txt").write_text("not committed\n")
    a = w.prepare(1, "A", w.base(None))
    result = integrate(w, 1, w.base(None), [a], tip)
    kept = result.moved.rsplit("moved to ", 1)[-1]
    assert sh(repo, "git", "show", f"{kept}:wip.txt") == "not committed"
    assert not (result.path / "wip.txt").exists()  # the new branch is wave's own again


def test_a_rebuild_moves_aside_a_branch_a_person_has_checked_out(repo: Path) -> None:
    """git cannot reset a branch checked out in another worktree: the person's worktree
    follows it to its kept name, and the rebuild goes on."""
    w = iso(repo)
    tip = one_wave(w, {"A": "a\n"})
    w.remove(w.path(1, "integration"))
    mine = repo.parent / "mine"
    sh(repo, "git", "worktree", "add", "-q", str(mine), "wave/main/wave-1")
    a = w.prepare(1, "A", w.base(None))
    result = integrate(w, 1, w.base(None), [a], tip)
    assert "checked out" in result.moved
    assert sh(mine, "git", "branch", "--show-current").startswith("wave/main/runs/")
    assert result.merged == ["A"]
