"""docs/worktrees.md shows what wave and git print (issue 23 §3): the page's calculator lane
is run through the page's story (a dry run, a launch, the branches it leaves, a commit by hand
and a new run, leftover worktrees, pruning branches after a failed wave 2, `wave diff`), and
every console block is compared line by line once hashes, run stamps and paths are set aside
(a block's `...` stands for lines the page leaves out)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import Repo
from test_docs_console import Shown, compare, console_commands, lane_files, write_files

pytestmark = pytest.mark.e2e

PAGE = "worktrees.md"
MORE = [
    (re.compile(r"\b[0-9a-f]{7,12}\b"), "HASH"),
    (re.compile(r"\b\d{8}T\d{6}Z\b"), "STAMP"),
]


def check(shown: Shown, printed: str) -> None:
    compare(shown, printed, extra=MORE)


def calculator(root: Path, env: dict[str, str]) -> None:
    """The page's repository: `base` (calc/__init__.py, .gitignore), then the lane."""
    files = lane_files(PAGE, "main")
    assert set(files) == {
        "lanes/main/lane.yaml",
        "lanes/main/waves/wave-1.yaml",
        "lanes/main/waves/wave-2.yaml",
    }
    git(root, "init", "-q", "-b", "main", env=env)
    git(root, "config", "user.email", "me@example.com", env=env)
    git(root, "config", "user.name", "Me", env=env)
    (root / "calc").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / ".gitignore").write_text(".wave/\n")
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "base", env=env)
    write_files(
        root, {n: files[n] for n in ("lanes/main/lane.yaml", "lanes/main/waves/wave-1.yaml")}
    )
    git(root, "add", "lanes", env=env)
    git(root, "commit", "-qm", "the calculator lane", env=env)
    (root / "wave-2.yaml").write_text(files["lanes/main/waves/wave-2.yaml"])  # added later


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env
    ).stdout


def test_the_pages_story_prints_what_the_page_shows(tmux_repo: Repo) -> None:
    root = tmux_repo.root
    # One time for every commit: the graph's order then rests on the history alone, never on
    # which commits happened to fall in the same second.
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        tmux_repo.env[name] = "2026-12-05T02:00:00Z"
    calculator(root, tmux_repo.env)
    shown = list(console_commands(PAGE))
    by = {s.command: s for s in shown}
    assert len(by) == len(shown) == 12, [s.command for s in shown]

    def wave(shown: Shown, code: int = 0) -> None:
        argv = shlex.split(shown.command)[1:]
        if argv[0] == "launch" and "--dry-run" not in argv:
            argv.append("--no-dashboard")  # the page's launches ran with no dashboard line
        done = tmux_repo.wave(*argv)
        assert done.returncode == code, done.stderr
        check(shown, done.stderr + done.stdout)

    wave(by["wave launch --lane main --dry-run"])
    wave(by["wave launch --lane main"])
    check(
        by["git show wave/main/w1-tests:tests/seen.txt"],
        git(root, "show", "wave/main/w1-tests:tests/seen.txt"),
    )
    check(
        by["git log --oneline --graph wave/main/wave-1"],
        git(root, "log", "--oneline", "--graph", "wave/main/wave-1"),
    )

    # a commit by hand on the integration branch, one on main; the next run keeps worktrees
    fix = root.parent / "fix"
    git(root, "worktree", "add", "-q", str(fix), "wave/main/wave-1", env=tmux_repo.env)
    with (fix / "calc" / "mul.py").open("a") as fh:
        fh.write("# checked\n")
    git(fix, "commit", "-qam", "fix by hand", env=tmux_repo.env)
    git(root, "worktree", "remove", str(fix), env=tmux_repo.env)
    (root / "README").write_text("a calculator\n")
    git(root, "add", "README", env=tmux_repo.env)
    git(root, "commit", "-qm", "a readme", env=tmux_repo.env)
    wave(by["wave launch --lane main --keep-worktrees"])
    wave(by["wave diff tests"])
    wave(by["wave diff mul --stat"])

    with (root / ".wave" / "main" / "worktrees" / "w1-mul" / "calc" / "mul.py").open("a") as fh:
        fh.write("# a note by hand\n")
    wave(by["wave worktrees list --lane main"])
    wave(by["wave worktrees prune --lane main"], code=1)
    wave(by["wave worktrees prune --lane main --force"])

    git(root, "merge", "-q", "wave/main/wave-1", "-m", "merge wave 1", env=tmux_repo.env)
    (root / "wave-2.yaml").rename(root / "lanes" / "main" / "waves" / "wave-2.yaml")
    failed = tmux_repo.wave("launch", "--lane", "main", "--start-wave", "2", "--no-dashboard")
    assert failed.returncode == 1, failed.stderr
    wave(by["wave worktrees prune --branches"], code=1)
    wave(by["wave worktrees prune --branches --force"])
    assert git(root, "branch", "--list", "wave/*") == ""
