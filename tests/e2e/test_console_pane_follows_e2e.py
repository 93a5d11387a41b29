"""In a real 80x24 tmux pane: `l` on an agent whose log is longer than the pane and still
growing shows the log's end and keeps following it (a pane laid out at its first show used
to stay at the top: the end was asked for before the terminal's size was known)."""

from __future__ import annotations

import shlex
import threading
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, wait_for

pytestmark = pytest.mark.e2e

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"


def test_l_shows_the_end_of_a_growing_log_and_follows_it(
    repo: Repo, server: libtmux.Server
) -> None:
    repo.lane("main", "defaults: {executor: local}\n", {3: "agents:\n  - {id: api, prompt: p}\n"})
    wave = repo.state("main") / "waves" / "wave-3"
    wave.mkdir(parents=True)
    (wave / "dashboard.json").write_text(FIXTURE.read_text())
    log = wave / "agents" / "api" / "output.log"
    log.parent.mkdir(parents=True)
    long = "demo agent store starting: " + "a long first line " * 6 + "\n"
    log.write_text(long + "".join(f"step {i}/400\n" for i in range(1, 31)))
    written = [30]
    stop = threading.Event()

    def feed() -> None:
        while not stop.wait(0.2) and written[0] < 400:
            written[0] += 1
            with log.open("a") as fh:
                fh.write(f"step {written[0]}/400\n")

    command = shlex.join(repo.command("dashboard", "--lane", "main"))
    session = server.new_session(
        "person",
        window_command=f"cd {shlex.quote(str(repo.root))} && unset COLUMNS LINES && {command}",
        x=80,
        y=24,
        environment={"PATH": repo.env["PATH"]},
    )
    pane = session.active_window.active_pane
    assert pane is not None
    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_for(lambda: "agent" in "\n".join(pane.capture_pane()), 30, what="the console")
        feeder.start()
        pane.send_keys("l", enter=False)

        def near_the_end() -> bool:
            shown = "\n".join(pane.capture_pane())
            return f"step {written[0] - 3}/400" in shown or f"step {written[0] - 2}/400" in shown

        wait_for(near_the_end, 20, what="the pane at the log's end")
        seen = written[0]
        wait_for(lambda: written[0] > seen + 10, 20, what="more lines written")
        wait_for(near_the_end, 20, what="the pane still at the end")
    finally:
        stop.set()
        pane.send_keys("q", enter=False)
