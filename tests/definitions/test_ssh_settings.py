"""placement: ssh and the lane's ssh: section (hosts, config, host timeout), and what an ssh
lane rules out: a checkout the hosts do not share, a bubblewrap sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import PlacementSettings, SshHostDef, SshSettings
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"
AGENT = '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'
WAVE = "agents:\n" + AGENT
GOOD = """\
placement: ssh
isolation: worktree
ssh:
  config: ~/.ssh/config
  host_timeout_minutes: 10
  hosts:
    - {name: box1, destination: box1, workdir: /srv/wave, max_agents: 4}
    - {name: gpu, destination: me@10.0.0.7, max_agents: 2}
    - {name: nfs, destination: nfs-box, shared_path: true}
"""
ONE_HOST = "ssh:\n  hosts:\n    - {name: h, destination: h}\n"


def problems(repo: Repo, lane_yaml: str, waves: dict[int, str] | None = None) -> list[str]:
    repo.lane("main", LANE + lane_yaml, waves or {1: WAVE})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    return [str(p) for p in err.value.problems]


def only(repo: Repo, lane_yaml: str, waves: dict[int, str] | None = None) -> str:
    found = problems(repo, lane_yaml, waves)
    assert len(found) == 1, found
    return found[0]


def test_the_example_lane_is_exactly_these_records(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo.lane("main", LANE + GOOD, {1: WAVE})
    lane = load_lane(repo.root, "main")
    ssh = SshSettings(
        hosts=(
            SshHostDef("box1", "box1", workdir="/srv/wave", max_agents=4),
            SshHostDef("gpu", "me@10.0.0.7", max_agents=2),
            SshHostDef("nfs", "nfs-box", shared_path=True),
        ),
        config=tmp_path / "home" / ".ssh" / "config",
        host_timeout_minutes=10.0,
    )
    assert lane.placement == PlacementSettings(kind="ssh", ssh=ssh)
    assert lane.placement.remote and not lane.placement.slurm
    agent = lane.wave(1).agents[0].placement
    assert agent.remote and agent.ssh == ssh  # every agent knows the hosts


def test_the_mapping_form_defaults_and_a_relative_config(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "placement: {kind: ssh, cpus: 2}\nisolation: worktree\n"
        "ssh:\n  config: ci/ssh_config\n  hosts: [{name: h, destination: h}]\n",
        {1: WAVE},
    )
    placement = load_lane(repo.root, "main").placement
    assert placement.kind == "ssh" and placement.cpus == 2
    assert placement.ssh == SshSettings(
        hosts=(SshHostDef("h", "h", workdir=None, max_agents=4, shared_path=False),),
        config=repo.root / "ci" / "ssh_config",  # need not exist yet
        host_timeout_minutes=10.0,
    )


def test_every_host_sharing_the_checkout_allows_a_shared_isolation(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "placement: ssh\nssh:\n  hosts: [{name: h, destination: h, shared_path: true}]\n",
        {1: WAVE},
    )
    lane = load_lane(repo.root, "main")
    assert lane.placement.ssh is not None and lane.placement.ssh.hosts[0].shared_path
    assert not lane.wave(1).isolation.worktree


def test_a_local_lane_carries_no_ssh_settings(repo: Repo) -> None:
    repo.lane("main", LANE, {1: WAVE})
    placement = load_lane(repo.root, "main").placement
    assert placement.ssh is None and not placement.remote


@pytest.mark.parametrize(
    ("lane_yaml", "expect"),
    [
        (
            "placement: ssh\nisolation: worktree\n",
            "lane.yaml:3:12: placement: ssh placement needs ssh.hosts",
        ),
        (
            "placement: {kind: ssh}\nisolation: worktree\nssh: {config: c}\n",
            "lane.yaml:3:12: placement: ssh placement needs ssh.hosts",
        ),
        (
            "placement: ssh\nisolation: worktree\nssh: {hosts: []}\n",
            "lane.yaml:3:12: placement: ssh placement needs ssh.hosts",
        ),
        (
            ONE_HOST,
            "lane.yaml:3:1: ssh: ssh: is read only with placement: ssh",
        ),
        (
            "placement: slurm\n" + ONE_HOST,
            "lane.yaml:4:1: ssh: ssh: is read only with placement: ssh",
        ),
        (
            "placement: {kind: ssh, partition: p}\nisolation: worktree\n" + ONE_HOST,
            "lane.yaml:3:35: placement.partition: partition is a Slurm setting",
        ),
        (
            "placement: {kind: ssh, tmux: true}\nisolation: worktree\n" + ONE_HOST,
            "placement.tmux: tmux is a Slurm setting (expected kind: slurm)",
        ),
        ("placement: sssh\n", "placement: unknown placement 'sssh' (expected local, slurm, ssh"),
        (
            "placement: ssh\nisolation: worktree\nssh: {hosts: [{name: h, destination: h}], "
            "user: me}\n",
            "lane.yaml:5:43: ssh.user: unknown key",
        ),
        (
            "placement: ssh\nisolation: worktree\nssh:\n  hosts: {name: h}\n",
            "lane.yaml:6:10: ssh.hosts: wrong type: mapping (expected a list of hosts",
        ),
    ],
)
def test_placement_and_section_disagreements(repo: Repo, lane_yaml: str, expect: str) -> None:
    assert expect in only(repo, lane_yaml)


HOSTS = "placement: ssh\nisolation: worktree\nssh:\n  hosts:\n"


@pytest.mark.parametrize(
    ("host", "expect"),
    [
        ("{destination: h}", "lane.yaml:7:7: ssh.hosts[0]: missing name"),
        ("{name: h}", "lane.yaml:7:7: ssh.hosts[0]: missing destination"),
        ("{name: -h, destination: h}", "ssh.hosts[0].name: invalid host name '-h'"),
        ("{name: a.b, destination: h}", "ssh.hosts[0].name: invalid host name 'a.b'"),
        ("{name: " + "n" * 33 + ", destination: h}", "ssh.hosts[0].name: invalid host name"),
        ("{name: h, destination: h, port: 22}", "lane.yaml:7:33: ssh.hosts[0].port: unknown key"),
        ("{name: h, destination: 7}", "ssh.hosts[0].destination: wrong type: number"),
        ("{name: h, destination: h, max_agents: 0}", "ssh.hosts[0].max_agents: must be at least 1"),
        ("{name: h, destination: h, max_agents: 1.5}", "max_agents: not an integer: 1.5"),
        (
            "{name: h, destination: h, shared_path: yes please}",
            "ssh.hosts[0].shared_path: wrong type: string (expected true or false)",
        ),
        ("{name: h, destination: h, workdir: 5}", "ssh.hosts[0].workdir: wrong type: number"),
    ],
)
def test_a_bad_host_is_named_where_it_is_written(repo: Repo, host: str, expect: str) -> None:
    assert expect in only(repo, HOSTS + f"    - {host}\n")


def test_host_names_are_unique_whatever_their_case(repo: Repo) -> None:
    found = only(
        repo,
        HOSTS + "    - {name: Box, destination: a}\n    - {name: box, destination: b}\n",
    )
    assert "lane.yaml:8:14: ssh.hosts[1].name: host name 'box' is also hosts[0]'s" in found


@pytest.mark.parametrize(
    ("destination", "why"),
    [
        ("-oProxyCommand=x", "it starts with '-' and ssh would read it as an option"),
        ("'a b'", "it holds a space or control character"),
        ("'a;b'", "it holds ';'"),
        ('"a\\nb"', "it holds a space or control character"),
        ('"a\\tb"', "it holds a space or control character"),
        ("'a$(id)'", "it holds '$' '(' ')'"),
        ("'a`id`'", "it holds '`'"),
        ("'a/b'", "it holds '/'"),
        ("''", "it is empty"),
        ("'" + "a" * 256 + "'", "it is longer than 255 characters"),
    ],
)
def test_hostile_destinations_are_refused(repo: Repo, destination: str, why: str) -> None:
    found = only(repo, HOSTS + f"    - {{name: h, destination: {destination}}}\n")
    assert "lane.yaml:7:30: ssh.hosts[0].destination: invalid destination" in found
    assert why in found and "(expected an ssh alias, host or user@host)" in found


@pytest.mark.parametrize(
    "destination", ["box1", "me@10.0.0.7", "user@[fe80::1%eth0]", "a-b.example.org", "h+x:2"]
)
def test_ordinary_destinations_pass(repo: Repo, destination: str) -> None:
    repo.lane(
        "main", LANE + HOSTS + f"    - {{name: h, destination: '{destination}'}}\n", {1: WAVE}
    )
    ssh = load_lane(repo.root, "main").placement.ssh
    assert ssh is not None and ssh.hosts[0].destination == destination


@pytest.mark.parametrize(
    ("workdir", "why"),
    [
        ("/srv/../etc", "it has a '..' component"),
        ("~/..", "it has a '..' component"),
        ("'/srv/$HOME'", "it holds '$', which a remote shell command would have to quote"),
        ("'/srv/my wave'", "it holds ' ', which a remote shell command would have to quote"),
        ("'/srv/a;rm'", "it holds ';'"),
        ('"/srv/a\\nb"', "it holds '\\n'"),
        ("srv/wave", "it is relative"),
        ("./wave", "it is relative"),
        ("~wave", "of ~ forms only ~/ (below the host's HOME) is taken"),
        ("'~'", "of ~ forms only ~/"),  # a bare ~ is YAML's null: the default
        ("''", "it is relative"),
    ],
)
def test_unsafe_workdirs_are_refused_saying_why(repo: Repo, workdir: str, why: str) -> None:
    found = only(repo, HOSTS + f"    - {{name: h, destination: h, workdir: {workdir}}}\n")
    assert "ssh.hosts[0].workdir: invalid workdir" in found and why in found


@pytest.mark.parametrize("workdir", ["/srv/wave", "~/wave", "~/.cache/wave-1", "/a/b+c/d_e.f"])
def test_plain_workdirs_are_kept_as_written(repo: Repo, workdir: str) -> None:
    repo.lane(
        "main", LANE + HOSTS + f"    - {{name: h, destination: h, workdir: {workdir}}}\n", {1: WAVE}
    )
    ssh = load_lane(repo.root, "main").placement.ssh
    assert ssh is not None and ssh.hosts[0].workdir == workdir


@pytest.mark.parametrize(
    ("section", "expect"),
    [
        ("  host_timeout_minutes: 0\n", "ssh.host_timeout_minutes: must be greater than 0"),
        ("  host_timeout_minutes: soon\n", "ssh.host_timeout_minutes: wrong type: string"),
        ("  config: 5\n", "ssh.config: wrong type: number (expected a path to an ssh config"),
        ("  config: '~bob/cfg'\n", "ssh.config: '~bob/cfg': only ~ and ~/ are expanded"),
        ('  config: "a\\u0000b"\n', "ssh.config: invalid path"),
    ],
)
def test_bad_section_values(repo: Repo, section: str, expect: str) -> None:
    lane_yaml = "placement: ssh\nisolation: worktree\nssh:\n" + section
    assert expect in only(repo, lane_yaml + "  hosts: [{name: h, destination: h}]\n")


def test_a_host_timeout_is_kept(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "placement: ssh\nisolation: worktree\nssh:\n  host_timeout_minutes: 2.5\n"
        "  hosts: [{name: h, destination: h}]\n",
        {1: WAVE},
    )
    ssh = load_lane(repo.root, "main").placement.ssh
    assert ssh is not None and ssh.host_timeout_minutes == 2.5


ISOLATION_WHY = "isolation: agents on ssh hosts work in git worktrees there, and isolation shared"
ISOLATION_INSTEAD = (
    "(expected isolation: worktree, or shared_path: true on hosts that see this checkout at "
    "its path)"
)


def test_a_shared_checkout_needs_every_host_to_share_it(repo: Repo) -> None:
    found = only(
        repo,
        "placement: ssh\nisolation: shared\nssh:\n  hosts:\n"
        "    - {name: a, destination: a}\n    - {name: n, destination: n, shared_path: true}\n"
        "    - {name: b, destination: b}\n",
    )
    assert found.startswith(f"lanes/main/lane.yaml:4:12: {ISOLATION_WHY}")
    assert "(a, b say no shared_path)" in found and found.endswith(ISOLATION_INSTEAD)


def test_the_default_isolation_is_reported_at_the_top_of_lane_yaml(repo: Repo) -> None:
    found = only(repo, "placement: ssh\n" + ONE_HOST)
    assert found.startswith(f"lanes/main/lane.yaml:1:1: {ISOLATION_WHY}")
    assert "(h says no shared_path)" in found


def test_a_wave_that_shares_the_checkout_is_reported_in_its_file(repo: Repo) -> None:
    found = only(
        repo,
        "placement: ssh\nisolation: worktree\n" + ONE_HOST,
        {1: WAVE, 2: "isolation: shared\n" + WAVE},
    )
    assert found.startswith(f"lanes/main/waves/wave-2.yaml:1:12: {ISOLATION_WHY}")


def test_a_wave_may_say_worktree_itself(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "placement: ssh\nisolation: worktree\n" + ONE_HOST,
        {1: "isolation: worktree\n" + WAVE},
    )
    assert load_lane(repo.root, "main").wave(1).isolation.worktree


SSH_LANE = "placement: ssh\nisolation: worktree\n" + ONE_HOST
BWRAP = "bubblewrap confines agents on this machine only, and this lane runs them on ssh hosts"
BWRAP_INSTEAD = (
    "(expected sandbox: auto (agents on hosts run unsandboxed, and wave says so) or none)"
)


@pytest.mark.parametrize(
    ("lane_extra", "waves", "where"),
    [
        (
            "defaults: {executor: local, sandbox: bubblewrap}\n",
            {1: WAVE},
            "lane.yaml:1:38: defaults.sandbox:",
        ),
        (
            "defaults: {executor: local, sandbox: {mode: bubblewrap, network: false}}\n",
            {1: WAVE},
            "lane.yaml:1:45: defaults.sandbox.mode:",
        ),
        ("", {1: "sandbox: bubblewrap\n" + WAVE}, "wave-1.yaml:1:10: sandbox:"),
        (
            "",
            {1: WAVE.replace("id: A,", "id: A, sandbox: {mode: bubblewrap},")},
            "wave-1.yaml:2:29: agents[0].sandbox.mode:",
        ),
    ],
)
def test_bubblewrap_is_refused_on_an_ssh_lane(
    repo: Repo, lane_extra: str, waves: dict[int, str], where: str
) -> None:
    # a later `defaults:` would be a duplicate key: the lane's own replaces LANE's
    lane_yaml = SSH_LANE if not lane_extra else SSH_LANE + "closure: {required_roles: []}\n"
    repo.lane("main", (lane_extra or LANE) + lane_yaml, waves)
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    found = [str(p) for p in err.value.problems]
    assert len(found) == 1, found
    assert where in found[0] and BWRAP in found[0] and found[0].endswith(BWRAP_INSTEAD)


def test_auto_and_none_sandboxes_are_allowed_on_an_ssh_lane(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local, sandbox: auto}\nclosure: {required_roles: []}\n" + SSH_LANE,
        {
            1: "sandbox: {mode: auto, network: false}\n"
            + WAVE.replace("id: A,", "id: A, sandbox: none,")
        },
    )
    lane = load_lane(repo.root, "main")
    assert lane.defaults.sandbox.mode == "auto" and lane.wave(1).sandbox.mode == "auto"


def test_bubblewrap_stays_allowed_on_a_local_lane(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local, sandbox: bubblewrap}\nclosure: {required_roles: []}\n",
        {1: WAVE},
    )
    assert load_lane(repo.root, "main").defaults.sandbox.mode == "bubblewrap"


def test_the_example_in_lanes_md_loads(repo: Repo) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "lanes.md").read_text()
    part = page.split("\n### ssh\n", 1)[1]
    example = part.split("```yaml\n", 1)[1].split("```", 1)[0]
    repo.lane("main", LANE + example, {1: WAVE})
    ssh = load_lane(repo.root, "main").placement.ssh
    assert ssh is not None and [h.name for h in ssh.hosts] == ["box1", "gpu", "nfs"]
