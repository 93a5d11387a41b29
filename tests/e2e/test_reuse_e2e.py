"""A new run of a failed wave reuses what succeeded (issue 24 §1): real launches, real
sessions; each agent appends its id to `runs`, so what ran again is counted, not guessed."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane, sh
from test_worktrees_e2e import agent as tree_agent
from test_worktrees_e2e import git_repo

pytestmark = pytest.mark.e2e

COUNT = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '
# B fails until the file `fixed` exists; C depends on B; QA is a closure agent.
QA = (
    COUNT
    + "echo 'Verdict: PASS' > qa.md; echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass "
    "docs=pass'; echo '[wave-verdict] pass'"
)


def wave_file(a_prompt: str = "task of A") -> str:
    return (
        "title: reuse\nagents:\n"
        + local_agent("A", COUNT + "echo did A", prompt=a_prompt)
        + local_agent("B", COUNT + 'test -e "$WAVE_REPO/fixed"')
        + local_agent("C", COUNT + "echo did C", depends_on=["B"])
        + local_agent("D", COUNT + "echo did D")
        + local_agent("QA", QA, role="cont-qa", owns=["qa.md"])
    )


def runs(repo: Repo) -> list[str]:
    path = repo.root / "runs"
    return path.read_text().split() if path.exists() else []


def launch(repo: Repo, *flags: str) -> int:
    done = repo.wave("launch", "--lane", "main", "--no-dashboard", *flags)
    return done.returncode


def test_a_relaunch_reuses_what_succeeded_and_reruns_the_rest(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: wave_file()})
    assert launch(tmux_repo) != 0  # B failed: C never ran, nor the closure
    assert sorted(runs(tmux_repo)) == ["A", "B", "D"]
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "runs").unlink()

    assert launch(tmux_repo) == 0
    # A and D succeeded with the same definition: reused. B failed: rerun; C after it; QA
    # (the closure sweep) always runs again.
    assert sorted(runs(tmux_repo)) == ["B", "C", "QA"]
    reused = [e for e in tmux_repo.events("main") if e["event"] == "agent_reused"]
    assert sorted(e["agent"] for e in reused) == ["A", "D"]
    board = json.loads(
        (tmux_repo.state("main") / "waves" / "wave-1" / "dashboard.json").read_text()
    )
    states = {a["id"]: a["state"] for a in board["agents"]}
    assert states == {
        "A": "reused",
        "B": "completed",
        "C": "completed",
        "D": "reused",
        "QA": "completed",
    }
    shown = tmux_repo.wave("status", "--lane", "main").stdout
    assert any(line.split()[:2] == ["A", "reused"] for line in shown.splitlines()), shown
    assert "did A" in (tmux_repo.agent_dir("main", 1, "A") / "output.log").read_text()

    # A changed prompt reruns A (and only A, plus the closure sweep).
    (tmux_repo.root / "runs").unlink()
    (tmux_repo.root / "lanes" / "main" / "waves" / "wave-1.yaml").write_text(
        wave_file(a_prompt="task of A, done differently")
    )
    assert launch(tmux_repo) == 0
    assert sorted(runs(tmux_repo)) == ["A", "QA"]

    # --fresh reruns everyone.
    (tmux_repo.root / "runs").unlink()
    assert launch(tmux_repo, "--fresh") == 0
    assert sorted(runs(tmux_repo)) == ["A", "B", "C", "D", "QA"]


def test_an_agent_the_implementation_gate_rejected_runs_again(tmux_repo: Repo) -> None:
    """A exits 0 but leaves its deliverable unwritten: the gate names it, so a new run does
    not take its success for done work, while B's stands."""
    writes = COUNT + 'test -e "$WAVE_REPO/fixed" && echo x > A.txt; true'
    body = (
        "title: gate\nagents:\n"
        + local_agent("A", writes, deliverables=["A.txt"])
        + local_agent("B", COUNT + "echo did B")
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    assert launch(tmux_repo) != 0
    state = json.loads((tmux_repo.state("main") / "run-state.json").read_text())
    assert state["waves"]["1"]["rejected_agents"] == ["A"]
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "runs").unlink()
    assert launch(tmux_repo) == 0
    assert runs(tmux_repo) == ["A"]


