"""A wave that waits for another lane's wave (issue 24 §5: depends_on_lanes)."""

from __future__ import annotations

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e


def test_a_wave_waits_for_the_other_lanes_wave_and_then_runs(tmux_repo: Repo) -> None:
    order = 'echo "$WAVE_LANE" >> "$WAVE_REPO/order"'
    tmux_repo.lane("infra", local_lane(), {1: "agents:\n" + local_agent("net", order)})
    app = "depends_on_lanes: ['infra:1']\nagents:\n" + local_agent("api", order)
    tmux_repo.lane("app", local_lane(), {1: app})
    waiting = tmux_repo.spawn("launch", "--lane", "app", "--no-dashboard")
    try:
        wait_for(
            lambda: (
                "waiting for lane infra wave 1" in tmux_repo.wave("status", "--lane", "app").stdout
            ),
            20,
            what="app's wave 1 to say what it waits for",
        )
        assert not (tmux_repo.root / "order").exists()  # nothing of app ran meanwhile
        assert tmux_repo.wave("launch", "--lane", "infra", "--no-dashboard").returncode == 0
        _, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, err
    assert (tmux_repo.root / "order").read_text().split() == ["infra", "app"]
    assert "waiting for" not in tmux_repo.wave("status", "--lane", "app").stdout


def test_a_stop_ends_the_wait(tmux_repo: Repo) -> None:
    tmux_repo.lane("infra", local_lane(), {1: "agents:\n" + local_agent("net", "true")})
    app = "depends_on_lanes: ['infra:1']\nagents:\n" + local_agent("api", "true")
    tmux_repo.lane("app", local_lane(), {1: app})
    waiting = tmux_repo.spawn("launch", "--lane", "app", "--no-dashboard")
    try:
        wait_for(
            lambda: "waiting for" in tmux_repo.wave("status", "--lane", "app").stdout,
            20,
            what="the wait",
        )
        assert tmux_repo.wave("stop", "--lane", "app").returncode == 0
        waiting.communicate(timeout=30)
    finally:
        waiting.kill()
    assert waiting.returncode != 0
    assert tmux_repo.run_state("app")["waves"]["1"]["state"] == "pending"


@pytest.mark.parametrize(
    ("deps", "expect"),
    [
        ("['infra']", "invalid lane wave 'infra'"),
        ("['app:1']", "'app:1' is a wave of this lane"),
        ("['nosuch:1']", "no lane 'nosuch' in this repository"),
    ],
)
def test_bad_lane_dependencies_are_refused(repo: Repo, deps: str, expect: str) -> None:
    repo.lane("infra", local_lane(), {1: "agents:\n" + local_agent("net", "true")})
    app = f"depends_on_lanes: {deps}\nagents:\n" + local_agent("api", "true")
    repo.lane("app", local_lane(), {1: app})
    done = repo.wave("validate", "--lane", "app")
    assert done.returncode == 2 and expect in done.stdout + done.stderr
