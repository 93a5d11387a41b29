"""A worktree lane whose agents run on two real SSH hosts (OpenSSH daemons on 127.0.0.1, each
with a workdir of its own): slots per host, work brought back, a host lost mid-wave."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import Repo, commit_base, sh, wait_for

from wave_orchestrator.state.layout import repo_tag

pytestmark = pytest.mark.e2e


def ssh_lane(hosts: Path, max_agents: int = 2, timeout_minutes: float = 10) -> str:
    rows = "".join(
        f"    - {{name: h{i}, destination: host{i}, workdir: {hosts}/host{i}/workdir, "
        f"max_agents: {max_agents}}}\n"
        for i in (1, 2)
    )
    return (
        "closure: {required_roles: []}\n"
        "defaults: {executor: local, timeout_minutes: 2, launch_stagger_ms: 0, "
        "max_retries_per_wave: 1}\n"
        "isolation: worktree\n"
        "placement: ssh\n"
        f"ssh:\n  config: {hosts}/ssh_config\n  host_timeout_minutes: {timeout_minutes}\n"
        f"  hosts:\n{rows}"
    )


def agent(agent_id: str, command: str) -> dict[str, object]:
    return {
        "id": agent_id,
        "prompt": f"task {agent_id}",
        "owns": [f"{agent_id}.txt"],
        "executor": {"local": {"command": command}},
    }


def git_repo(repo: Repo, lane: str, agents: list[dict[str, object]]) -> str:
    wave = "agents:\n" + "".join("  - " + json.dumps(a) + "\n" for a in agents)
    repo.lane("main", lane, {1: wave})
    root = repo.root
    (root / ".gitignore").write_text(".wave/\n")
    return commit_base(root)


def most_at_once(lines: list[str]) -> int:
    """The most agents running together, from "start"/"end" lines with nanosecond times."""
    moves = sorted((int(t), 1 if what == "start" else -1) for what, t in map(str.split, lines))
    now = peak = 0
    for _, step in moves:
        now += step
        peak = max(peak, now)
    return peak


def nothing_left(hosts: Path, repo: Path) -> None:
    """No tmux server on a host's socket, no shared connection of the launch's."""
    for socket in hosts.glob("host*/workdir/*/tmux"):
        listed = subprocess.run(["tmux", "-S", str(socket), "ls"], capture_output=True)
        assert listed.returncode != 0, f"a tmux server is left on {socket}"
    control = f"/tmp/wave-ssh-{repo_tag(repo)}-"  # the launch's shared connections
    masters = subprocess.run(["pgrep", "-f", f"ControlPath={control}"], capture_output=True)
    assert masters.returncode != 0, masters.stdout
    assert not list(Path("/tmp").glob(f"wave-ssh-{repo_tag(repo)}-*"))


def test_six_agents_on_two_hosts_two_at_a_time_and_their_work_comes_back(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    record = ssh_hosts / "runs"
    record.mkdir(exist_ok=True)
    work = (
        'log={record}/$WAVE_TEST_HOST; echo "start $(date +%s%N)" >> $log; '
        'printf \'%s\\n\' "$WAVE_TEST_HOST" "$SSH_CONNECTION" > {id}.txt; sleep 1; '
        "git add {id}.txt; git -c user.email=a@b -c user.name=A commit -qm 'agent {id}'; "
        'echo "end $(date +%s%N)" >> $log'
    )
    agents = [agent(i, work.format(record=record, id=i)) for i in "ABCDEF"]
    base = git_repo(tmux_repo, ssh_lane(ssh_hosts), agents)
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    root = tmux_repo.root
    assert sh(root, "git", "rev-parse", "HEAD") == base  # your branch untouched
    hosts_used = set()
    for i in "ABCDEF":
        host, connection = sh(root, "git", "show", f"wave/main/wave-1:{i}.txt").splitlines()
        assert host in ("host1", "host2") and connection.startswith("127.0.0.1 ")
        hosts_used.add(host)
        assert f"agent {i}" in sh(root, "git", "log", "--format=%s", f"wave/main/w1-{i}")
    assert hosts_used == {"host1", "host2"}  # the hosts shared the agents
    for host in ("host1", "host2"):
        lines = (record / host).read_text().splitlines()
        assert 1 <= most_at_once(lines) <= 2, lines  # never more than max_agents
    assert not (root / "A.txt").exists()  # the main checkout untouched
    # Their work is here: no worktree is left on the hosts (their mirrors keep the branches).
    assert not list(ssh_hosts.glob(f"host*/workdir/*/root{root}/.wave/main/worktrees/w1-*"))
    output = (
        tmux_repo.state("main") / "waves" / "wave-1" / "agents" / "A" / "output.log"
    ).read_text()
    assert "[wave] run ended: exit 0" in output  # the host's log came back here
    nothing_left(ssh_hosts, root)


def test_a_host_that_stops_answering_is_told_once_and_its_agents_run_again_on_the_other(
    own_ssh_hosts: Path, tmux_repo: Repo
) -> None:
    # host2's agents wait until its daemon is gone (the test kills it once they started).
    gate = own_ssh_hosts / "host2-started"
    work = (
        'if [ "$WAVE_TEST_HOST" = host2 ] && [ ! -e {gate}.done ]; then touch {gate}; '
        "sleep 60; fi; echo $WAVE_TEST_HOST > {id}.txt; git add {id}.txt; "
        "git -c user.email=a@b -c user.name=A commit -qm 'agent {id}'"
    )
    agents = [agent(i, work.format(gate=gate, id=i)) for i in "AB"]
    git_repo(tmux_repo, ssh_lane(own_ssh_hosts, max_agents=1, timeout_minutes=0.05), agents)
    launch = subprocess.Popen(
        tmux_repo.command("launch", "--lane", "main", "--no-dashboard"),
        cwd=tmux_repo.root,
        env=tmux_repo.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(gate.exists, 60, what="an agent started on host2")
        (own_ssh_hosts / "host2-started.done").touch()  # its retry will not wait
        # The host goes away: its daemon and every connection it holds.
        pid = (own_ssh_hosts / "host2" / "sshd.pid").read_text().split()[0]
        subprocess.run(["pkill", "-KILL", "-P", pid], check=False)
        subprocess.run(["kill", "-KILL", pid], check=True)
        err = launch.communicate(timeout=120)[1]
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
        for socket in own_ssh_hosts.glob("host2/workdir/*/tmux"):  # what ran on the lost host
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], check=False)
    assert launch.returncode == 0, err
    assert err.count("host h2 not answering since") == 1, err
    assert "host-lost: its host h2 stopped answering" in err
    root = tmux_repo.root
    texts = {sh(root, "git", "show", f"wave/main/wave-1:{i}.txt") for i in "AB"}
    assert texts == {"host1"}  # both ended their work on the host that answered
    nothing_left(own_ssh_hosts, root)


def test_hosts_that_share_the_checkout_run_agents_in_it(ssh_hosts: Path, tmux_repo: Repo) -> None:
    lane = ssh_lane(ssh_hosts).replace("max_agents: 2}", "max_agents: 2, shared_path: true}")
    lane = lane.replace("isolation: worktree\n", "")  # one checkout, seen by every host
    git_repo(tmux_repo, lane, [agent(i, f"echo $WAVE_TEST_HOST > {i}.txt") for i in "AB"])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    hosts = {(tmux_repo.root / f"{i}.txt").read_text().strip() for i in "AB"}
    assert hosts == {"host1", "host2"}  # each ran on a host, in this very checkout
    nothing_left(ssh_hosts, tmux_repo.root)
