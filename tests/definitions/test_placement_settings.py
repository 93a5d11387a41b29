"""placement (lane) and its cpus/mem overrides (wave, agent)."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"
AGENT = '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'
BIG = '  - {id: B, prompt: p, placement: {mem: 8G}, executor: {local: {command: "true"}}}\n'


def test_the_default_is_local(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n" + AGENT})
    lane = load_lane(repo.root, "main")
    assert lane.placement.kind == "local" and not lane.wave(1).agents[0].placement.slurm


def test_a_slurm_lane_and_its_wave_and_agent_overrides(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "placement: {kind: slurm, partition: agents, account: lab, qos: low, cpus: 2, "
        "mem: 2G, extra: [--constraint=fast]}\n",
        {1: "agents:\n" + AGENT, 2: "placement: {cpus: 4}\nagents:\n" + AGENT + BIG},
    )
    lane = load_lane(repo.root, "main")
    one = lane.wave(1).agents[0].placement
    assert (one.kind, one.partition, one.account, one.qos, one.cpus, one.mem, one.extra) == (
        "slurm",
        "agents",
        "lab",
        "low",
        2,
        "2G",
        ("--constraint=fast",),
    )
    a, b = (x.placement for x in lane.wave(2).agents)
    assert (a.cpus, a.mem) == (4, "2G")
    assert (b.cpus, b.mem, b.partition) == (4, "8G", "agents")


def test_tmux_inside_slurm_jobs_is_a_lane_setting(repo: Repo) -> None:
    repo.lane("main", LANE + "placement: {kind: slurm, tmux: true}\n", {1: "agents:\n" + AGENT})
    lane = load_lane(repo.root, "main")
    assert lane.placement.tmux and lane.wave(1).agents[0].placement.tmux


@pytest.mark.parametrize(
    ("lane_extra", "wave_extra", "expect"),
    [
        ("placement: cloud\n", "", "lane.yaml:3:12: placement: unknown placement 'cloud'"),
        ("placement: {kind: k8s}\n", "", "placement.kind: unknown kind 'k8s'"),
        ("placement: {kind: slurm, mem: lots}\n", "", "placement.mem: invalid size 'lots'"),
        ("placement: {kind: slurm, cpus: 0}\n", "", "placement.cpus: must be greater than 0"),
        ("placement: {kind: slurm, extra: [nodes]}\n", "", "placement.extra[0]: not an option"),
        ("placement: {partition: p}\n", "", "placement.partition: partition is a Slurm setting"),
        ("", "placement: {partition: p}\n", "wave-1.yaml:1:13: placement.partition: unknown key"),
        ("", "placement: {mem: 1Q}\n", "placement.mem: invalid size '1Q'"),
        (
            "placement: {kind: slurm, tmux: yes please}\n",
            "",
            "placement.tmux: wrong type: string (expected true or false)",
        ),
        ("placement: {tmux: true}\n", "", "placement.tmux: tmux is a Slurm setting"),
    ],
)
def test_bad_values_name_file_line_and_field(
    repo: Repo, lane_extra: str, wave_extra: str, expect: str
) -> None:
    repo.lane("main", LANE + lane_extra, {1: wave_extra + "agents:\n" + AGENT})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)


def test_an_agent_override_is_located_in_its_wave_file(repo: Repo) -> None:
    bad = '  - {id: A, prompt: p, placement: {cpus: two}, executor: {local: {command: "true"}}}\n'
    repo.lane("main", LANE + "placement: slurm\n", {1: "agents:\n" + bad})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert "wave-1.yaml:2:" in str(err.value) and "agents[0].placement.cpus" in str(err.value)


OWNED = [
    ("--job-name=mine", "--job-name"),
    ("--job=mine", "--job-name"),
    ("-J", "--job-name"),
    ("-Jmine", "--job-name"),
    ("--output=/tmp/x", "--output"),
    ("--out=/tmp/x", "--output"),
    ("-o", "--output"),
    ("--error=e.log", "--error"),
    ("--chdir=/", "--chdir"),
    ("-D", "--chdir"),
    ("--export=NONE", "--export"),
    ("--parsable", "--parsable"),
    ("--wrap=true", "--wrap"),
    ("--dependency=afterok:1", "--dependency"),
    ("-d", "--dependency"),
    ("--time=5", "--time"),
    ("-t", "--time"),
    ("--array=1-3", "--array"),
    ("--nodes=2", "--nodes"),
    ("--ntasks=4", "--ntasks"),
    ("--cpus-per-task=8", "--cpus-per-task"),
    ("--mem=1G", "--mem"),
    ("--partition=gpu", "--partition"),
    ("-A", "--account"),
    ("--qos=high", "--qos"),
    ("--wait", "--wait"),
    ("--hold", "--hold"),
    ("--open-mode=truncate", "--open-mode"),
    ("--export-file=f", "--export-file"),
]


@pytest.mark.parametrize(("arg", "option"), OWNED)
def test_extra_may_not_set_an_option_wave_sets(repo: Repo, arg: str, option: str) -> None:
    repo.lane(
        "main", LANE + f"placement: {{kind: slurm, extra: [{arg}]}}\n", {1: "agents:\n" + AGENT}
    )
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    said = str(err.value)
    assert "lane.yaml:3:" in said and "placement.extra[0]:" in said, said
    given = arg.split("=")[0]
    shown = given if given == option else f"{given} ({option})"
    assert f"{shown} is set by wave itself (expected " in said, said


def test_extra_options_wave_does_not_own_pass(repo: Repo) -> None:
    kept = (
        "--constraint=fast",
        "--gres=gpu:1",
        "--exclusive",
        "--mem-per-cpu=1G",
        "--nodelist=n1",
        "-w",
        "--exclude=n2",
        "--mail-type=END",
        "--ntasks-per-node=1",
    )
    repo.lane(
        "main",
        LANE + f"placement: {{kind: slurm, extra: [{', '.join(kept)}]}}\n",
        {1: "agents:\n" + AGENT},
    )
    assert load_lane(repo.root, "main").placement.extra == kept
