"""`wave rerun` says what it reruns and what it reuses, and why, before it spends: after the
person merged the wave's own branch (as wave tells them to), the other agents' work is not
stale and is reused; a base moved by any other change makes the work stale (wave cannot tell
what an agent read), and the command says so first (and asks, on a terminal). Real git, real
tmux; each agent appends its id to `runs`, so what ran is counted, not guessed."""

from __future__ import annotations

import re
import shlex

import libtmux
import pytest
from helpers import Repo, sh, wait_for
from test_worktrees_e2e import agent, git_repo

pytestmark = pytest.mark.e2e

COUNT = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '
QA = (
    COUNT + "echo 'Verdict: PASS' > qa.md; echo '[wave-gate] architecture=pass integration=pass "
    "durability=pass live=pass docs=pass'; echo '[wave-verdict] pass'"
)

RANDOM_REPORT = "(echo 'Verdict: PASS'; date +%s%N) > qa.md"


def runs(repo: Repo) -> list[str]:
    path = repo.root / "runs"
    return sorted(path.read_text().split()) if path.exists() else []


def finished_and_merged(repo: Repo, *merge: str, qa: str = QA) -> None:
    """A two-agent worktree wave with a QA closure agent, launched, then merged into main by
    the person with the command wave printed."""
    git_repo(
        repo,
        "",
        [
            agent("A", COUNT + "echo a > A.txt"),
            agent("B", COUNT + "echo b > B.txt"),
            agent("QA", qa, role="cont-qa", owns=["qa.md"]),
        ],
    )
    first = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert first.returncode == 0, first.stderr
    assert "git merge wave/main/wave-1" in first.stderr
    assert runs(repo) == ["A", "B", "QA"]
    sh(repo.root, "git", "merge", "-q", *merge, "wave/main/wave-1")
    (repo.root / "runs").unlink()


