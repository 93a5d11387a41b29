"""The one place that runs git: nothing of the agents' runs, nothing holds it past its
timeout, and a worktree's ``.git`` is checked before wave trusts it. Against real git."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import alive, committed_repo, sh, wait_for

from wave_orchestrator.worktrees import git as git_module
from wave_orchestrator.worktrees.branches import diff
from wave_orchestrator.worktrees.git import Git, GitError, WorktreeTampered
from wave_orchestrator.worktrees.isolation import Isolation


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "one\n"})


def test_filters_and_drivers_from_configuration_never_run(repo: Path, tmp_path: Path) -> None:
    """An agent's .gitattributes names a filter, a textconv, an external diff and a merge
    driver that the repository's config (the agent's too) defines: wave's add, commit, merge
    and diff run none of them."""
    ran = tmp_path / "ran"
    for key, what in (
        ("filter.evil.clean", "clean"),
        ("filter.evil.smudge", "smudge"),
        ("diff.evil.textconv", "textconv"),
        ("diff.evil.command", "command"),
        ("merge.evil.driver", "driver"),
        ("diff.external", "external"),
    ):
        sh(repo, "git", "config", key, f"sh -c 'echo {what} >> {ran}; cat \"$1\"' -")
    sh(repo, "git", "config", "filter.evil.required", "true")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil merge=evil\n")
    g = Git(repo, git_module.absolute_git_dir(repo))
    g.run("add", "--all", "--", ".")
    g.run("commit", "--quiet", "-m", "wave: attributes", identity=True)
    base = g.out("rev-parse", "HEAD")
    for branch, text in (("left", "one\nleft\n"), ("right", "one\nright\n")):
        g.run("checkout", "--quiet", "-b", branch, base)
        (repo / "a.txt").write_text(text)
        g.run("commit", "--quiet", "-am", f"wave: {branch}", identity=True)
    merged = g.run("merge", "--no-edit", "left", check=False, identity=True)
    assert "CONFLICT (content): Merge conflict in a.txt" in merged.stdout  # git's own merge
    assert "<<<<<<< ours" in (repo / "a.txt").read_text()
    g.run("merge", "--abort")
    g.run("checkout", "--quiet", "-b", "other", base)
    (repo / "a.txt").write_text("zero\none\n")  # other lines: merged as git would
    g.run("commit", "--quiet", "-am", "wave: other", identity=True)
    g.run("merge", "--no-edit", "--quiet", "left", identity=True)
    assert (repo / "a.txt").read_text() == "zero\none\nleft\n"
    shown = diff(Isolation(repo, tmp_path / "w", "main"), "right", base)
    assert "+right" in shown
    assert not ran.exists(), ran.read_text()
    assert sh(repo, "git", "show", "left:a.txt") == "one\nleft"


def test_git_dir_and_work_tree_from_the_environment_are_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    sh(other, "git", "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    assert Git(repo).out("log", "-1", "--format=%s") == "base"


def test_a_command_that_overruns_is_ended_with_everything_it_started(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child left holding git's stdout (a hook's, a filter's) would block the reader for
    ever: at the timeout the whole process group goes, the child included."""
    monkeypatch.setattr(git_module, "GIT_TIMEOUT_SECONDS", 1)
    pid_file = tmp_path / "child.pid"
    argv = ["sh", "-c", f"sleep 60 & echo $! > {pid_file}; echo started; exit 0"]
    began = time.monotonic()
    with pytest.raises(GitError, match="took over 1s and was ended"):
        git_module._run(argv, repo)
    assert time.monotonic() - began < 30
    child = int(pid_file.read_text())
    assert wait_for(lambda: not alive(child), 10, what="the child to end")


def test_a_missing_folder_and_a_failing_command_say_so(repo: Path) -> None:
    with pytest.raises(GitError, match="does not exist"):
        Git(repo / "gone").run("status")
    with pytest.raises(GitError, match=r"git rev-parse --verify nope failed in .*: fatal"):
        Git(repo).run("rev-parse", "--verify", "nope")


def test_a_worktree_whose_git_file_was_replaced_is_not_trusted(repo: Path, tmp_path: Path) -> None:
    w = Isolation(repo, repo / ".wave" / "main" / "worktrees", "main")
    tree = w.prepare(1, "A", w.base(None))
    dot_git = tree.path / ".git"
    assert w.tree(tree.path).git_dir == w.common / "worktrees" / "w1-A"
    original = dot_git.read_text()
    fake = tmp_path / "fake"
    sh(tmp_path, "git", "init", "-q", str(fake))
    for planted in (f"gitdir: {fake / '.git'}\n", "gitdir: ../../../../.git\n"):
        dot_git.write_text(planted)
        with pytest.raises(WorktreeTampered, match="replaced"):
            w.tree(tree.path)
    dot_git.unlink()
    os.symlink(original.removeprefix("gitdir:").strip(), dot_git)
    with pytest.raises(WorktreeTampered, match="replaced"):
        w.tree(tree.path)
    # Pointing at another worktree's git dir of the same repository is refused too.
    other = w.prepare(1, "B", w.base(None))
    dot_git.unlink()
    dot_git.write_text((other.path / ".git").read_text())
    with pytest.raises(WorktreeTampered, match=r"not .*w1-A's git dir"):
        w.tree(tree.path)
    with pytest.raises(GitError):  # and nothing is committed through it
        w.commit(tree.path, "wave: A attempt 1")
