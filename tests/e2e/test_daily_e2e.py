"""End to end on real tmux (issue 14): `wave ps` across repositories, `wave logs -f` waiting
for an agent that has not started, `wave logs --launcher -f` of a detached launcher."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e


def ps(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """`wave ps` takes no --repo: it lists every repository's launchers."""
    argv = repo.command("ps", *args)[:-2]
    return subprocess.run(argv, env=repo.env, capture_output=True, text=True, timeout=60)


def test_ps_logs_follow_and_launcher_logs(tmux_repo: Repo) -> None:
    gate = tmux_repo.root / "go"
    first = f"echo first-start; while [ ! -e {gate} ]; do sleep 0.1; done; echo first-done"
    second = "echo second-says-hello; sleep 0.5; echo second-done"
    waves = {1: "agents:\n" + local_agent("A", first) + local_agent("B", second, depends_on=["A"])}
    tmux_repo.lane("main", local_lane(), waves)
    # A registry entry of a launcher that died without unregistering: `wave ps` prunes it.
    registry = os.path.join(tmux_repo.env["XDG_STATE_HOME"], "wave", "launchers")
    os.makedirs(registry, exist_ok=True)
    dead = os.path.join(registry, "999999.json")
    with open(dead, "w") as fh:
        json.dump({"pid": 999999, "repo": "/gone", "lane": "x", "state_dir": "/gone/.wave/x"}, fh)

    started = tmux_repo.wave("launch", "--lane", "main", "--detach", "--no-dashboard")
    assert started.returncode == 0, started.stderr
    follower = tmux_repo.spawn("logs", "B", "--lane", "main", "-f")
    launcher_logs = tmux_repo.spawn("logs", "--launcher", "--lane", "main", "-f")
    try:

        def listed() -> list[dict[str, Any]]:
            rows = json.loads(ps(tmux_repo, "--json").stdout)["launchers"]
            return [r for r in rows if r["agents_running"] >= 1] if rows else []

        (row,) = wait_for(listed, 20, interval=0.2, what="wave ps to list the launcher")
        assert (row["repo"], row["lane"], row["wave"]) == (str(tmux_repo.root), "main", 1)
        assert row["socket"] == tmux_repo.env["WAVE_TMUX_SOCKET"] and row["started_at"]
        assert not os.path.exists(dead)  # pruned
        table = ps(tmux_repo).stdout
        assert "main" in table and str(row["pid"]) in table

        gate.write_text("go")  # A ends, B starts, `logs -f` shows B and returns when B ends
        out, err = follower.communicate(timeout=60)
        assert follower.returncode == 0, err
        assert "second-says-hello" in out and "second-done" in out
        assert err.count("waiting for agent B of wave 1 to start") == 1

        out, err = launcher_logs.communicate(timeout=60)
        assert launcher_logs.returncode == 0, err
        assert "wave 1: completed" in out
    finally:
        for proc in (follower, launcher_logs):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        gate.write_text("go")
    wait_for(
        lambda: json.loads(ps(tmux_repo, "--json").stdout)["launchers"] == [],
        20,
        interval=0.2,
        what="the launcher to leave the registry",
    )


def test_logs_of_an_unknown_agent_and_of_one_not_started(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    ghost = repo.wave("logs", "ghost", "--lane", "main")
    assert ghost.returncode == 2 and "no agent 'ghost' in lane 'main'" in ghost.stderr
    early = repo.wave("logs", "A", "--lane", "main")
    assert early.returncode == 2 and "has not run yet (wait for it with -f)" in early.stderr
    none = repo.wave("logs", "--launcher", "--lane", "main")
    assert none.returncode == 2 and "only a detached launcher" in none.stderr


def test_ps_with_no_launcher(repo: Repo) -> None:
    done = ps(repo)
    assert done.returncode == 0 and done.stdout.strip() == "no launcher is running"


def test_launch_output_heartbeat_one_failure_summary_and_colour(tmux_repo: Repo) -> None:
    waves = {
        1: "agents:\n" + local_agent("slow", "sleep 4; echo ok"),
        2: "agents:\n" + local_agent("bad", "echo broken; exit 3"),
    }
    tmux_repo.lane("main", local_lane(), waves)
    tmux_repo.env["WAVE_HEARTBEAT_SECONDS"] = "1"
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--color", "always")
    assert done.returncode == 1
    beats = [line for line in done.stderr.splitlines() if "longest slow" in line]
    assert beats and "wave 1: 1 running, 0 done, longest slow 0m0" in beats[0]
    assert len(beats) <= 5  # at most one a second here (30 s by default), not one per refresh
    assert "\033[32mwave 1: completed after 1 attempt(s)\033[0m" in done.stdout
    assert "failed after" not in done.stdout  # the summary is on stderr, once
    assert done.stderr.count("wave 2 failed after 1 attempt(s)") == 1
    assert "\033[31mwave 2 failed" in done.stderr

    plain = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--start-wave", "2")
    assert "\033[" not in plain.stdout + plain.stderr  # not a terminal: no colour


def test_status_after_kill_9_shows_live_agents_still_running(tmux_repo: Repo) -> None:
    import signal
    import time

    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "sleep 30")})
    assert tmux_repo.wave("launch", "--lane", "main", "--detach", "--no-dashboard").returncode == 0

    def agent() -> dict[str, Any] | None:
        data = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        waves = data["waves"]
        return waves[0]["agents"][0] if waves and waves[0]["agents"] else None

    wait_for(lambda: (agent() or {}).get("state") == "running", 20, what="A running")
    pid = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)["launcher"]["pid"]
    os.kill(pid, signal.SIGKILL)
    try:
        first = wait_for(
            lambda: (a := agent()) and a["state"] == "running (no launcher)" and a,
            20,
            interval=0.2,
            what="status to show A running without its launcher",
        )
        time.sleep(1.2)  # the elapsed time keeps counting (not frozen at the kill)
        second = agent()
        assert second is not None and second["elapsed_ms"] >= first["elapsed_ms"] + 1000
        text = tmux_repo.wave("status", "--lane", "main").stdout
        assert "running (no launcher)" in text and "orphaned" not in text
    finally:
        tmux_repo.wave("stop", "--lane", "main")
