"""End to end: dashboard.json (and the plain view drawn from it) shows the wave as it is now,
never what an earlier attempt left: a gate that failed and then passed on the retry, an
agent's last line from its attempt before, and the closure agents that have not started yet."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

INTEGRATION_FAILS = (
    "echo '[wave-integration] state=needs-more-work claims=1 conflicts=1 blockers=0 "
    "detail=A1 must change the key format'"
)
QA_PASS = (
    "echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass'; "
    "echo '[wave-verdict] pass'"
)
QA_REPORT = "mkdir -p r && printf 'Checked.\\nVerdict: PASS\\n' > r/qa.md; "
INTEGRATION_PASSES = (
    "echo '[wave-integration] state=ready-for-doc-closure claims=1 conflicts=0 blockers=0'"
)


def on_attempt(first: str, later: str) -> str:
    return f'if [ "$WAVE_ATTEMPT" = 1 ]; then {first}; else {later}; fi'


def snapshot(repo: Repo) -> dict[str, Any]:
    path = repo.state("main") / "waves" / "wave-1" / "dashboard.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data


def row(data: dict[str, Any], agent: str) -> dict[str, Any]:
    return next((a for a in data.get("agents", []) if a.get("id") == agent), {})


def test_a_gate_that_passed_on_the_retry_is_no_longer_shown_as_failed(tmux_repo: Repo) -> None:
    """The integration gate fails on attempt 1 and passes on attempt 2; while cont-qa runs
    after it, and once the wave completed, no view says a gate failed."""
    go = tmux_repo.root / "go"
    qa = f"while [ ! -e {go} ]; do sleep 0.05; done; " + QA_REPORT + QA_PASS
    wave = (
        "wave: 1\nagents:\n"
        + local_agent("A1", "echo done > A1.txt")
        + local_agent(
            "I", on_attempt(INTEGRATION_FAILS, INTEGRATION_PASSES), role="integration", owns=[]
        )
        + local_agent("QA", qa, role="cont-qa", owns=["r/qa.md"])
    )
    tmux_repo.lane("main", local_lane(retries=1), {1: wave})
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        wait_for(
            lambda: row(snapshot(tmux_repo), "QA").get("state") == "running",
            30,
            what="cont-qa running on attempt 2",
        )
        data = snapshot(tmux_repo)
        assert data["attempt"] == 2 and data.get("gate_failure") is None, data
        assert_no_gate_failure_shown(tmux_repo)
        go.write_text("")
        assert launcher.wait(60) == 0, launcher.stderr.read() if launcher.stderr else ""
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert [e["stage"] for e in tmux_repo.events("main") if e["event"] == "gate_failed"] == [
        "integration"
    ]
    data = snapshot(tmux_repo)
    assert data["status"] == "completed" and data.get("gate_failure") is None, data
    assert_no_gate_failure_shown(tmux_repo)


def assert_no_gate_failure_shown(repo: Repo) -> None:
    """The plain view and `wave status` (the console draws the same attention lines)."""
    frame = repo.wave("dashboard", "--lane", "main", "--once", "--width", "120")
    assert frame.returncode == 0, frame.stderr
    assert "gate failed:" not in frame.stdout, frame.stdout
    status = repo.wave("status", "--lane", "main")
    assert "gate failed:" not in status.stdout, status.stdout


def test_a_new_attempt_shows_its_own_last_line_not_the_one_before(tmux_repo: Repo) -> None:
    """Attempt 1 says its last words and fails; attempt 2 says nothing for a while, then its
    own words: until then its row has no last line, and the words of attempt 1 never
    come back, neither while it runs nor once it ended."""
    go = tmux_repo.root / "go"
    first = "echo 'words of attempt one'; exit 3"
    later = f"while [ ! -e {go} ]; do sleep 0.05; done; echo 'words of attempt two'"
    wave = "wave: 1\nagents:\n" + local_agent("A1", on_attempt(first, later))
    tmux_repo.lane("main", local_lane(retries=1), {1: wave})
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        running = wait_for(
            lambda: (
                (r := row(snapshot(tmux_repo), "A1")).get("attempt") == 2
                and r.get("state") == "running"
                and r
            ),
            30,
            what="attempt 2 running",
        )
        assert running.get("last_line") != "words of attempt one", running
        for _ in range(5):  # a few frames while it runs
            shown = row(snapshot(tmux_repo), "A1")
            assert shown.get("last_line") != "words of attempt one", shown
        go.write_text("")
        assert launcher.wait(60) == 0, launcher.stderr.read() if launcher.stderr else ""
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert row(snapshot(tmux_repo), "A1")["last_line"] == "words of attempt two"


def test_the_closure_agents_are_listed_from_the_wave_s_start(tmux_repo: Repo) -> None:
    go = tmux_repo.root / "go"
    wave = (
        "wave: 1\nagents:\n"
        + local_agent("A1", f"while [ ! -e {go} ]; do sleep 0.05; done; echo done > A1.txt")
        + local_agent("I", INTEGRATION_PASSES, role="integration", owns=[])
        + local_agent("QA", QA_REPORT + QA_PASS, role="cont-qa", owns=["r/qa.md"])
    )
    tmux_repo.lane("main", local_lane(), {1: wave})
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        data = wait_for(
            lambda: (d := snapshot(tmux_repo)) and row(d, "A1").get("state") == "running" and d,
            30,
            what="A1 running",
        )
        assert [a["id"] for a in data["agents"]] == ["A1", "I", "QA"]
        for agent, role in (("I", "integration"), ("QA", "cont-qa")):
            waiting = row(data, agent)
            assert waiting["state"] == "pending" and waiting["role"] == role, waiting
            assert waiting["executor"] == "local" and not waiting["last_line"], waiting
        frame = tmux_repo.wave("dashboard", "--lane", "main", "--once", "--width", "120")
        lines = [ln.split() for ln in frame.stdout.splitlines()]
        assert ["QA", "cont-qa", "local", "pending"] in [ln[:4] for ln in lines], frame.stdout
        go.write_text("")
        assert launcher.wait(60) == 0, launcher.stderr.read() if launcher.stderr else ""
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert [row(snapshot(tmux_repo), a)["state"] for a in ("A1", "I", "QA")] == ["completed"] * 3


def test_a_wave_whose_last_attempt_failed_without_a_gate_does_not_record_an_earlier_gate(
    tmux_repo: Repo,
) -> None:
    """Integration fails on attempt 1; on attempt 2 the agent it named crashes: the wave
    failed for the crash, and neither its record nor `wave status` names the gate."""
    wave = (
        "wave: 1\nagents:\n"
        + local_agent("A1", on_attempt("echo done > A1.txt", "exit 3"))
        + local_agent(
            "I", on_attempt(INTEGRATION_FAILS, INTEGRATION_PASSES), role="integration", owns=[]
        )
        + local_agent("QA", QA_REPORT + QA_PASS, role="cont-qa", owns=["r/qa.md"])
    )
    tmux_repo.lane("main", local_lane(retries=1), {1: wave})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1, done.stderr
    record = tmux_repo.run_state("main")["waves"]["1"]
    assert record["state"] == "failed" and record.get("gate_failure") is None, record
    status = tmux_repo.wave("status", "--lane", "main").stdout
    lines = [line.strip() for line in status.splitlines()]
    assert any(line.startswith("A1") and "failed" in line for line in lines), status
    assert not [line for line in lines if line.startswith("integration gate failed:")], status
    assert "must change the key format" not in status, status
