"""`wave doctor` asks each SSH host of a lane whether it answers and has the lane's CLIs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Repo
from test_ssh_lane_e2e import agent, git_repo, ssh_lane

pytestmark = pytest.mark.e2e


def on_host(hosts: Path, host: str, name: str, script: str) -> Iterator[Path]:
    """A program of ours first on one host's PATH, for one test."""
    program = hosts / host / "bin" / name
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    try:
        yield program
    finally:
        program.unlink()


@pytest.fixture
def claude_on_host1(ssh_hosts: Path) -> Iterator[Path]:
    yield from on_host(ssh_hosts, "host1", "claude", "echo 2.1.197")


def test_doctor_says_which_host_lacks_the_lanes_cli(
    ssh_hosts: Path, claude_on_host1: Path, tmux_repo: Repo
) -> None:
    lane = ssh_lane(ssh_hosts).replace("executor: local", "executor: claude")
    agents = [{"id": "A", "prompt": "t", "owns": ["A.txt"]}]
    git_repo(tmux_repo, lane, agents)
    done = tmux_repo.wave("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["host main/h1"]["ok"], checks["host main/h1"]
    assert "has tmux, git, claude" in checks["host main/h1"]["detail"]
    assert not checks["host main/h2"]["ok"]
    assert checks["host main/h2"]["detail"] == "host h2 lacks claude on its PATH"
    assert "claude" not in checks  # the CLI is the hosts' business, not this machine's
    assert done.returncode == 1  # a host that cannot run the lane's agents blocks a launch


@pytest.fixture
def no_gnu_grep_on_host2(ssh_hosts: Path) -> Iterator[Path]:
    yield from on_host(ssh_hosts, "host2", "grep", "exit 2")  # not GNU grep: no -z


def test_doctor_warns_of_a_host_whose_processes_cannot_be_searched(
    ssh_hosts: Path, no_gnu_grep_on_host2: Path, tmux_repo: Repo
) -> None:
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent("A", "true")])
    done = tmux_repo.wave("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["host main/h1"]["ok"], checks["host main/h1"]
    h2 = checks["host main/h2"]
    assert not h2["ok"] and not h2["blocking"], h2
    assert "what agents leave running there is not ended" in h2["detail"]
    assert done.returncode == 0, done.stdout  # a warning: the launch can go on


def test_a_launch_says_which_host_cannot_have_its_processes_searched(
    ssh_hosts: Path, no_gnu_grep_on_host2: Path, tmux_repo: Repo
) -> None:
    git_repo(tmux_repo, ssh_lane(ssh_hosts), [agent("A", "true")])
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 0, done.stderr
    assert "host h2: what agents leave running there is not ended" in done.stderr
    assert "host h1:" not in done.stderr
