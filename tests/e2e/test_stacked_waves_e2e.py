"""End to end in worktrees: a later wave builds on the earlier waves' work even before the
person merged it (merge: none), and merging the last wave's branch takes every wave's work;
once the person merged an earlier wave, the next one starts from their branch."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import Repo, sh
from test_worktrees_e2e import agent, git_repo

pytestmark = pytest.mark.e2e

# Wave 2's agent copies wave 1's file: it fails if wave 1's work is not in its worktree.
WAVE_2 = [agent("B", "cp one.txt two.txt && echo ok")]


def two_waves(repo: Repo) -> str:
    base = git_repo(repo, "", [agent("A", "echo one > one.txt")])
    wave2 = "agents:\n" + "".join("  - " + json.dumps(a) + "\n" for a in WAVE_2)
    (repo.root / "lanes" / "main" / "waves" / "wave-2.yaml").write_text(wave2)
    sh(repo.root, "git", "add", "-A")
    sh(repo.root, "git", "commit", "-qm", "wave 2")
    return base


def isolation(repo: Repo, wave: int) -> dict[str, Any]:
    path = repo.state("main") / "waves" / f"wave-{wave}" / "isolation.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_wave_2_builds_on_wave_1_s_branch_before_it_is_merged(tmux_repo: Repo) -> None:
    two_waves(tmux_repo)
    head = sh(tmux_repo.root, "git", "rev-parse", "HEAD")
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    wave1 = sh(tmux_repo.root, "git", "rev-parse", "wave/main/wave-1")
    assert isolation(tmux_repo, 1)["base"] == head
    assert isolation(tmux_repo, 2)["base"] == wave1  # not HEAD: wave 1's work is in it
    assert sh(tmux_repo.root, "git", "rev-parse", "HEAD") == head  # your branch untouched
    log = (tmux_repo.state("main") / "launcher.log").read_text()
    assert "wave 2 starts from wave/main/wave-1: wave 1's work, not yet merged" in log
    sh(tmux_repo.root, "git", "merge", "-q", "--ff-only", "wave/main/wave-2")
    assert (tmux_repo.root / "one.txt").read_text() == (tmux_repo.root / "two.txt").read_text()


def test_once_wave_1_is_merged_wave_2_starts_from_your_branch(tmux_repo: Repo) -> None:
    two_waves(tmux_repo)
    first = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--end-wave", "1")
    assert first.returncode == 0, first.stderr
    sh(tmux_repo.root, "git", "merge", "-q", "--no-ff", "-m", "take wave 1", "wave/main/wave-1")
    merged = sh(tmux_repo.root, "git", "rev-parse", "HEAD")
    second = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--start-wave", "2")
    assert second.returncode == 0, second.stderr
    assert isolation(tmux_repo, 2)["base"] == merged
