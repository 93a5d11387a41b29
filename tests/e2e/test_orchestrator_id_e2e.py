"""End to end: every launcher has an id of its own, which its agents get as
WAVE_ORCHESTRATOR_ID and which its status files, launch records, summaries and events carry,
so that the records of two launchers of one lane are told apart."""

from __future__ import annotations

import json
import re

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

SAYS_ID = 'echo "$WAVE_ORCHESTRATOR_ID" > "$WAVE_REPO/$WAVE_AGENT_ID.txt"'


def launch_id(repo: Repo) -> str:
    done = repo.wave("launch", "--lane", "main", "--no-dashboard", "--fresh")
    assert done.returncode == 0, done.stderr
    started = [e for e in repo.events("main") if e["event"] == "launcher_started"]
    return str(started[-1]["orchestrator_id"])


def test_each_record_of_a_launch_carries_its_launchers_id(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", SAYS_ID)})
    first = launch_id(tmux_repo)
    assert re.fullmatch(r"main-\d{8}T\d{6}Z-\d+", first), first
    agent = tmux_repo.agent_dir("main", 1, "A")
    assert (tmux_repo.root / "A.txt").read_text().strip() == first  # the agent's environment
    assert tmux_repo.status("main", 1, "A")["orchestrator_id"] == first
    assert json.loads((agent / "launch.json").read_text())["orchestrator_id"] == first
    assert json.loads((agent / "summary.json").read_text())["orchestrator_id"] == first
    own = [e for e in tmux_repo.events("main") if e.get("orchestrator_id") == first]
    assert {"launcher_started", "agent_launched", "agent_finished", "wave_completed"} <= {
        e["event"] for e in own
    }

    second = launch_id(tmux_repo)
    assert second != first
    assert tmux_repo.status("main", 1, "A")["orchestrator_id"] == second
    finished = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert [e["orchestrator_id"] for e in finished] == [first, second]


def test_a_dry_run_gives_no_orchestrator_id(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", SAYS_ID)})
    done = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)["agents"][0]["env"]
    assert "WAVE_LANE" in env and "WAVE_ORCHESTRATOR_ID" not in env
