"""End to end: operating a running lane: dashboard, detach, stop, signals, resume (SPEC 3.8, 8)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time

import libtmux
import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

LANE = """
closure: {{required_roles: []}}
defaults: {{executor: local, timeout_minutes: 2, max_retries_per_wave: {retries}, launch_stagger_ms: {stagger}}}
"""
# Each agent records its pid, counts its own runs, announces a phase, then works.
AGENT = (
    'mkdir -p "$WAVE_REPO/runs" "$WAVE_REPO/pids"; echo $$ > "$WAVE_REPO/pids/$WAVE_AGENT_ID"; '
    'n=$(cat "$WAVE_REPO/runs/$WAVE_AGENT_ID" 2>/dev/null || echo 0); '
    'echo $((n + 1)) > "$WAVE_REPO/runs/$WAVE_AGENT_ID"; '
    "echo '[wave-phase] coding'; sleep {seconds}"
)


def lane(repo: Repo, ids: list[str], seconds: float, retries: int = 0, stagger: int = 0) -> None:
    command = json.dumps(AGENT.format(seconds=seconds))
    rows = "\n".join(
        f"  - {{id: {i}, prompt: work, executor: {{local: {{command: {command}}}}}}}" for i in ids
    )
    repo.lane("main", LANE.format(retries=retries, stagger=stagger), {1: f"agents:\n{rows}\n"})


def events(repo: Repo, name: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == name]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has stopped running all the same.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def agent_pids(repo: Repo) -> list[int]:
    return [int(p.read_text()) for p in (repo.root / "pids").iterdir()]


def lock_pid(repo: Repo) -> int:
    return int(json.loads((repo.state("main") / "launcher.lock").read_text())["pid"])


def test_dashboard_in_a_real_pane_shows_every_agent_at_80_and_200_columns(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    ids = ["alpha", "bravo", "charlie", "delta"]
    lane(tmux_repo, ids, seconds=30)
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: len(events(tmux_repo, "agent_launched")) == 4, 20, what="launches")
        command = shlex.join(
            [
                sys.executable,
                "-m",
                "wave_orchestrator",
                "dashboard",
                "--lane",
                "main",
                "--repo",
                str(tmux_repo.root),
            ]
        )
        for width in (80, 200):
            session = server.new_session(f"view{width}", window_command=command, x=width, y=30)
            pane = session.active_window.active_pane
            assert pane is not None

            def shows_all(pane: libtmux.Pane = pane) -> str | None:
                text = "\n".join(pane.capture_pane())
                ok = all(f"{i} " in text for i in ids) and text.count("coding") >= 4
                return text if ok else None

            screen = wait_for(shows_all, 20, what=f"the dashboard at {width} columns")
            assert "lane main  wave 1" in screen and "stages: implementation" in screen
            assert all(len(line) <= width for line in screen.splitlines())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_launch_starts_the_dashboard_session_and_prints_how_to_attach(tmux_repo: Repo) -> None:
    lane(tmux_repo, ["A1"], seconds=30)
    proc = tmux_repo.spawn("launch", "--lane", "main")
    try:
        wait_for(lambda: events(tmux_repo, "agent_launched"), 20, what="launch")
        server = libtmux.Server(socket_name=tmux_repo.env["WAVE_TMUX_SOCKET"])
        assert server.cmd("has-session", "-t", "=dashboard").returncode == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "dashboard: wave attach --lane main --dashboard" in err
    assert server.cmd("has-session", "-t", "=dashboard").returncode != 0  # gone with the launcher


def test_kill_9_then_resume_runs_every_agent_exactly_once(tmux_repo: Repo) -> None:
    ids = [f"A{i}" for i in range(1, 7)]
    lane(tmux_repo, ids, seconds=4, stagger=600)
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    assert "launcher started in tmux session 'launcher'" in started.stdout
    pid = lock_pid(tmux_repo)
    wait_for(lambda: len(events(tmux_repo, "agent_launched")) >= 3, 20, what="three launches")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher to die")
    launched_before = {e["agent"] for e in events(tmux_repo, "agent_launched")}
    assert 3 <= len(launched_before) < 6  # killed in the middle of the wave

    # A plain launch refuses to start the wave over while the dead launcher's agents run.
    plain = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert plain.returncode == 3 and "--resume" in plain.stderr

    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard")
    assert resumed.returncode == 0, resumed.stderr
    counts = {i: int((tmux_repo.root / "runs" / i).read_text()) for i in ids}
    assert counts == dict.fromkeys(ids, 1)
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"
    adopted = {e["agent"] for e in events(tmux_repo, "agent_adopted")}
    assert launched_before <= adopted
    # One metrics record per finished attempt: none lost while no launcher ran, none doubled.
    metrics = tmux_repo.state("main") / "metrics.jsonl"
    records = [json.loads(line)["agent"] for line in metrics.read_text().splitlines()]
    assert sorted(records) == ids


def test_wave_stop_stops_a_detached_launcher_cleanly(tmux_repo: Repo) -> None:
    lane(tmux_repo, ["A1", "A2", "A3"], seconds=60)
    assert tmux_repo.wave("launch", "--lane", "main", "--detach").returncode == 0
    pid = lock_pid(tmux_repo)
    wait_for(lambda: len(events(tmux_repo, "agent_launched")) == 3, 20, what="launches")
    wait_for(lambda: len(list((tmux_repo.root / "pids").glob("*"))) == 3, 10, what="agent pids")

    def waiting() -> dict | None:  # the dashboard file is rewritten within a second
        data = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        return (
            data if sorted(data["launcher"].get("waiting_on", [])) == ["A1", "A2", "A3"] else None
        )

    status = wait_for(waiting, 5, interval=0.2, what="status to list the running agents")
    assert status["launcher"]["alive"] and status["launcher"]["pid"] == pid

    began = time.monotonic()
    stopped = tmux_repo.wave("stop", "--lane", "main")
    assert stopped.returncode == 0, stopped.stderr
    assert time.monotonic() - began < 15
    assert not alive(pid)
    wait_for(lambda: not any(alive(p) for p in agent_pids(tmux_repo)), 5, what="agents to be gone")
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    assert not (tmux_repo.state("main") / "launcher.lock").exists()
    assert events(tmux_repo, "wave_cancelled")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_a_foreground_launcher_cancels_cleanly(
    tmux_repo: Repo, signum: int, code: int
) -> None:
    lane(tmux_repo, ["A1", "A2"], seconds=60)
    proc = tmux_repo.spawn("launch", "--lane", "main")
    wait_for(lambda: len(list((tmux_repo.root / "pids").glob("*"))) == 2, 20, what="agents")
    began = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=15)
    assert time.monotonic() - began < 15
    assert proc.returncode == code
    wait_for(lambda: not any(alive(p) for p in agent_pids(tmux_repo)), 5, what="agents to be gone")
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    assert not (tmux_repo.state("main") / "launcher.lock").exists()
    finished = {e["agent"]: e["status"] for e in events(tmux_repo, "agent_finished")}
    assert finished == {"A1": "cancelled", "A2": "cancelled"}


def test_stop_one_agent_counts_as_cancelled_and_is_not_retried(tmux_repo: Repo) -> None:
    command = json.dumps(AGENT.format(seconds=60))
    quick = json.dumps(AGENT.format(seconds=1))
    tmux_repo.lane(
        "main",
        LANE.format(retries=1, stagger=0),
        {
            1: (
                "agents:\n"
                f"  - {{id: slow, prompt: work, executor: {{local: {{command: {command}}}}}}}\n"
                f"  - {{id: quick, prompt: work, executor: {{local: {{command: {quick}}}}}}}\n"
            )
        },
    )
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: (tmux_repo.root / "pids" / "slow").exists(), 20, what="slow to start")
        stopped = tmux_repo.wave("stop", "--lane", "main", "--agent", "slow")
        assert stopped.returncode == 0, stopped.stderr
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4  # nothing safe to retry: a person stopped the agent
    finished = {e["agent"]: e["status"] for e in events(tmux_repo, "agent_finished")}
    assert finished == {"slow": "cancelled", "quick": "success"}
    assert len(events(tmux_repo, "agent_launched")) == 2  # no relaunch
    assert int((tmux_repo.root / "runs" / "slow").read_text()) == 1
    assert not alive(int((tmux_repo.root / "pids" / "slow").read_text()))


def test_resume_after_wave_stop_finishes_the_wave_without_redoing_work(tmux_repo: Repo) -> None:
    command = json.dumps(AGENT.format(seconds=0.2))
    slow = json.dumps(
        AGENT.format(
            seconds='$([ "$(cat $WAVE_REPO/runs/$WAVE_AGENT_ID)" = 1 ] && echo 60 || echo 0.2)'
        )
    )
    tmux_repo.lane(
        "main",
        LANE.format(retries=0, stagger=0),
        {
            1: (
                "agents:\n"
                f"  - {{id: quick, prompt: work, executor: {{local: {{command: {command}}}}}}}\n"
                f"  - {{id: slow, prompt: work, executor: {{local: {{command: {slow}}}}}}}\n"
            )
        },
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--detach").returncode == 0
    wait_for(
        lambda: [e for e in events(tmux_repo, "agent_finished") if e["agent"] == "quick"],
        20,
        what="quick to finish",
    )
    wait_for(lambda: (tmux_repo.root / "runs" / "slow").exists(), 20, what="slow to start")
    assert tmux_repo.wave("stop", "--lane", "main").returncode == 0
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard")
    assert resumed.returncode == 0, resumed.stderr
    assert int((tmux_repo.root / "runs" / "quick").read_text()) == 1  # its result counted
    assert int((tmux_repo.root / "runs" / "slow").read_text()) == 2  # stopped, so it ran again
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"
    assert (tmux_repo.agent_dir("main", 1, "slow") / "attempt-1.interrupted.log").exists()


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace(tmux_repo: Repo) -> None:
    stubborn = json.dumps(
        'mkdir -p "$WAVE_REPO/pids"; '
        "python3 -c 'import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        'open(os.environ["WAVE_REPO"] + "/pids/A1", "w").write(str(os.getpid())); time.sleep(300)\''
    )
    tmux_repo.lane(
        "main",
        LANE.format(retries=0, stagger=0),
        {
            1: (
                f"agents:\n  - {{id: A1, prompt: work, executor: {{local: {{command: {stubborn}}}}}}}\n"
            )
        },
    )
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: (tmux_repo.root / "pids" / "A1").exists(), 20, what="the agent")
    pid = int((tmux_repo.root / "pids" / "A1").read_text())
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)  # SIGTERM is ignored: the launcher waits out the grace, then SIGKILLs
    assert proc.returncode == 143
    assert not alive(pid)


def test_stopping_an_agent_others_depend_on_blocks_without_a_wasted_retry(tmux_repo: Repo) -> None:
    command = json.dumps(AGENT.format(seconds=60))
    tmux_repo.lane(
        "main",
        LANE.format(retries=1, stagger=0),
        {
            1: (
                "agents:\n"
                f"  - {{id: A1, prompt: work, executor: {{local: {{command: {command}}}}}}}\n"
                f"  - {{id: A2, prompt: after, depends_on: [A1], executor: {{local: {{command: {command}}}}}}}\n"
            )
        },
    )
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: (tmux_repo.root / "pids" / "A1").exists(), 20, what="A1 to start")
        assert tmux_repo.wave("stop", "--lane", "main", "--agent", "A1").returncode == 0
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4
    assert events(tmux_repo, "wave_retry") == []
    assert not (tmux_repo.root / "pids" / "A2").exists()


def test_detach_of_a_lane_done_at_once_reports_its_launcher_not_a_failure(
    tmux_repo: Repo,
) -> None:
    """A lane whose agents end in a moment may finish before `--detach` looks for its
    launcher: it started (its `launcher_started` event says so), so it is no failure."""
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A1", "true")})
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    assert "launcher started in tmux session 'launcher'" in started.stdout
    wait_for(
        lambda: tmux_repo.wave_state("main", 1) == "completed",
        30,
        what="the detached launch to complete wave 1",
    )
