"""End to end in real tmux and bubblewrap: a sandboxed agent that waits on a person's answer
(`wave feedback ask --wait`, inside its own process ids) is seen waiting by the launcher, its
budget paused, and goes on once answered."""

from __future__ import annotations

import json
import shutil
import time
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (setup.sh)"),
]


def _status_of(repo: Repo, agent: str) -> dict[str, Any]:
    done = repo.wave("status", "--lane", "main", "--json")
    if done.returncode != 0:
        return {}
    for wave in json.loads(done.stdout).get("waves", []):
        for row in wave.get("agents", []):
            if row.get("id") == agent:
                return dict(row)
    return {}


def _pending(repo: Repo) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = wait_for(
        lambda: json.loads(
            repo.wave("feedback", "list", "--lane", "main", "--pending", "--json").stdout or "[]"
        ),
        seconds=40,
        what="a pending question",
    )
    return found


def test_a_sandboxed_agent_answered_late_keeps_its_budget(tmux_repo: Repo) -> None:
    ask = "wave feedback ask --question 'go on?' --wait --timeout-seconds 60 && touch went-on"
    lane = local_lane().replace("timeout_minutes: 1", "timeout_minutes: 0.05")  # a 3 s budget
    tmux_repo.lane(
        "main", lane + "  sandbox: bubblewrap\n", {1: "agents:\n" + local_agent("Q", ask)}
    )
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        pending = _pending(tmux_repo)
        wait_for(
            lambda: _status_of(tmux_repo, "Q").get("state") == "waiting-human",
            seconds=20,
            what="Q shown as waiting-human",
        )
        assert _status_of(tmux_repo, "Q").get("sandbox") == "bubblewrap"
        records = [
            json.loads(line)
            for line in (tmux_repo.state("main") / "feedback.jsonl").read_text().splitlines()
        ]
        waits = [r for r in records if "wait_until" in r]
        assert waits and all(r["wait_pid"] is None for r in waits)  # no pid of its own ids
        time.sleep(4)  # longer than the whole budget: the clock must be paused meanwhile
        assert launch.poll() is None
        assert _status_of(tmux_repo, "Q").get("state") == "waiting-human"
        tmux_repo.wave(
            "feedback", "respond", pending[0]["id"], "--lane", "main", "--response", "yes"
        )
        _, err = launch.communicate(timeout=90)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate(timeout=30)
    assert launch.returncode == 0, err
    assert (tmux_repo.root / "went-on").exists()
