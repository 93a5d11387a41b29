"""Notifications from a running lane to a local webhook (issue 26 §3): a question with the
command that answers it, a failed wave naming its agent, a completed lane."""

from __future__ import annotations

import json

import pytest
from helpers import Hook, Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e


def told(hook: Hook) -> list[dict]:
    docs = []
    for _, body in hook.posts:
        got = json.loads(body)
        docs += got.get("events", [got])
    return docs


def test_a_completed_lane_tells_each_wave_and_the_lane_done(tmux_repo: Repo, hook: Hook) -> None:
    lane = local_lane() + f"notify: {{webhook: {{url: '{hook.url}'}}}}\n"
    tmux_repo.lane(
        "main",
        lane,
        {
            1: "agents:\n" + local_agent("A", "echo done"),
            2: "agents:\n" + local_agent("B", "echo done"),
        },
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    kinds = [(d["kind"], d.get("wave")) for d in told(hook)]
    assert kinds == [("wave-completed", 1), ("wave-completed", 2), ("lane-done", None)]
    assert told(hook)[-1]["command"] == "wave status --lane main"


def test_a_failed_wave_names_its_agent_and_a_question_says_how_to_answer(
    tmux_repo: Repo, hook: Hook
) -> None:
    ask = "wave feedback ask --question 'which database?'; exit 3"
    lane = local_lane() + f"notify: {{webhook: {{url: '{hook.url}', format: json}}}}\n"
    tmux_repo.lane("main", lane, {1: "agents:\n" + local_agent("A", ask)})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode in (1, 4), done.stderr
    docs = {d["kind"]: d for d in told(hook)}
    assert docs["question"]["agent"] == "A" and docs["question"]["question"] == "which database?"
    assert docs["question"]["command"].startswith("wave feedback respond ")
    failed = docs.get("wave-failed") or docs["wave-blocked"]
    assert failed["agent"] == "A" and failed["wave"] == 1 and "A: failed" in failed["reason"]
    assert "lane-done" not in docs
