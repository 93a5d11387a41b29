"""End to end: a launcher whose output nobody reads any more (`wave launch | head -1`, a
closed terminal) goes on with its wave, its words kept in launcher.log; and a launcher that is
gone is shown as gone by `wave status` and `wave ps`, never as running."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess

import pytest
from helpers import Repo, alive, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

# Each agent waits for the test's go-file, so the launcher has lines to write after its reader
# left; a deadline keeps a broken test from hanging.
WAIT_FOR_GO = (
    'for i in $(seq 600); do [ -e "$WAVE_REPO/go" ] && break; sleep 0.1; done; '
    'echo done > "$WAVE_REPO/$WAVE_AGENT_ID.txt"'
)


def lane(repo: Repo) -> None:
    agents = "".join(local_agent(i, WAIT_FOR_GO) for i in ("A", "B"))
    repo.lane("main", local_lane(), {1: "agents:\n" + agents})


def ps(repo: Repo, *args: str) -> str:
    """`wave ps` (it takes no --repo: it lists every repository's launchers)."""
    argv = repo.command("ps", *args)[:-2]
    done = subprocess.run(argv, env=repo.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def launched(repo: Repo, *agents: str) -> bool:
    seen = {e.get("agent") for e in repo.events("main") if e["event"] == "agent_launched"}
    return set(agents) <= seen


@pytest.mark.parametrize("streams", ["stdout", "stdout and stderr"])
def test_a_launch_piped_into_head_finishes_its_wave(tmux_repo: Repo, streams: str) -> None:
    """`wave launch | head -1` (and `2>&1 | head -1`): the reader closes the pipe after one
    line; the launcher still waits for its agents, completes the wave and exits 0."""
    lane(tmux_repo)
    err_file = tmux_repo.root / "stderr.txt"
    with open(err_file, "w") as err:
        proc = subprocess.Popen(
            tmux_repo.command("launch", "--lane", "main", "--no-dashboard"),
            env=tmux_repo.env,
            cwd=tmux_repo.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if streams == "stdout and stderr" else err,
            stdin=subprocess.DEVNULL,
        )
    try:
        assert proc.stdout is not None
        if streams == "stdout and stderr":
            assert proc.stdout.readline()  # `head -1` read its line
        wait_for(lambda: launched(tmux_repo, "A", "B"), 30, what="both agents launched")
        proc.stdout.close()  # ... and left: every later write meets a closed pipe
        (tmux_repo.root / "go").touch()
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert tmux_repo.wave_state("main", 1) == "completed", tmux_repo.run_state("main")
    assert code == 0
    assert (tmux_repo.root / "A.txt").exists() and (tmux_repo.root / "B.txt").exists()
    log = (tmux_repo.state("main") / "launcher.log").read_text()
    assert '"event": "wave completed"' in log  # its output went on in its log
    stopped = [e for e in tmux_repo.events("main") if e["event"] == "launcher_stopped"]
    assert stopped and stopped[-1]["code"] == 0
    assert "Traceback" not in err_file.read_text()
    status = tmux_repo.wave("status", "--lane", "main")
    assert status.stdout.startswith("lane main: launcher not running"), status.stdout
    assert "wave 1: completed" in status.stdout


def test_a_launcher_killed_9_is_shown_as_not_running(tmux_repo: Repo) -> None:
    """kill -9 leaves run-state.json saying the wave runs: `wave status` (text and JSON) and
    `wave ps` say the launcher is gone, with its pid, and no wave is shown running."""
    lane(tmux_repo)
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: launched(tmux_repo, "A", "B"), 30, what="both agents launched")
        listed = json.loads(ps(tmux_repo, "--json"))["launchers"]
        assert [r["pid"] for r in listed] == [proc.pid]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not alive(proc.pid)

        text = tmux_repo.wave("status", "--lane", "main")
        assert text.returncode == 0, text.stderr
        first = text.stdout.splitlines()[0]
        assert first == f"lane main: launcher not running (pid {proc.pid})", text.stdout
        wave_line = next(ln for ln in text.stdout.splitlines() if ln.startswith("wave 1:"))
        assert not re.match(r"wave 1: running\b", wave_line), wave_line
        assert f"launcher not running (pid {proc.pid})" in wave_line
        assert "wave launch --resume" in wave_line

        data = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        assert data["launcher"]["alive"] is False
        assert data["launcher"]["pid"] == proc.pid
        assert data["waves"][0]["state"] != "running"
        assert data["waves"][0]["recorded_state"] == "running"

        shown = ps(tmux_repo)
        assert f"launcher not running (pid {proc.pid})" in shown, shown
        assert str(proc.pid) not in shown.replace(f"(pid {proc.pid})", "")
        assert json.loads(ps(tmux_repo, "--json"))["launchers"] == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        (tmux_repo.root / "go").touch()
        tmux_repo.wave("stop", "--lane", "main")


def test_a_launcher_whose_terminal_closes_finishes_its_wave(tmux_repo: Repo) -> None:
    """The launcher's controlling terminal goes away (the kernel's SIGHUP, then every write
    failing): its agents live in tmux, so it goes on and ends its wave as usual."""
    lane(tmux_repo)
    master, slave = pty.openpty()
    # `setsid -c`: a session of its own whose controlling terminal is the pty (stdin).
    argv = ["setsid", "-c", *tmux_repo.command("launch", "--lane", "main", "--no-dashboard")]
    proc = subprocess.Popen(
        argv, env=tmux_repo.env, cwd=tmux_repo.root, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    try:
        wait_for(lambda: launched(tmux_repo, "A", "B"), 30, what="both agents launched")
        os.close(master)  # the terminal window closes
        master = -1
        wait_for(
            lambda: "terminal hung up" in (tmux_repo.state("main") / "launcher.log").read_text(),
            30,
            what=f"the launcher to note its terminal hung up ({proc.poll()})",
        )
        assert proc.poll() is None  # still running, its agents too
        (tmux_repo.root / "go").touch()
        code = proc.wait(timeout=90)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0
    assert tmux_repo.wave_state("main", 1) == "completed", tmux_repo.run_state("main")
    assert (tmux_repo.root / "A.txt").exists() and (tmux_repo.root / "B.txt").exists()
