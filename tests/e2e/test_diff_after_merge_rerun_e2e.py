"""After a person merges a worktree wave's branch and reruns its QA agent, the reused agents'
work is still diffed from where each branch started in the run that made it (not from the
merged HEAD the rerun started from), and wave does not tell them to merge a branch their own
branch already holds. Real git, real tmux; the console's `d` runs the same command."""

from __future__ import annotations

import pytest
from helpers import Repo, sh
from test_worktrees_e2e import agent, git_repo

pytestmark = pytest.mark.e2e

COUNT = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '
SEC = COUNT + "echo ok > sec.md; echo '[wave-security] state=clear findings=0 approvals=0'"
QA = (
    COUNT + "echo 'Verdict: PASS' > qa.md; echo '[wave-gate] architecture=pass integration=pass "
    "durability=pass live=pass docs=pass'; echo '[wave-verdict] pass'"
)
WORDS = "reruns qa (and the closure sweep: sec); reuses core, cli, util"


def merged_then_rerun(repo: Repo, *merge: str) -> tuple[str, str]:
    """core, cli (on core's work), util, a security and a QA closure agent: launched, merged
    by the person, then QA rerun. Returns (the first run's base, the rerun's stderr)."""
    base = git_repo(
        repo,
        "",
        [
            agent("core", COUNT + "echo core > core.txt"),
            agent("cli", COUNT + "echo cli > cli.txt", depends_on=["core"]),
            agent("util", COUNT + "echo util > util.txt"),
            agent("sec", SEC, role="security", owns=["sec.md"]),
            agent("qa", QA, role="cont-qa", owns=["qa.md"]),
        ],
    )
    first = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert first.returncode == 0, first.stderr
    sh(repo.root, "git", "merge", "-q", *merge, "wave/main/wave-1")
    (repo.root / "runs").unlink()
    plan = repo.wave("rerun", "qa", "--lane", "main", "--wave", "1", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.strip() == WORDS
    again = repo.wave("rerun", "qa", "--lane", "main", "--wave", "1", "--no-dashboard")
    assert again.returncode == 0, again.stderr
    ran = sorted((repo.root / "runs").read_text().split())
    assert ran == ["qa", "sec"]  # the others reused: the base moved by their own merge
    assert f"wave rerun: {WORDS}\n" in again.stderr  # every agent that runs is named
    return base, again.stderr


@pytest.mark.parametrize("merge", [(), ("--no-ff", "-m", "merge wave 1")])
def test_a_reused_agent_is_diffed_from_where_it_started_after_a_merge_and_a_rerun(
    tmux_repo: Repo, merge: tuple[str, ...]
) -> None:
    merged_then_rerun(tmux_repo, *merge)
    cli = tmux_repo.wave("diff", "cli", "--lane", "main", "--wave", "1")
    assert cli.returncode == 0, cli.stderr
    assert "+++ b/cli.txt" in cli.stdout, cli.stderr
    assert "core.txt" not in cli.stdout  # core's work is what cli was given, not its own
    core = tmux_repo.wave("diff", "core", "--lane", "main", "--stat")
    assert core.returncode == 0, core.stderr
    assert "core.txt | 1 +" in core.stdout and "cli.txt" not in core.stdout, core.stderr


def test_no_merge_is_advised_when_your_branch_already_holds_the_waves_work(
    tmux_repo: Repo,
) -> None:
    _, said = merged_then_rerun(tmux_repo)
    root = tmux_repo.root
    assert sh(root, "git", "rev-parse", "main") == sh(root, "git", "rev-parse", "wave/main/wave-1")
    # also after a second rerun: the earlier runs are searched, latest first
    again = tmux_repo.wave("rerun", "qa", "--lane", "main", "--no-dashboard")
    assert again.returncode == 0 and "already in main" in again.stderr, again.stderr
    cli = tmux_repo.wave("diff", "cli", "--lane", "main")
    assert "+++ b/cli.txt" in cli.stdout and "core.txt" not in cli.stdout, cli.stderr
    assert "to take it" not in said and "git merge wave/main/wave-1" not in said, said
    assert "wave 1's work is already in main" in said, said


def test_a_branch_with_new_work_still_says_how_to_take_it(tmux_repo: Repo) -> None:
    """The first run: main lacks the wave's work, so the one command is said."""
    git_repo(tmux_repo, "", [agent("core", "echo core > core.txt")])
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert "to take it: git merge wave/main/wave-1" in done.stderr
    assert "already in" not in done.stderr
