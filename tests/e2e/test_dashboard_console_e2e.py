"""The interactive dashboard once end to end (issue 26 §1): in a real 80x24 tmux pane, against
a running lane, driven with send-keys and read with capture-pane. Its keys reach the real
commands: an answer gets to the agent that waits for it, Enter attaches (the app suspended and
back after the detach), `s` then `y` stops an agent."""

from __future__ import annotations

import shlex
import signal
import subprocess
import time

import libtmux
import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e


def seen_within(condition: object, seconds: float) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (polled; never raises)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


ASK = (
    "ans=$(wave feedback ask --question 'keep the v1 endpoint?' --wait --timeout-seconds 80)"
    ' && echo "answer: $ans" > A.txt'
)
TICK = "for i in $(seq 600); do echo tick-$i; sleep 0.2; done"


def test_a_person_answers_looks_attaches_and_stops_from_the_dashboard(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    waves = {1: "agents:\n" + local_agent("A", ASK) + local_agent("B", TICK)}
    tmux_repo.lane("main", local_lane(), waves)
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    lane_tmux = ["tmux", "-L", tmux_repo.env["WAVE_TMUX_SOCKET"]]
    try:
        command = shlex.join(tmux_repo.command("dashboard", "--lane", "main"))
        env = {k: tmux_repo.env[k] for k in ("PATH", "WAVE_TMUX_SOCKET")}
        started = time.monotonic()
        session = server.new_session(
            "person",
            window_command=f"cd {shlex.quote(str(tmux_repo.root))} && {command}",
            x=80,
            y=24,
            environment=env,
        )
        pane = session.active_window.active_pane
        assert pane is not None

        def screen() -> str:
            return "\n".join(pane.capture_pane())

        def keys(*names: str, literal: bool = False) -> None:
            server.cmd("send-keys", "-t", "=person:", *(["-l"] if literal else []), *names)

        def shows(text: str, what: str, seconds: float = 20) -> str:
            def found() -> str | None:
                now = screen()
                return now if text in now else None

            return wait_for(found, seconds, what=what)

        shows("question", "A's question on the dashboard")
        print(f"on screen with the question after {time.monotonic() - started:.2f} s")
        lines = screen().splitlines()
        assert all(len(line) <= 80 for line in lines) and len(lines) <= 24
        assert "lane main  wave 1" in lines[0]

        keys("a")  # A is the first agent, selected
        shows("keep the v1 endpoint?", "the answer box with the question")
        keys("yes, keep it", literal=True)
        keys("Enter")
        answer = tmux_repo.root / "A.txt"
        wait_for(answer.exists, 30, what="A to get the answer")
        assert answer.read_text().strip() == "answer: yes, keep it"

        keys("j", "l")  # B's live output in the pane
        shows("output of B", "B's output pane")
        shows("tick-", "B's lines in the pane")
        keys("Escape")
        wait_for(lambda: "output of B" not in screen(), 10, what="the pane to close")

        keys("Enter")  # attach: the app suspends, tmux takes the terminal

        def clients() -> str:
            return subprocess.run(
                [*lane_tmux, "list-clients", "-F", "#{client_session}"],
                capture_output=True,
                text=True,
            ).stdout

        wait_for(lambda: "w1-B" in clients(), 20, what="a client attached to B's session")
        keys("C-b", "d")  # the lane's tmux prefix, then detach
        wait_for(lambda: "w1-B" not in clients(), 20, what="the detach")
        shows("lane main  wave 1", "the dashboard back after the detach")
        # Keys typed while the app takes the terminal back may be lost with the terminal's
        # mode change: `?` (idempotent to retry) until the app answers keys again.
        for _ in range(10):
            keys("?")
            if seen_within(lambda: "move between agents" in screen(), 2):
                break
        keys("x")
        wait_for(lambda: "move between agents" not in screen(), 10, what="the keys to close")

        keys("s")  # B is still the one selected
        shows("Stop B?", "the confirm step")
        keys("y")
        wait_for(
            lambda: any(
                ln.split()[:2] == ["B", "cancelled"] for ln in screen().splitlines() if ln.split()
            ),
            40,
            what="B's row to say cancelled",
        )
        assert (tmux_repo.agent_dir("main", 1, "B") / "status.json").exists()
        keys("q")
        wait_for(
            lambda: not server.has_session("person") or "lane main" not in screen(),
            20,
            what="the dashboard to quit",
        )
        assert launcher.wait(timeout=60) is not None
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)
            launcher.wait(timeout=60)
