"""isolation, base, setup (lane or wave) and merge (lane)."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"
AGENT = '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'


def test_lane_settings_apply_to_waves_and_a_wave_overrides_per_key(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "isolation: worktree\nbase: main\nmerge: ff\n"
        "setup: {command: 'make deps', copy: [.env, config/local/]}\n",
        {1: "agents:\n" + AGENT, 2: "base: release\nisolation: shared\nagents:\n" + AGENT},
    )
    lane = load_lane(repo.root, "main")
    one, two = lane.wave(1).isolation, lane.wave(2).isolation
    assert (one.mode, one.base, one.setup_command, one.setup_copy) == (
        "worktree", "main", "make deps", (".env", "config/local/")
    )  # fmt: skip
    assert (two.mode, two.base, two.setup_command) == ("shared", "release", "make deps")
    assert lane.merge == "ff"


def test_the_default_is_todays_shared_checkout(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n" + AGENT})
    lane = load_lane(repo.root, "main")
    assert not lane.wave(1).isolation.worktree and lane.merge == "none"


@pytest.mark.parametrize(
    ("lane_extra", "wave_extra", "expect"),
    [
        ("isolation: sandbox\n", "", "lane.yaml:3:12: isolation: unknown mode 'sandbox'"),
        ("merge: rebase\n", "", "merge: unknown merge mode 'rebase'"),
        ("", "base: --force\n", "wave-1.yaml:1:7: base: invalid ref '--force'"),
        ("", "setup: {copy: [../secrets]}\n", "setup.copy[0]: invalid path '../secrets'"),
        ("", "setup: {run: x}\n", "setup.run"),
    ],
)
def test_bad_values_name_file_line_and_field(
    repo: Repo, lane_extra: str, wave_extra: str, expect: str
) -> None:
    repo.lane("main", LANE + lane_extra, {1: wave_extra + "agents:\n" + AGENT})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)
