"""Agent worktrees and the integration branch, against real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import committed_repo, sh

from wave_orchestrator.worktrees.git import GitError, dirty
from wave_orchestrator.worktrees.integration import finish, integrate
from wave_orchestrator.worktrees.isolation import Isolation, Setup


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(
        tmp_path / "repo", {"a.txt": "one\ntwo\nthree\n", ".gitignore": ".wave/\n"}
    )
    (root / ".env").write_text("TOKEN=x\n")  # untracked, for setup.copy
    return root


def iso(repo: Path) -> Isolation:
    return Isolation(repo, repo / ".wave" / "main" / "worktrees", "main")


def test_agents_get_their_own_worktree_and_branch_from_the_base(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    tree = w.prepare(1, "A", base, Setup(copy=(".env",), command="echo ready > setup.txt"))
    assert tree.branch == "wave/main/w1-A" and tree.path == w.path(1, "A")
    assert sh(tree.path, "git", "rev-parse", "HEAD") == base
    assert (tree.path / ".env").read_text() == "TOKEN=x\n"  # copied, untracked
    assert (tree.path / "setup.txt").read_text() == "ready\n"
    assert w.prepare(1, "A", base) == tree  # reused, not recreated
    assert w.commit(tree.path, "wave: A attempt 1", keep_out=(".env", "setup.txt")) is None
    (tree.path / "work.txt").write_text("w\n")
    w.commit(tree.path, "wave: A attempt 1", keep_out=(".env",))
    committed = sh(tree.path, "git", "show", "--name-only", "--format=", "HEAD").split()
    assert committed == ["setup.txt", "work.txt"]  # the copied .env is never committed


def test_uncommitted_work_is_committed_and_nothing_to_commit_is_no_commit(repo: Path) -> None:
    w = iso(repo)
    tree = w.prepare(1, "A", w.base(None))
    (tree.path / "new.txt").write_text("new\n")
    sha = w.commit(tree.path, "wave: A attempt 1")
    assert sha and sh(tree.path, "git", "log", "-1", "--format=%s") == "wave: A attempt 1"
    assert sh(tree.path, "git", "show", "--name-only", "--format=", "HEAD") == "new.txt"
    assert w.commit(tree.path, "again") is None
    assert not dirty(tree.path)


def test_a_commit_without_a_git_identity_is_made_as_wave(repo: Path, monkeypatch) -> None:
    sh(repo, "git", "config", "--unset", "user.email")
    sh(repo, "git", "config", "--unset", "user.name")
    monkeypatch.setenv("HOME", str(repo.parent))  # no global identity either
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    w = iso(repo)
    tree = w.prepare(1, "A", w.base(None))
    (tree.path / "n.txt").write_text("n\n")
    w.commit(tree.path, "wave: A attempt 1")
    assert sh(tree.path, "git", "log", "-1", "--format=%an <%ae>") == "wave <wave@localhost>"


def test_integration_merges_in_order_and_names_a_conflict(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    a, b, c = (w.prepare(1, x, base) for x in ("A", "B", "C"))
    (a.path / "a.txt").write_text("one\nTWO by A\nthree\n")
    (b.path / "b.txt").write_text("b\n")
    (c.path / "a.txt").write_text("one\nTWO by C\nthree\n")
    for t in (a, b, c):
        w.commit(t.path, f"wave: {t.agent} attempt 1")
    result = integrate(w, 1, base, [a, b, c])
    assert result.merged == ["A", "B"]
    (conflict,) = result.conflicts
    assert (conflict.agent, conflict.other, conflict.files) == ("C", "A", ("a.txt",))
    assert "<<<<<<<" in conflict.hunks and "TWO by C" in conflict.hunks
    log = sh(result.path, "git", "log", "--format=%s", f"{base}..HEAD")
    assert "wave: merge A into wave 1" in log and "wave: merge B into wave 1" in log
    assert (result.path / "a.txt").read_text() == "one\nTWO by A\nthree\n"
    assert (result.path / "b.txt").exists()
    assert not dirty(result.path)  # the failed merge was aborted
    assert sh(repo, "git", "rev-parse", "HEAD") == base  # the user's branch is untouched


def test_finish_fast_forwards_only_an_unmoved_clean_branch(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    a = w.prepare(1, "A", base)
    (a.path / "x.txt").write_text("x\n")
    w.commit(a.path, "wave: A attempt 1")
    integrate(w, 1, base, [a])
    assert "git merge wave/main/wave-1" in finish(w, 1, base, fast_forward=False)
    (repo / "a.txt").write_text("dirty\n")
    assert "uncommitted changes" in finish(w, 1, base, fast_forward=True)
    assert sh(repo, "git", "rev-parse", "HEAD") == base
    sh(repo, "git", "checkout", "-q", "a.txt")
    assert finish(w, 1, base, fast_forward=True) == "fast-forwarded main to wave/main/wave-1"
    assert (repo / "x.txt").exists()


def test_prune_refuses_dirty_worktrees_unless_forced(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    clean, busy = w.prepare(1, "A", base), w.prepare(1, "B", base)
    (busy.path / "wip.txt").write_text("not committed\n")
    removed, refused = w.prune()
    assert [r.path for r in removed] == [clean.path]
    assert [(r.path, r.changes) for r in refused] == [(busy.path, 1)]
    assert (busy.path / "wip.txt").exists()
    removed, _ = w.prune(force=True)
    assert [r.path for r in removed] == [busy.path] and not busy.path.exists()
    assert "wave/main/w1-B" in sh(repo, "git", "branch", "--list", "wave/*")  # branches kept


def test_a_branch_left_from_before_is_reused_with_its_commits(repo: Path) -> None:
    w = iso(repo)
    base = w.base(None)
    tree = w.prepare(1, "A", base)
    (tree.path / "kept.txt").write_text("k\n")
    w.commit(tree.path, "wave: A attempt 1")
    w.remove(tree.path)
    again = w.prepare(1, "A", base)
    assert (again.path / "kept.txt").exists()


def test_a_bad_base_and_a_failing_setup_are_clear_errors(repo: Path) -> None:
    w = iso(repo)
    with pytest.raises(GitError, match="base 'nope' is not a commit"):
        w.base("nope")
    with pytest.raises(GitError, match=r"setup\.command .* exited 3"):
        w.prepare(1, "A", w.base(None), Setup(command="exit 3"))
    assert not w.path(1, "A").exists()  # removed, so the next attempt runs the setup again
    w.prepare(1, "A", w.base(None), Setup(command="touch ok"))
    assert (w.path(1, "A") / "ok").exists()


def test_changes_git_cannot_stage_are_nothing_to_commit_not_a_failure(repo: Path) -> None:
    """An agent's nested repository: once recorded, edits inside it show in `git status`
    but `git add` stages none of them; wave's commit is then no commit, not an error."""
    w = iso(repo)
    tree = w.prepare(1, "A", w.base(None))
    nested = tree.path / "vendor"
    nested.mkdir()
    sh(nested, "git", "init", "-q")
    (nested / "x.txt").write_text("1\n")
    sh(nested, "git", "add", "x.txt")
    sh(nested, "git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
    assert w.commit(tree.path, "wave: A attempt 1", branch=tree.branch)  # the gitlink
    (nested / "x.txt").write_text("2\n")
    assert sh(tree.path, "git", "status", "--porcelain")  # git sees a change ...
    assert w.commit(tree.path, "wave: A attempt 2", branch=tree.branch) is None  # ... not staged
