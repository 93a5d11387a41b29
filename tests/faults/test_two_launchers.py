"""Fault class 10: two launchers on one lane. The lane lock is found whatever the state dir
(``WAVE_STATE_DIR``, an edited ``state_dir``), deleting its file frees nothing, a forged file
cannot point `wave stop` at another process, and `wave stop` and `--resume` agree through
the lock, so a stop never kills agents that a resumed launcher has just adopted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, alive, wait_for

pytestmark = pytest.mark.e2e

LANE = """
closure: {required_roles: []}
defaults: {executor: local, timeout_minutes: 2, max_retries_per_wave: 0, launch_stagger_ms: 0}
"""
# Records its pid and its runs; sleeps on its first run only, so a relaunch ends at once.
AGENT = (
    'mkdir -p "$WAVE_REPO/pids" "$WAVE_REPO/runs"; echo $$ > "$WAVE_REPO/pids/$WAVE_AGENT_ID"; '
    'first=1; [ -e "$WAVE_REPO/runs/$WAVE_AGENT_ID" ] && first=0; '
    'echo x >> "$WAVE_REPO/runs/$WAVE_AGENT_ID"; if [ $first = 1 ]; then sleep {seconds}; fi'
)
# Ignores SIGTERM, so whoever stops it spends the whole grace period doing so.
STUBBORN = (
    'mkdir -p "$WAVE_REPO/pids"; '
    "python3 -c 'import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "signal.signal(signal.SIGHUP, signal.SIG_IGN); "
    'open(os.environ["WAVE_REPO"] + "/pids/" + os.environ["WAVE_AGENT_ID"], "w")'
    ".write(str(os.getpid())); time.sleep(300)'"
)


def lane(repo: Repo, command: str, ids: tuple[str, ...] = ("A1", "A2")) -> None:
    rows = "".join(
        f"  - {{id: {i}, prompt: work, executor: {{local: {{command: {json.dumps(command)}}}}}}}\n"
        for i in ids
    )
    repo.lane("main", LANE, {1: "agents:\n" + rows})


def pids(repo: Repo) -> dict[str, int]:
    folder = repo.root / "pids"
    if not folder.is_dir():
        return {}
    return {p.name: int(p.read_text()) for p in folder.iterdir() if p.read_text().strip()}


def spawn(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        repo.command(*args),
        env={**repo.env, **(env or {})},
        cwd=repo.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_stop_and_status_find_a_launcher_that_keeps_its_state_elsewhere(
    tmux_repo: Repo, server: libtmux.Server, tmp_path: Path
) -> None:
    lane(tmux_repo, AGENT.format(seconds=60))
    elsewhere = tmp_path / "elsewhere"
    proc = spawn(
        tmux_repo,
        "launch",
        "--lane",
        "main",
        "--no-dashboard",
        env={"WAVE_STATE_DIR": str(elsewhere)},
    )
    try:
        wait_for(lambda: len(pids(tmux_repo)) == 2, 20, what="both agents running")
        status = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        assert status["launcher"]["alive"] and status["launcher"]["pid"] == proc.pid
        assert status["state_dir"] == str(elsewhere)  # shown from where the launcher writes
        # An edited state_dir does not hide it either: a second launch is refused.
        (tmux_repo.root / "lanes/main/lane.yaml").write_text(LANE + "state_dir: other\n")
        second = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=30)
        assert second.returncode == 3 and f"pid {proc.pid}" in second.stderr
        assert f"state dir {elsewhere}" in second.stderr
        stopped = tmux_repo.wave("stop", "--lane", "main", timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the launcher of lane main (pid {proc.pid})" in stopped.stdout
        proc.wait(timeout=30)
        assert proc.returncode == 143  # the launcher stopped its own agents, cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
    state = json.loads((elsewhere / "run-state.json").read_text())
    assert state["waves"]["1"]["state"] == "cancelled"
    assert not any(alive(p) for p in pids(tmux_repo).values())
    wait_for(lambda: not server.sessions, 15, what="no session left")


def test_deleting_the_lock_file_does_not_let_a_second_launcher_start(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    lane(tmux_repo, AGENT.format(seconds=60))
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: len(pids(tmux_repo)) == 2, 20, what="both agents running")
        (tmux_repo.state("main") / "launcher.lock").unlink()
        for args in (("--resume",), ()):
            second = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", *args, timeout=30)
            assert second.returncode == 3, second.stderr
            assert f"another launcher is active on lane 'main' (pid {proc.pid}" in second.stderr
        status = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        assert status["launcher"]["alive"] and status["launcher"]["pid"] == proc.pid
        runs = tmux_repo.root / "runs"
        assert all((runs / i).read_text() == "x\n" for i in ("A1", "A2"))  # nothing ran twice
        assert tmux_repo.wave("stop", "--lane", "main", timeout=60).returncode == 0
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: not server.sessions, 15, what="no session left")


def test_a_forged_lock_file_cannot_point_stop_at_another_process(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    lane(tmux_repo, AGENT.format(seconds=60), ids=("A1",))
    innocent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: len(pids(tmux_repo)) == 1, 20, what="the agent running")
        lock = tmux_repo.state("main") / "launcher.lock"
        lock.write_text(json.dumps({"pid": innocent.pid, "started_at": "forged"}))
        stopped = tmux_repo.wave("stop", "--lane", "main", timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        assert f"(pid {proc.pid})" in stopped.stdout
        proc.wait(timeout=30)
        assert innocent.poll() is None  # the process the file named was left alone
    finally:
        innocent.kill()
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: not server.sessions, 15, what="no session left")


def test_stop_holds_the_lock_while_it_stops_orphans_so_resume_cannot_adopt_them(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    lane(tmux_repo, STUBBORN, ids=("A1",))
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: len(pids(tmux_repo)) == 1, 20, what="the agent running")
    agent = pids(tmux_repo)["A1"]
    launcher.send_signal(signal.SIGKILL)  # a dead launcher leaves its agent running
    launcher.wait(timeout=10)
    stop = tmux_repo.spawn("stop", "--lane", "main")  # spends the grace on the stubborn agent
    lock = tmux_repo.state("main") / "launcher.lock"
    wait_for(
        lambda: lock.exists() and json.loads(lock.read_text() or "{}").get("command") == "stop",
        15,
        what="wave stop holding the lock",
    )
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard", timeout=30)
    assert resumed.returncode == 3, resumed.stderr
    assert f"`wave stop` (pid {stop.pid}) is stopping lane 'main'" in resumed.stderr
    assert not any(e["event"] == "agent_adopted" for e in tmux_repo.events("main"))
    out, err = stop.communicate(timeout=60)
    assert stop.returncode == 0, err
    assert "stopped 1 agent session(s) it left: w1-A1" in out
    assert not alive(agent)
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    assert not lock.exists()
    wait_for(lambda: not server.sessions, 15, what="no session left")


def test_stop_racing_a_resume_never_leaves_an_adopted_agent_dead_under_a_live_launcher(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    """Whoever wins the lock, the end is consistent: no launcher left, no agent left
    running, the wave not recorded running, and no adopted agent was killed behind its
    launcher's back (which would show as session-missing or a failed wave)."""
    lane(tmux_repo, AGENT.format(seconds=60))
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: len(pids(tmux_repo)) == 2, 20, what="both agents running")
    launcher.send_signal(signal.SIGKILL)
    launcher.wait(timeout=10)
    resume = tmux_repo.spawn("launch", "--lane", "main", "--resume", "--no-dashboard")
    stop = tmux_repo.spawn("stop", "--lane", "main")
    stop_out, stop_err = stop.communicate(timeout=90)
    if "no launcher was alive" not in stop_out and resume.poll() is None:
        pytest.fail(f"stop returned while the resumed launcher runs: {stop_out} {stop_err}")
    _, resume_err = resume.communicate(timeout=90)
    assert stop.returncode == 0 and "Traceback" not in stop_err + resume_err
    assert resume.returncode in (3, 143, 0), resume_err
    finished = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert not any(e.get("status") == "session-missing" for e in finished), finished
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] in ("cancelled", "completed")
    assert not any(alive(p) for p in pids(tmux_repo).values())
    wait_for(lambda: not server.sessions, 15, what="no session left")


def test_a_resume_stopped_before_its_wave_began_ends_what_the_dead_launcher_left(
    tmux_repo: Repo, server: libtmux.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race above, made certain: `wave stop` reaches a resumed launcher after it took the
    lane but before its wave began. The dead launcher's agents are stopped and its wave is
    recorded cancelled, not left running with nobody following it."""
    from wave_orchestrator.runtime.launch.launcher import Launcher, LaunchOptions, prepare_lane

    lane(tmux_repo, AGENT.format(seconds=60))
    first = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: len(pids(tmux_repo)) == 2, 20, what="both agents running")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    for key in ("WAVE_TMUX_SOCKET", "PATH"):
        monkeypatch.setenv(key, tmux_repo.env[key])
    opts = LaunchOptions(lane="main", resume=True, no_dashboard=True, quiet=True)
    launcher = Launcher(prepare_lane(tmux_repo.root, opts), opts)
    launcher.stop.set()  # the signal came before the first wave
    launcher.run()
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    wait_for(lambda: not any(alive(p) for p in pids(tmux_repo).values()), 15, what="agents ended")
