"""`wave attach --new-window`: from inside a person's own tmux, the agent's session opens in a
new window of it (the lane's server nested, TMUX unset for the inner client)."""

from __future__ import annotations

import signal
import subprocess
import uuid

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e


def test_new_window_opens_the_agent_in_the_person_s_own_tmux(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "sleep 60")})
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    mine = f"wave-test-user-{uuid.uuid4().hex[:8]}"  # the person's own tmux server
    user = ["tmux", "-L", mine]
    try:
        wait_for(
            lambda: tmux_repo.agent_dir("main", 1, "A").joinpath("output.log").exists(),
            20,
            what="A to run",
        )
        subprocess.run([*user, "-f", "/dev/null", "new-session", "-d", "-s", "work"], check=True)
        info = subprocess.run(
            [*user, "display-message", "-p", "#{socket_path},#{pid},0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        env = {**tmux_repo.env, "TMUX": info}
        done = subprocess.run(
            tmux_repo.command("attach", "--lane", "main", "A", "--new-window"),
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr

        def windows() -> str:
            return subprocess.run(
                [*user, "list-windows", "-a", "-F", "#{window_name} #{pane_start_command}"],
                capture_output=True,
                text=True,
            ).stdout

        wait_for(lambda: "w1-A" in windows(), 10, what="the new window")
        line = next(x for x in windows().splitlines() if x.startswith("w1-A"))
        assert "env -u TMUX tmux -L" in line and "attach-session -t =w1-A" in line

        # and it really is attached: the lane's server has a client on the agent's session
        # (once the window's tmux client has connected, a moment after the window exists)
        def clients() -> str:
            return subprocess.run(
                [
                    "tmux",
                    "-L",
                    tmux_repo.env["WAVE_TMUX_SOCKET"],
                    "list-clients",
                    "-F",
                    "#{client_session}",
                ],
                capture_output=True,
                text=True,
            ).stdout

        wait_for(lambda: "w1-A" in clients(), 10, what="a client on w1-A")
        outside = {k: v for k, v in tmux_repo.env.items() if k != "TMUX"}
        refused = subprocess.run(
            tmux_repo.command("attach", "--lane", "main", "A", "--new-window"),
            env=outside,
            capture_output=True,
            text=True,
        )
        assert refused.returncode == 2 and "run it inside tmux" in refused.stderr
    finally:
        subprocess.run([*user, "kill-server"], capture_output=True)
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=60)
