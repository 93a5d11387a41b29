"""A person's commands for agents on real SSH hosts, from another shell: attach, stop one
agent, status; and a launcher killed mid-wave that comes back with ``--resume``."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Repo, alive, sh, wait_for
from test_ssh_lane_e2e import agent, git_repo, nothing_left, ssh_lane

pytestmark = pytest.mark.e2e


def held(gate: Path, agent_id: str) -> str:
    """An agent that says it started, waits for ``gate`` (60 s at most), then commits."""
    return (
        f"echo started >> {gate}.{agent_id}; echo first line of {agent_id}; "
        f"for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.1; done; "
        f"echo {agent_id} > {agent_id}.txt; git add {agent_id}.txt; "
        f"git -c user.email=a@b -c user.name=A commit -qm 'agent {agent_id}'; "
        f"echo last line of {agent_id}"
    )


def launcher_killed(repo: Repo, running: Callable[[], bool]) -> None:
    """`wave launch --detach`, its launcher killed (-9) once ``running()``: its agents on the
    hosts run on."""
    started = repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    wait_for(running, 60, what="the agents running on their hosts")
    pid = int(json.loads((repo.state("main") / "launcher.lock").read_text())["pid"])
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher to die")


def test_attach_status_and_stop_reach_an_agent_on_its_host(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    gate = tmux_repo.root.parent / "gate"
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent("A", held(gate, "A"))])
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: Path(f"{gate}.A").exists(), 60, what="A started on its host")
        # Its output, printed on the host, is read here (brought back every half second).
        wait_for(
            lambda: "first line of A" in tmux_repo.wave("logs", "A", "--lane", "main").stdout,
            30,
            what="A's output here",
        )
        printed = tmux_repo.wave("attach", "A", "--lane", "main", "--print")
        assert printed.returncode == 0, printed.stderr
        argv = shlex.split(printed.stdout)
        assert argv[0] == "ssh" and "-t" in argv and argv[-1].endswith("attach -t =w1-A")
        # Run without a terminal, it reaches the session's tmux on the host, which wants one.
        tried = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert "not a terminal" in tried.stderr, tried.stderr
        stopped = tmux_repo.wave("stop", "--agent", "A", "--lane", "main")
        assert stopped.returncode == 0, stopped.stderr
        _, said = launch.communicate(timeout=60)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
    assert "A: cancelled" in said, said
    assert tmux_repo.status("main", 1, "A")["outcome"] == "cancelled"
    nothing_left(ssh_hosts, tmux_repo.root)


def test_a_launcher_killed_mid_wave_comes_back_and_follows_its_agents_on_hosts(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    gate = tmux_repo.root.parent / "gate"
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent(i, held(gate, i)) for i in "AB"])
    log_a = tmux_repo.agent_dir("main", 1, "A") / "output.log"
    launcher_killed(  # once both started and A's first line came back here
        tmux_repo,
        lambda: (
            all(Path(f"{gate}.{i}").exists() for i in "AB")
            and log_a.exists()
            and "first line of A" in log_a.read_text()
        ),
    )
    gate.touch()
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard")
    assert resumed.returncode == 0, resumed.stderr
    root = tmux_repo.root
    for i in "AB":
        assert sh(root, "git", "show", f"wave/main/wave-1:{i}.txt") == i  # its work came back
        output = (tmux_repo.agent_dir("main", 1, i) / "output.log").read_text()
        # Each line once: the new launcher went on from where the dead one had brought it.
        assert output.count(f"first line of {i}") == 1 and output.count(f"last line of {i}") == 1
    assert all(Path(f"{gate}.{i}").read_text() == "started\n" for i in "AB")  # never rerun
    diff = tmux_repo.wave("diff", "B", "--lane", "main", "--stat")
    assert diff.returncode == 0 and "B.txt" in diff.stdout, diff.stdout + diff.stderr
    nothing_left(ssh_hosts, root)


def test_an_agent_over_its_budget_on_a_host_is_ended_there(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    lane = ssh_lane(ssh_hosts).replace("timeout_minutes: 2", "timeout_minutes: 0.05")
    lane = lane.replace("max_retries_per_wave: 1", "max_retries_per_wave: 0")
    mark = tmux_repo.root.parent / "slow-started"
    git_repo(tmux_repo, lane, [agent("A", f"echo $$ > {mark}; exec sleep 600")])
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode != 0
    assert tmux_repo.status("main", 1, "A")["outcome"] == "timeout", done.stderr
    pid = int(mark.read_text())
    assert not alive(pid)  # the agent's process on the host was ended, not just forgotten
    nothing_left(ssh_hosts, tmux_repo.root)


def test_what_agents_left_running_on_their_hosts_is_ended_with_them(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    """Processes agents started in sessions of their own (``setsid``: out of their panes'
    groups), one of them deaf to SIGTERM, outlive the agents on the hosts; the wave does not
    end before they are ended, as local agents' would be, though their sessions go first."""
    marks = [tmux_repo.root.parent / f"left-{a}" for a in ("A", "B")]
    deaf = "setsid sh -c 'trap \"\" TERM; sleep 600; :' > /dev/null 2>&1"
    plain = "setsid sleep 600 > /dev/null 2>&1"
    agents = [
        agent("A", f"{deaf} & echo $! > {marks[0]}"),
        agent("B", f"{plain} & echo $! > {marks[1]}"),
    ]
    git_repo(tmux_repo, ssh_lane(ssh_hosts), agents)
    try:
        done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=120)
        assert done.returncode == 0, done.stderr
        assert [tmux_repo.status("main", 1, a)["code"] for a in ("A", "B")] == [0, 0]
        pids = [int(mark.read_text()) for mark in marks]
        assert not any(alive(pid) for pid in pids)  # ended before the launch did
    finally:
        for mark in marks:
            with contextlib.suppress(OSError, ValueError):
                os.killpg(int(mark.read_text()), signal.SIGKILL)  # its group: nothing left
    nothing_left(ssh_hosts, tmux_repo.root)


