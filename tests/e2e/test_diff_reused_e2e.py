"""`wave diff` of an agent whose finished work a relaunch reused: its work is on its branch,
made by the earlier run, and the diff shows it (the command and the console's `d` key)."""

from __future__ import annotations

import pytest
from helpers import Repo, sh
from test_worktrees_e2e import agent, git_repo

pytestmark = pytest.mark.e2e

COUNT = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '


def launched_twice(repo: Repo, *agents: dict) -> None:
    """B fails in the first run and not in the second: A's work of the first run is reused."""
    git_repo(repo, "", list(agents))
    first = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert first.returncode != 0
    (repo.root / "fixed").touch()
    (repo.root / "runs").unlink()
    second = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert second.returncode == 0, second.stderr
    assert "A" not in (repo.root / "runs").read_text().split()  # A was reused, not rerun


def test_the_diff_of_a_reused_agent_shows_its_work(tmux_repo: Repo) -> None:
    launched_twice(
        tmux_repo,
        agent("A", COUNT + "echo a > A.txt"),
        agent("B", COUNT + 'test -e "$WAVE_REPO/fixed" && echo b > B.txt'),
    )
    shown = tmux_repo.wave("diff", "A", "--lane", "main")
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/A.txt" in shown.stdout and "B.txt" not in shown.stdout


def test_the_diff_of_an_agent_retried_in_its_worktree_shows_both_attempts(tmux_repo: Repo) -> None:
    """Attempt 1 leaves one.txt and fails; attempt 2 adds two.txt: both are its work."""
    both = 'if [ "$WAVE_ATTEMPT" = 1 ]; then echo 1 > one.txt; exit 1; fi; echo 2 > two.txt'
    git_repo(tmux_repo, "", [agent("A", both, owns=["one.txt", "two.txt"])], retries=1)
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    shown = tmux_repo.wave("diff", "A", "--lane", "main", "--stat")
    assert shown.returncode == 0, shown.stderr
    assert "one.txt | 1 +" in shown.stdout and "two.txt | 1 +" in shown.stdout


def test_the_console_d_key_shows_a_reused_agents_work(tmux_repo: Repo) -> None:
    """The console's `d` runs `wave diff` as a person would: the reused A's change shows."""
    import asyncio

    from textual.widgets import Log

    from wave_orchestrator.cli._common import state_layout
    from wave_orchestrator.cli.dashboard_fleet import CommandFleet
    from wave_orchestrator.dashboard.console_app import FleetConsole

    launched_twice(
        tmux_repo,
        agent("A", COUNT + "echo a > A.txt"),
        agent("B", COUNT + 'test -e "$WAVE_REPO/fixed" && echo b > B.txt'),
    )
    root = tmux_repo.root
    layout = state_layout(root, "main")
    app = FleetConsole(layout, 1, CommandFleet(root, "main", layout))
    shown: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("d")  # A, the first agent, is selected
            pane = app.query_one("#pane", Log)
            deadline = asyncio.get_running_loop().time() + 30
            while not any(line.strip() for line in pane.lines):  # the command has answered
                assert asyncio.get_running_loop().time() < deadline, pane.lines
                await pilot.pause(0.1)
            shown.extend(pane.lines)

    asyncio.run(run())
    assert any(line.startswith("+++ b/A.txt") for line in shown), shown
    assert sh(root, "git", "rev-parse", "--abbrev-ref", "HEAD") == "main"