def test_resume_and_fresh_together_are_refused(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: wave_file()})
    done = tmux_repo.wave("launch", "--lane", "main", "--resume", "--fresh")
    assert done.returncode == 2 and "--fresh and --resume" in done.stderr
    assert not runs(tmux_repo)


def test_in_worktrees_a_reused_agents_branch_stands_and_is_merged(tmux_repo: Repo) -> None:
    git_repo(
        tmux_repo,
        "",
        [
            tree_agent("A", COUNT + "echo a > A.txt"),
            tree_agent("B", COUNT + 'test -e "$WAVE_REPO/fixed" && echo b > B.txt'),
        ],
    )
    root = tmux_repo.root
    assert launch(tmux_repo) != 0
    record = tmux_repo.state("main") / "waves" / "wave-1" / "isolation.json"
    a_start = json.loads(record.read_text())["agents"]["A"]
    (root / "fixed").touch()
    (root / "runs").unlink()
    second = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert second.returncode == 0, second.stderr
    assert runs(tmux_repo) == ["B"]
    # the new run's record keeps where A's reused branch started in the run that made it
    assert json.loads(record.read_text())["agents"]["A"] == a_start
    files = sh(root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt"} <= set(files)  # A's work of the first run, merged
    assert sh(root, "git", "log", "--format=%s", "-1", "wave/main/w1-A") == "wave: A attempt 1"
    moved = sh(root, "git", "branch", "--list", "wave/main/runs/*", "--format=%(refname:short)")
    assert "w1-A" not in moved and "w1-B" in moved  # B's failed run set aside, A's kept


def test_resume_mid_retry_runs_the_plans_targets_and_keeps_the_rest(tmux_repo: Repo) -> None:
    """A launcher died as attempt 2 (rerun the integration stage) began: --resume reruns the
    integration agent, whose attempt-1 exit 0 the gate had rejected, and keeps the
    implementation agents' attempt-1 work (the plan does not name them)."""
    integ = (
        COUNT + "echo ok > integ.md; "
        'if [ -e "$WAVE_REPO/integ-once" ]; then s=ready-for-doc-closure; '
        'else touch "$WAVE_REPO/integ-once"; s=needs-more-work; fi; '
        'echo "[wave-integration] state=$s claims=0 conflicts=0 blockers=0"'
    )
    body = (
        "agents:\n"
        + local_agent("A", COUNT + "echo did A")
        + local_agent("B", COUNT + "echo did B")
        + local_agent("I", integ, role="integration", owns=["integ.md"])
    )
    tmux_repo.lane("main", local_lane(retries=1), {1: body})
    first = tmux_repo.wave(
        "launch", "--lane", "main", "--no-dashboard", "--max-retries-per-wave", "0"
    )
    assert first.returncode == 1 and "integration-needs-more-work" in first.stderr
    # What a launcher killed right after planning attempt 2 leaves in run-state.json.
    path = tmux_repo.state("main") / "run-state.json"
    state = json.loads(path.read_text())
    state["waves"]["1"].update(
        state="running",
        attempts=2,
        plan={"agents": [], "first_stage": 0, "reason": "integration gate failed", "notes": {}},
    )
    path.write_text(json.dumps(state))
    (tmux_repo.root / "runs").unlink()
    resumed = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert runs(tmux_repo) == ["I"]  # A and B stand; I's rejected attempt 1 is not adopted
    done = tmux_repo.run_state("main")["waves"]["1"]
    assert (done["state"], done["attempts"]) == ("completed", 2)


def test_launch_json_lists_the_reused_runs_beside_those_that_ran(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: wave_file()})
    assert launch(tmux_repo) != 0
    (tmux_repo.root / "fixed").touch()
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["waves"][0]["runs"]
    assert sorted((r["agent"], r["reused"], r["outcome"]) for r in rows) == [
        ("A", True, "success"),
        ("B", False, "success"),
        ("C", False, "success"),
        ("D", True, "success"),
        ("QA", False, "success"),
    ]
