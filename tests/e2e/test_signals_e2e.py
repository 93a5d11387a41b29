"""The infra gate and deploy signals through a real launch (issue 24 §2)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

DRIFT = "[infra-status] kind=dns target=api.example.com state=drift detail=the A record is stale"


def test_an_infra_signal_in_drift_fails_the_wave_naming_agent_state_and_action(
    tmux_repo: Repo,
) -> None:
    body = (
        "agents:\n"
        + local_agent("dns", f"echo checking; echo '{DRIFT}'", role="infra")
        + local_agent("web", "echo '[deploy-status] service=web state=healthy'", role="deploy")
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1, done.stderr
    assert "gate failed (stage=infra status=infra-drift" in done.stderr
    assert "Infra signal dns on api.example.com ended in state drift (the A record is stale)." in (
        done.stderr
    )
    gate = tmux_repo.run_state("main")["waves"]["1"]["gate_failure"]
    assert (gate["stage"], gate["status"], gate["agent"]) == ("infra", "infra-drift", "dns")
    assert gate["log"].endswith("agents/dns/output.log") and "fix it" in gate["action"]
    shown = tmux_repo.wave("status", "--lane", "main").stdout
    assert "  deploys: web healthy (web)" in shown.splitlines(), shown
    assert "infra gate failed: infra-drift" in shown, shown


def test_passing_signals_pass_and_a_failed_deploy_fails(tmux_repo: Repo) -> None:
    ok = "echo '[infra-status] kind=dns target=api state=action-approved'"
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("dns", ok, role="infra")})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0 and "gate passed (stage=infra" in done.stderr, done.stderr
    board = json.loads(
        (tmux_repo.state("main") / "waves" / "wave-1" / "dashboard.json").read_text()
    )
    assert {"stage": "infra", "state": "passed"} in board["stages"]

    failed = "echo '[deploy-status] service=api state=failed detail=crashloop'"
    tmux_repo.lane("other", local_lane(), {1: "agents:\n" + local_agent("D", failed)})
    done = tmux_repo.wave("launch", "--lane", "other", "--no-dashboard")
    assert done.returncode == 1 and "status=deploy-failed" in done.stderr, done.stderr


def test_a_wave_without_signals_shows_no_infra_stage(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "echo hi")})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0 and "stage=infra" not in done.stderr
