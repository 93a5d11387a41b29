"""What a person is told of a wave's end matches docs/coordination.md's table: a completed
wave names no agent and no reason, even when an agent failed an earlier attempt of it."""

from __future__ import annotations

import json

import pytest
from helpers import Hook, Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

# Fails its first attempt, passes the retry: the wave completes on attempt 2.
FLAKY = "if [ -e ../flaky-once ]; then echo done; else touch ../flaky-once; exit 1; fi"


def test_a_wave_completed_on_a_retry_names_no_agent(tmux_repo: Repo, hook: Hook) -> None:
    lane = local_lane(retries=1) + f"notify: {{webhook: {{url: '{hook.url}'}}}}\n"
    flaky = FLAKY.replace("../flaky-once", str(tmux_repo.root / "flaky-once"))
    tmux_repo.lane("main", lane, {1: "agents:\n" + local_agent("docs", flaky)})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert (tmux_repo.root / "flaky-once").exists()  # it did fail once
    docs = []
    for _, body in hook.posts:
        got = json.loads(body)
        docs += got.get("events", [got])
    completed = [d for d in docs if d["kind"] == "wave-completed"]
    assert len(completed) == 1, docs
    assert completed[0]["agent"] is None and completed[0]["reason"] is None, completed[0]
    assert completed[0]["wave"] == 1 and completed[0]["command"] == "wave status --lane main"
