"""`wave summary` of a closure agent in a worktree wave: its report outlives the integration
worktree, removed when the wave ends, and the summary points where it was kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import Repo
from test_worktrees_e2e import agent, git_repo, worktrees

pytestmark = pytest.mark.e2e

QA = (
    "mkdir -p r && echo 'Verdict: PASS' > r/qa.md; echo '[wave-gate] architecture=pass "
    "integration=pass durability=pass live=pass docs=pass'; echo '[wave-verdict] pass'"
)


def test_a_completed_waves_qa_report_is_kept_where_its_summary_points(tmux_repo: Repo) -> None:
    git_repo(
        tmux_repo,
        "",
        [agent("A", "echo a > A.txt"), agent("QA", QA, role="cont-qa", owns=["r/qa.md"])],
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert worktrees(tmux_repo) == []  # the integration worktree is gone
    shown = tmux_repo.wave("summary", "--lane", "main", "QA")
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith("  report: "))
    path = Path(line.removeprefix("  report: ").rsplit(" (", 1)[0])
    assert path.read_text() == "Verdict: PASS\n", line
    assert path.is_relative_to(tmux_repo.state("main") / "waves" / "wave-1")
    raw = tmux_repo.wave("summary", "--lane", "main", "QA", "--json")
    assert json.loads(raw.stdout)["report"] == str(path)
