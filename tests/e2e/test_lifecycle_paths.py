"""End to end: stalls, depends_on, usage limits, closure stage order, the demo lane, CLI views."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import Repo

pytestmark = pytest.mark.e2e

LANE = """
closure: {{required_roles: []}}
defaults:
  executor: local
  timeout_minutes: 1
  max_retries_per_wave: 0
  launch_stagger_ms: 0
  stall_minutes: {stall}
"""


def events(repo: Repo, name: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == name]


def test_silent_agent_is_stopped_as_stalled(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        LANE.format(stall=0.03),
        {
            1: """
        agents:
          - {id: A1, prompt: hang, executor: {local: {command: "echo started; sleep 60"}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    finished = events(tmux_repo, "agent_finished")[0]
    assert finished["status"] == "stalled" and "no output for" in finished["detail"]


def test_depends_on_orders_launches_and_skips_after_failure(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        LANE.format(stall=0),
        {
            1: """
        agents:
          - {id: B, prompt: second, depends_on: [A], executor: {local: {command: "true"}}}
          - {id: A, prompt: first, executor: {local: {command: "sleep 0.5"}}}
          - {id: C, prompt: third, depends_on: [B], executor: {local: {command: "exit 1"}}}
          - {id: D, prompt: never, depends_on: [C], executor: {local: {command: "touch \\"$WAVE_REPO/D-ran\\""}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    order = [e["agent"] for e in events(tmux_repo, "agent_launched")]
    assert order == ["A", "B", "C"]
    finished = {e["agent"]: e for e in events(tmux_repo, "agent_finished")}
    assert finished["D"]["status"] == "failed" and "dependency C" in finished["D"]["detail"]
    assert not (tmux_repo.root / "D-ran").exists()


def test_usage_limit_is_not_retried_and_blocks_the_wave(tmux_repo: Repo) -> None:
    tmux_repo.fake("claude", 'echo "You\'ve hit your weekly limit · resets 9:40am (UTC)"; exit 1\n')
    tmux_repo.lane(
        "main",
        # not waited for (the default waits for a reset within 6 h: 9:40am is, from 03:40 UTC)
        LANE.format(stall=0).replace("max_retries_per_wave: 0", "max_retries_per_wave: 2")
        + "usage_limit: {wait: false}\n",
        {
            1: """
        agents:
          - {id: A1, prompt: task, executor: {id: claude}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    # Attempts remain, but a usage limit with no other executor to fall back on is not worth
    # retrying: the wave is blocked (exit 4), after one launch.
    assert result.returncode == 4, result.stderr
    assert "blocked: nothing safe to retry" in result.stderr
    assert len(events(tmux_repo, "agent_launched")) == 1
    finished = events(tmux_repo, "agent_finished")[0]
    assert finished["status"] == "usage-limit" and finished["tries"] == 1
    assert "resets 9:40am (UTC)" in tmux_repo.status("main", 1, "A1")["detail"]


def test_demo_lane_runs_from_a_copy_of_the_repository(tmux_repo: Repo) -> None:
    shutil.copytree(Path(__file__).parents[2] / "lanes" / "demo", tmux_repo.root / "lanes" / "demo")
    result = tmux_repo.wave("launch", "--lane", "demo")
    assert result.returncode == 0, result.stderr
    state = json.loads((tmux_repo.state("demo") / "run-state.json").read_text())
    assert {k: v["state"] for k, v in state["waves"].items()} == {
        "1": "completed",
        "2": "completed",
    }
    store = tmux_repo.status("demo", 1, "store")
    assert (store["tries"], store["rate_limited"]) == (2, 1)
    # Wave 2 shows the whole closure sweep, with the integration gate failing once.
    gates = [
        (e["wave"], e["event"], e["stage"])
        for e in tmux_repo.events("demo")
        if e["event"].startswith("gate_")
    ]
    assert gates == [
        (1, "gate_passed", "implementation"),
        (1, "gate_passed", "cont-qa"),
        (2, "gate_passed", "implementation"),
        (2, "gate_passed", "cont-eval"),
        (2, "gate_passed", "security"),
        (2, "gate_failed", "integration"),
        (2, "gate_passed", "integration"),
        (2, "gate_passed", "documentation"),
        (2, "gate_passed", "cont-qa"),
        (2, "gate_passed", "infra"),  # build's deploy and infra signals
    ]
    assert state["waves"]["2"]["attempts"] == 2
    assert (tmux_repo.root / "demo-scratch" / "wave-2" / "qa-report.md").exists()

    status = tmux_repo.wave("status", "--lane", "demo", "--json")
    data = json.loads(status.stdout)
    assert data["launcher"]["alive"] is False
    assert [w["state"] for w in data["waves"]] == ["completed", "completed"]
    assert {a["id"]: a["tries"] for a in data["waves"][0]["agents"]}["store"] == 2

    logs = tmux_repo.wave("logs", "--lane", "demo", "store")
    assert "[wave] rate limited: try 1/3, retrying in 1s" in logs.stdout
    attach = tmux_repo.wave("attach", "--lane", "demo", "api", "--print")
    assert (
        attach.stdout.strip()
        == f"tmux -L {tmux_repo.env['WAVE_TMUX_SOCKET']} attach-session -t =w1-api"
    )
    lanes = json.loads(tmux_repo.wave("lanes", "--json").stdout)
    assert (
        lanes["lanes"][0]["lane"] == "demo"
        and lanes["lanes"][0]["last_result"] == "wave 2 completed"
    )


def test_auto_next_starts_at_the_first_wave_not_completed(tmux_repo: Repo) -> None:
    gated = 'test -e "$WAVE_REPO/go" || { echo "not yet"; exit 1; }'
    tmux_repo.lane(
        "main",
        LANE.format(stall=0),
        {
            1: "agents: [{id: A1, prompt: one, executor: {local: {command: 'true'}}}]",
            2: "agents: [{id: B1, prompt: two, executor: {local: {command: '" + gated + "'}}}]",
            3: "agents: [{id: C1, prompt: three, executor: {local: {command: 'true'}}}]",
        },
    )
    first = tmux_repo.wave("launch", "--lane", "main")
    assert first.returncode == 1
    (tmux_repo.root / "go").touch()
    started_before = len(events(tmux_repo, "wave_started"))
    second = tmux_repo.wave("launch", "--lane", "main", "--auto-next")
    assert second.returncode == 0, second.stderr
    assert [e["wave"] for e in events(tmux_repo, "wave_started")[started_before:]] == [2, 3]
    waves = tmux_repo.run_state("main")["waves"]
    assert {k: v["state"] for k, v in waves.items()} == {
        "1": "completed",
        "2": "completed",
        "3": "completed",
    }
    third = tmux_repo.wave("launch", "--lane", "main", "--auto-next")
    assert third.returncode == 0 and "every selected wave is already completed" in third.stdout


def test_max_running_caps_agents_running_at_once(tmux_repo: Repo) -> None:
    lane = LANE.format(stall=0) + "  max_running: 2\n"
    rows = "\n".join(
        f"  - {{id: A{i}, prompt: w, executor: {{local: {{command: 'sleep 0.5'}}}}}}"
        for i in range(5)
    )
    tmux_repo.lane("main", lane, {1: f"agents:\n{rows}\n"})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    running, peak = 0, 0
    for e in tmux_repo.events("main"):
        if e["event"] == "agent_launched":
            running += 1
            peak = max(peak, running)
        elif e["event"] == "agent_finished":
            running -= 1
    assert peak == 2
    assert len(events(tmux_repo, "agent_launched")) == 5
