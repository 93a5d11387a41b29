"""isolation, base, setup (lane or wave) and merge (lane)."""

from __future__ import annotations

import subprocess

import pytest
from helpers import Repo, git_init

from wave_orchestrator.definitions.loading.lane_loader import load_lane
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
        "worktree",
        "main",
        "make deps",
        (".env", "config/local/"),
    )
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


WORKTREE_LANE = LANE + "isolation: worktree\n"


def problems(repo: Repo) -> list[str]:
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("agent_id", ["integration", "Integration", "INTEGRATION"])
def test_an_implementation_agent_may_not_take_the_integration_worktrees_name(
    repo: Repo, agent_id: str
) -> None:
    """Only where it would collide: not in a shared checkout, not for a closure agent (which
    runs in the integration worktree anyway). Outside a git repository the base is not asked
    (the launch says what is wrong, as before)."""
    reserved = AGENT.replace("id: A", f"id: {agent_id}")
    closure = AGENT.replace("id: A", f"id: {agent_id}, role: integration")
    repo.lane(
        "main",
        LANE,
        {
            1: "isolation: worktree\nagents:\n" + AGENT + closure,
            2: "isolation: shared\nagents:\n" + reserved,
            3: "isolation: worktree\nbase: nope\nagents:\n" + reserved,
        },
    )
    assert problems(repo) == [
        f"lanes/main/waves/wave-3.yaml:4:10: agents[0].id: agent id {agent_id!r} is reserved "
        "in isolation: worktree (wave's integration worktree w3-integration); rename the agent"
    ]


def test_a_worktree_waves_base_must_name_a_commit_where_it_is_written(repo: Repo) -> None:
    """Reported once where it is written (lane.yaml's for every wave that inherits it), and
    only for worktree waves; a branch, tag or commit resolves, a tree does not."""
    repo.lane(
        "main",
        WORKTREE_LANE + "base: gone\n",
        {
            1: "base: nope\nagents:\n" + AGENT,
            2: "agents:\n" + AGENT,  # inherits lane.yaml's base, as wave 3 does
            3: "agents:\n" + AGENT,
            4: "base: main\nagents:\n" + AGENT,
            5: "base: v1\nagents:\n" + AGENT,
            6: "base: 'HEAD^{tree}'\nagents:\n" + AGENT,
            7: "isolation: shared\nbase: nope\nagents:\n" + AGENT,  # no worktree: not asked
        },
    )
    commit = git_init(repo.root)
    subprocess.run(["git", "-C", str(repo.root), "tag", "v1"], check=True)
    waves = repo.root / "lanes" / "main" / "waves"
    (waves / "wave-8.yaml").write_text(f"base: {commit}\nagents:\n" + AGENT)
    where = f"is not a branch, tag or commit in {repo.root}"
    assert problems(repo) == [
        f"lanes/main/lane.yaml:4:7: base: 'gone' {where}",
        f"lanes/main/waves/wave-1.yaml:1:7: base: 'nope' {where}",
        f"lanes/main/waves/wave-6.yaml:1:7: base: 'HEAD^{{tree}}' {where}",
    ]