def test_agents_a_dead_launcher_left_on_hosts_are_refused_a_second_run_and_stopped(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    gate, mark = tmux_repo.root.parent / "gate", tmux_repo.root.parent / "left-running"
    daemon = f"setsid sleep 600 > /dev/null 2>&1 & echo $! > {mark}; "  # out of its group
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent("A", daemon + held(gate, "A"))])
    try:
        launcher_killed(tmux_repo, lambda: Path(f"{gate}.A").exists())
        pid = int(mark.read_text())
        again = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
        assert again.returncode != 0 and "left 1 agent session(s) running" in again.stderr
        stopped = tmux_repo.wave("stop", "--lane", "main")
        assert stopped.returncode == 0, stopped.stderr
        assert "w1-A" in stopped.stdout + stopped.stderr  # named as what it stopped
        assert Path(f"{gate}.A").read_text() == "started\n"  # not run a second time
        assert not alive(pid)  # what it started outside its group was ended with it
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(mark.read_text()), signal.SIGKILL)  # nothing left if it failed
    nothing_left(ssh_hosts, tmux_repo.root)


def test_an_agent_on_a_host_posts_to_the_coordination_log_as_itself(
    ssh_hosts: Path, tmux_repo: Repo
) -> None:
    work = (
        "wave coord post --kind decision --summary 'posted from a host' > posted.txt && "
        "wave coord post --kind decision --summary forged --agent B; echo $? > forged.txt; "
        "wave desk mine; echo $? > desk.txt; "
        "wave coord inbox > /dev/null; echo $? > inbox.txt; "
        "wave feedback ask --question 'which way, from a host?' > asked.txt; "
        "git add posted.txt forged.txt desk.txt inbox.txt asked.txt; "
        "git -c user.email=a@b -c user.name=A commit -qm 'agent A'"
    )
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent("A", work), agent("B", "true")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    log = tmux_repo.state("main") / "coordination" / "wave-1.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    posted = [r for r in records if r.get("summary") == "posted from a host"]
    assert [r["agent"] for r in posted] == ["A"]  # merged here, under its own name
    said = sh(tmux_repo.root, "git", "show", "wave/main/wave-1:posted.txt")
    assert said == posted[0]["id"]  # the id the command printed on the host
    forged = [r["agent"] for r in records if r.get("summary") == "forged"]
    assert "B" not in forged  # `--agent B` or not: an agent on a host speaks for itself only
    assert sh(tmux_repo.root, "git", "show", "wave/main/wave-1:desk.txt") == "2"  # not on hosts
    assert sh(tmux_repo.root, "git", "show", "wave/main/wave-1:inbox.txt") == "0"
    asked = sh(tmux_repo.root, "git", "show", "wave/main/wave-1:asked.txt")
    listed = tmux_repo.wave("feedback", "list", "--lane", "main").stdout
    assert asked and asked in listed and "which way, from a host?" in listed
    nothing_left(ssh_hosts, tmux_repo.root)
