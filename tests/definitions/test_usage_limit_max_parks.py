"""``usage_limit.max_parks``: how often an agent waits for a reset; an integer >= 1, 3 unless
set, a bad value named at its place in lane.yaml."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: claude}\nclosure: {required_roles: []}\n"
WAVE = {1: "agents:\n  - {id: A, prompt: p}\n"}


def test_an_agent_is_parked_three_times_unless_the_lane_says(repo: Repo) -> None:
    repo.lane("main", LANE, WAVE)
    assert load_lane(repo.root, "main").governance.usage_limit.max_parks == 3
    repo.lane("other", LANE + "usage_limit: {max_parks: 8, margin_seconds: 5}\n", WAVE)
    policy = load_lane(repo.root, "other").governance.usage_limit
    assert (policy.max_parks, policy.margin_seconds, policy.wait) == (8, 5, True)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0", "usage_limit.max_parks: must be at least 1, got 0"),
        ("-2", "usage_limit.max_parks"),
        ("2.5", "usage_limit.max_parks: not an integer: 2.5"),
        ("many", "usage_limit.max_parks: wrong type"),
        ("true", "usage_limit.max_parks: wrong type"),
        ("100000", "usage_limit.max_parks"),
    ],
)
def test_a_bad_max_parks_is_named_at_its_place(repo: Repo, value: str, said: str) -> None:
    repo.lane("main", LANE + f"usage_limit:\n  max_parks: {value}\n", WAVE)
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo.root, "main")
    problems = str(info.value)
    assert "lane.yaml:4:14: " + said.split(":")[0] in problems
    assert said in problems
