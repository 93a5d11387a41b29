"""End to end in a real tmux pane: after Enter attached the console to an agent's session and
the person detached, quitting the console leaves a clean terminal (tmux's own
``[detached (from session …)]`` line never reaches it)."""

from __future__ import annotations

import shlex
import signal
import subprocess
import time

import libtmux
import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

TICK = "for i in $(seq 600); do echo tick-$i; sleep 0.2; done"
ENDED = "console-ended"


def test_quitting_after_an_attach_leaves_no_detach_line(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("B", TICK)})
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    lane_tmux = ["tmux", "-L", tmux_repo.env["WAVE_TMUX_SOCKET"]]
    try:
        console = shlex.join(tmux_repo.command("dashboard", "--lane", "main"))
        env = {k: tmux_repo.env[k] for k in ("PATH", "WAVE_TMUX_SOCKET")}
        where = shlex.quote(str(tmux_repo.root))
        session = server.new_session(
            "person",
            window_command=f"cd {where} && {console}; echo {ENDED}; sleep 60",
            x=100,
            y=30,
            environment=env,
        )
        pane = session.active_window.active_pane
        assert pane is not None

        def terminal() -> str:
            """All the pane shows and scrolled past: what the person's terminal holds."""
            return "\n".join(server.cmd("capture-pane", "-p", "-S", "-", "-t", "=person:").stdout)

        def clients() -> str:
            listed = [*lane_tmux, "list-clients", "-F", "#{client_session}"]
            return subprocess.run(listed, capture_output=True, text=True).stdout

        def keys(*names: str) -> None:
            server.cmd("send-keys", "-t", "=person:", *names)

        wait_for(lambda: "tick-" in terminal(), 30, what="the console with B's output")
        keys("Enter")  # B, the only agent, is selected: attach
        wait_for(lambda: "w1-B" in clients(), 20, what="a client attached to B's session")
        subprocess.run([*lane_tmux, "detach-client", "-s", "=w1-B"], check=True)
        wait_for(lambda: "w1-B" not in clients(), 20, what="the detach")
        wait_for(lambda: "lane main  wave 1" in terminal(), 20, what="the console back")
        deadline = time.monotonic() + 30
        while ENDED not in terminal():  # a key typed while the app takes the terminal back
            assert time.monotonic() < deadline, "the console never quit"  # may be lost
            keys("q")
            time.sleep(0.5)
        left = terminal()
        assert "[detached" not in left, left
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)
            launcher.wait(timeout=60)