@pytest.mark.parametrize("merge", [(), ("--no-ff", "-m", "merge wave 1")])
def test_a_rerun_after_merging_the_waves_branch_reuses_the_others_and_says_so(
    tmux_repo: Repo, merge: tuple[str, ...]
) -> None:
    finished_and_merged(tmux_repo, *merge)
    done = tmux_repo.wave("rerun", "QA", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert runs(tmux_repo) == ["QA"]  # A's and B's work stands: the base moved by their merge
    assert "wave rerun: reruns QA; reuses A, B" in done.stderr
    reused = [e["agent"] for e in tmux_repo.events("main") if e["event"] == "agent_reused"]
    assert sorted(reused) == ["A", "B"]
    # the wave's result still holds both agents' work
    files = sh(tmux_repo.root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt", "qa.md"} <= set(files)


def test_a_second_rerun_still_reuses_though_the_first_rerun_changed_the_report(
    tmux_repo: Repo,
) -> None:
    """QA's report differs each run: the base (the first run's result, merged) is still the
    wave's own work, compared with every run's result, not only the latest."""
    finished_and_merged(tmux_repo, qa=QA.replace("echo 'Verdict: PASS' > qa.md", RANDOM_REPORT))
    for _ in range(2):
        done = tmux_repo.wave("rerun", "QA", "--lane", "main", "--no-dashboard")
        assert done.returncode == 0, done.stderr
        assert "wave rerun: reruns QA; reuses A, B" in done.stderr
    assert runs(tmux_repo) == ["QA", "QA"]


def test_a_base_moved_by_another_change_reruns_everyone_and_says_why(
    tmux_repo: Repo,
) -> None:
    finished_and_merged(tmux_repo)
    root = tmux_repo.root
    (root / "A.txt").write_text("a, edited by a person\n")
    sh(root, "git", "commit", "-qam", "edit A.txt")
    plan = tmux_repo.wave("rerun", "QA", "--lane", "main", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.strip() == "reruns everything: the base moved since A ran (A.txt changed)"
    assert runs(tmux_repo) == []  # --dry-run runs nothing
    # no terminal: it goes on with the plan it printed
    done = tmux_repo.wave("rerun", "QA", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert "reruns everything: the base moved since A ran (A.txt changed)" in done.stderr
    assert "no terminal to ask on: it goes on with this plan" in done.stderr
    assert runs(tmux_repo) == ["A", "B", "QA"]


def test_on_a_terminal_a_rerun_of_more_than_asked_asks_first(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    """In a real tmux pane: `n` runs nothing; `--yes` runs the plan without asking."""
    finished_and_merged(tmux_repo)
    root = tmux_repo.root
    (root / "notes.md").write_text("a person's notes\n")
    sh(root, "git", "add", "notes.md")
    sh(root, "git", "commit", "-qm", "notes")
    asked = ask_in_a_pane(tmux_repo, server, "n")
    assert "reruns everything: the base moved since A ran (notes.md changed)" in asked
    assert "Go on? [y/N]" in asked and "EXIT=1" in asked
    assert runs(tmux_repo) == []  # `n`: nothing ran
    done = tmux_repo.wave("rerun", "QA", "--lane", "main", "--yes", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert runs(tmux_repo) == ["A", "B", "QA"]


def ask_in_a_pane(repo: Repo, server: libtmux.Server, answer: str) -> str:
    """Run `wave rerun QA` on a terminal (a pane of the test's own tmux server), answer its
    question, and return what the pane showed once the command ended."""
    argv = repo.command("rerun", "QA", "--lane", "main", "--no-dashboard")
    line = f"unset TMUX; cd {shlex.quote(str(repo.root))} && {shlex.join(argv)}; echo EXIT=$?"
    keep = ("PATH", "WAVE_TMUX_SOCKET", "HOME")
    session = server.new_session(
        "ask-rerun", x=200, y=50, environment={k: repo.env[k] for k in keep if k in repo.env}
    )
    pane = session.active_pane
    assert pane is not None

    def shown() -> str:
        return "\n".join(pane.capture_pane(start=-200))

    pane.send_keys(line, enter=True)
    wait_for(lambda: "[y/N]" in shown(), seconds=60, what="the question")
    pane.send_keys(answer, enter=True)
    # the typed line holds `EXIT=$?`: the end is a digit after it
    wait_for(lambda: re.search(r"EXIT=\d", shown()), seconds=60, what="the command's end")
    return shown()


@pytest.mark.parametrize("edit", [False, True])
def test_the_console_r_confirmation_names_the_same_plan(tmux_repo: Repo, edit: bool) -> None:
    """The console's `r`, driven by Textual's pilot against the real command: its question
    names what `wave rerun` would rerun and reuse; `y` runs that plan in the background."""
    import asyncio

    from wave_orchestrator.cli._common import state_layout
    from wave_orchestrator.cli.dashboard_fleet import CommandFleet
    from wave_orchestrator.dashboard.console_app import FleetConsole
    from wave_orchestrator.dashboard.screens import Confirm

    finished_and_merged(tmux_repo)
    root = tmux_repo.root
    if edit:
        (root / "notes.md").write_text("a person's notes\n")
        sh(root, "git", "add", "notes.md")
        sh(root, "git", "commit", "-qm", "notes")
    layout = state_layout(root, "main")
    app = FleetConsole(layout, 1, CommandFleet(root, "main", layout))
    asked: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.pause()
            for _ in range(20):  # the table has a handful of rows
                if app.selected() == "QA":
                    break
                await pilot.press("j")
            assert app.selected() == "QA"
            await pilot.press("r")
            deadline = asyncio.get_running_loop().time() + 30
            while not isinstance(app.screen, Confirm):  # the plan has been asked for
                assert asyncio.get_running_loop().time() < deadline, "no confirmation"
                await pilot.pause(0.1)
            asked.append(app.screen.question)
            await pilot.press("y")
            deadline = asyncio.get_running_loop().time() + 60
            while tmux_repo.wave_state("main", 1) != "completed" or not runs(tmux_repo):
                assert asyncio.get_running_loop().time() < deadline, "the rerun did not end"
                await pilot.pause(0.2)

    asyncio.run(run())
    if edit:
        assert asked == [
            "Rerun QA of wave 1? reruns everything: the base moved since A ran (notes.md changed)"
        ]
        wait_for(lambda: runs(tmux_repo) == ["A", "B", "QA"], seconds=60, what="everyone ran")
    else:
        assert asked == ["Rerun QA of wave 1? reruns QA; reuses A, B"]
        wait_for(lambda: runs(tmux_repo) == ["QA"], seconds=60, what="QA ran")
    from wave_orchestrator.state.lock import live_lock

    wait_for(lambda: live_lock(layout.lock) is None, seconds=60, what="the launcher's end")
    assert runs(tmux_repo) == (["A", "B", "QA"] if edit else ["QA"])
