"""lane.yaml's ``stall`` (a silent agent nudged, then a person asked) and
``defaults.on_timeout``: off and ``restart`` unless set, a bad value named at its place."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: claude}\nclosure: {required_roles: []}\n"
WAVE = {1: "agents:\n  - {id: A, prompt: p}\n"}


def test_off_and_restart_unless_the_lane_says(repo: Repo) -> None:
    repo.lane("main", LANE, WAVE)
    lane = load_lane(repo.root, "main")
    assert not lane.stall.on and lane.defaults.on_timeout == "restart"
    other = "defaults: {executor: claude, on_timeout: continue}\nclosure: {required_roles: []}\n"
    repo.lane("other", other + "stall: {nudge_minutes: 20, ask_minutes: 45}\n", WAVE)
    lane = load_lane(repo.root, "other")
    assert (lane.stall.nudge_minutes, lane.stall.ask_minutes) == (20, 45)
    assert lane.stall.on and lane.defaults.on_timeout == "continue"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("stall: {nudge_minutes: -1}\n", "lane.yaml:3:24: stall.nudge_minutes: must be at least 0"),
        ("stall: {ask_minutes: soon}\n", "lane.yaml:3:22: stall.ask_minutes: wrong type"),
        ("stall: {ask_minutes: 99999999}\n", "lane.yaml:3:22: stall.ask_minutes"),
        ("stall: {nudge: 5}\n", "lane.yaml:3:9: stall.nudge: unknown key"),
        ("stall: 5\n", "lane.yaml:3:8: stall: wrong type"),
    ],
)
def test_a_bad_stall_is_named_at_its_place(repo: Repo, extra: str, said: str) -> None:
    repo.lane("main", LANE + extra, WAVE)
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo.root, "main")
    assert said in str(info.value)


def test_a_bad_on_timeout_is_named_with_the_choices(repo: Repo) -> None:
    repo.lane("main", "defaults: {on_timeout: resume}\nclosure: {required_roles: []}\n", WAVE)
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo.root, "main")
    assert "lane.yaml:1:24: defaults.on_timeout: unknown value 'resume'" in str(info.value)
    assert "continue, restart" in str(info.value)
