"""Fault class 4: processes that outlive their agent. However an agent ends (success, its
session gone, its wrapper dead without a status), its whole process group is ended as a timeout
ends it (SIGTERM, grace, SIGKILL), and a relaunch never runs beside the old attempt (issue 10)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Repo, alive, local_lane, wait_for

pytestmark = pytest.mark.e2e

# Leaves a child that ignores SIGHUP (what `nohup` does) and records its pid.
NOHUP_CHILD = 'nohup sleep 1000 >/dev/null 2>&1 & echo $! > "$WAVE_REPO/left.pid"; '


def lane(repo: Repo, command: str, retries: int = 0) -> None:
    repo.lane(
        "main",
        local_lane(retries=retries),
        {
            1: f"agents:\n  - {{id: A1, prompt: p, executor: {{local: {{command: {json.dumps(command)}}}}}}}\n"
        },
    )


def pid_file(repo: Repo, name: str) -> int:
    path = repo.root / name
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), what=name))


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test records; any still alive at its end is killed (and the test failed)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def gone_soon(pid: int) -> bool:
    """The launcher has exited: its leftovers must already be gone (a moment for the kernel)."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: not alive(pid), seconds=2, what=f"pid {pid} to end")
    return not alive(pid)


def test_success_does_not_leave_a_nohup_child(tmux_repo: Repo, leftovers: list[int]) -> None:
    lane(tmux_repo, NOHUP_CHILD + "exit 0")
    result = tmux_repo.wave("launch", "--lane", "main")
    leftovers.append(pid_file(tmux_repo, "left.pid"))
    assert result.returncode == 0, result.stderr
    assert gone_soon(leftovers[0]), "a successful agent's nohup child outlived the wave"


def test_a_child_ignoring_hup_and_term_is_killed(tmux_repo: Repo, leftovers: list[int]) -> None:
    stubborn = (
        "(trap '' HUP TERM; exec sleep 1000) >/dev/null 2>&1 & echo $! > \"$WAVE_REPO/left.pid\"; "
    )
    lane(tmux_repo, stubborn + "exit 0")
    result = tmux_repo.wave("launch", "--lane", "main")
    leftovers.append(pid_file(tmux_repo, "left.pid"))
    assert result.returncode == 0, result.stderr
    assert gone_soon(leftovers[0]), "a child ignoring SIGTERM outlived the wave"


def test_session_missing_ends_the_group(
    tmux_repo: Repo, leftovers: list[int], tmp_path: Path
) -> None:
    lane(tmux_repo, NOHUP_CHILD + "sleep 1000")
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        leftovers.append(pid_file(tmux_repo, "left.pid"))
        socket = tmux_repo.env["WAVE_TMUX_SOCKET"]
        subprocess.run(["tmux", "-L", socket, "kill-session", "-t", "=w1-A1"], check=True)
        assert launcher.wait(timeout=60) == 1
    finally:
        if launcher.poll() is None:
            launcher.kill()
    finished = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert finished[-1]["status"] == "session-missing"
    assert gone_soon(leftovers[0]), "the agent's child outlived its vanished session"


def test_wrapper_killed_without_status_ends_the_group(
    tmux_repo: Repo, leftovers: list[int]
) -> None:
    lane(tmux_repo, NOHUP_CHILD + 'echo $$ > "$WAVE_REPO/cli.pid"; sleep 1000')
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        leftovers.append(pid_file(tmux_repo, "left.pid"))
        leftovers.append(pid_file(tmux_repo, "cli.pid"))
        socket = tmux_repo.env["WAVE_TMUX_SOCKET"]
        panes = subprocess.run(
            ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{session_name} #{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        wrapper = next(line.split()[1] for line in panes if line.startswith("w1-A1 "))
        os.kill(int(wrapper), signal.SIGKILL)
        assert launcher.wait(timeout=60) == 1
    finally:
        if launcher.poll() is None:
            launcher.kill()
    finished = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert "without writing a status file" in finished[-1]["detail"]
    for pid in leftovers:
        assert gone_soon(pid), f"pid {pid} outlived its dead wrapper"


def test_a_relaunch_never_runs_beside_the_old_attempt(
    tmux_repo: Repo, leftovers: list[int]
) -> None:
    # Attempt 1 leaves a child that ignores SIGHUP and fails; attempt 2 looks for that child.
    command = (
        'if [ "$WAVE_ATTEMPT" = 1 ]; then ' + NOHUP_CHILD + "exit 1; fi; "
        'p=$(cat "$WAVE_REPO/left.pid"); '
        "if [ -e /proc/$p ] && ! grep -q ') Z' /proc/$p/stat; then s=alive; else s=gone; fi; "
        'echo $s > "$WAVE_REPO/seen"'
    )
    lane(tmux_repo, command, retries=1)
    result = tmux_repo.wave("launch", "--lane", "main")
    leftovers.append(pid_file(tmux_repo, "left.pid"))
    assert result.returncode == 0, result.stderr
    assert (tmux_repo.root / "seen").read_text().strip() == "gone"


def test_wave_stop_after_a_dead_launcher_ends_a_finished_agents_leftovers(
    tmux_repo: Repo, leftovers: list[int]
) -> None:
    wait_go = 'while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.1; done; '
    done = json.dumps(wait_go + NOHUP_CHILD + "exit 0")
    busy = json.dumps('echo $$ > "$WAVE_REPO/busy.pid"; sleep 1000')
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n"
            f"  - {{id: A1, prompt: p, executor: {{local: {{command: {done}}}}}}}\n"
            f"  - {{id: A2, prompt: p, executor: {{local: {{command: {busy}}}}}}}\n"
        },
    )
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        leftovers.append(pid_file(tmux_repo, "busy.pid"))
        launcher.kill()  # the launcher dies: nobody watches A1 finish
        launcher.wait(timeout=10)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    (tmux_repo.root / "go").touch()
    leftovers.append(pid_file(tmux_repo, "left.pid"))
    status = tmux_repo.agent_dir("main", 1, "A1") / "status.json"
    wait_for(status.exists, what="A1 to finish")
    assert tmux_repo.wave("stop", "--lane", "main").returncode == 0
    for pid in leftovers:
        assert gone_soon(pid), f"pid {pid} outlived `wave stop`"


def test_resume_ends_what_an_agent_that_finished_unwatched_left(
    tmux_repo: Repo, leftovers: list[int]
) -> None:
    wait_go = 'while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.1; done; '
    lane(tmux_repo, wait_go + NOHUP_CHILD + "exit 0")
    launcher = tmux_repo.spawn("launch", "--lane", "main")
    try:
        # its wrapper runs (launch.json is written before its session starts)
        started = tmux_repo.agent_dir("main", 1, "A1") / "output.log"
        wait_for(started.exists, what="A1 to start")
        launcher.kill()  # the launcher dies: nobody watches A1 finish
        launcher.wait(timeout=10)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    (tmux_repo.root / "go").touch()
    leftovers.append(pid_file(tmux_repo, "left.pid"))
    wait_for((tmux_repo.agent_dir("main", 1, "A1") / "status.json").exists, what="A1 to end")
    result = tmux_repo.wave("launch", "--lane", "main", "--resume")
    assert result.returncode == 0, result.stderr
    assert gone_soon(leftovers[0]), "an adopted agent's leftover outlived the resumed wave"
