"""The console's lane keys and views once end to end: a real `wave dashboard` in a 160x40 pane
of a private tmux server, driven with send-keys and read with capture-pane. `G` then `y`
starts the lane (the cli's `wave launch --detach`), `p` previews the agent's output beside
the table, `o` sorts, `e`, `O` and `/` show and search the events and the launcher's log,
`S` then `y` stops the lane, `L` switches the console to another lane."""

from __future__ import annotations

import shlex

import libtmux
import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

TICK = "for i in $(seq 250); do echo tick-$i; sleep 0.2; done"


def test_a_person_starts_watches_sorts_stops_and_switches_lanes_from_the_console(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("B", TICK)})
    tmux_repo.lane("other", local_lane(), {1: "agents:\n" + local_agent("C", "true")})
    try:
        command = shlex.join(tmux_repo.command("dashboard", "--lane", "main"))
        env = {k: tmux_repo.env[k] for k in ("PATH", "WAVE_TMUX_SOCKET")}
        session = server.new_session(
            "person",
            # COLUMNS and LINES, if the tests run with them, would fix the console's size
            window_command=f"unset COLUMNS LINES; cd {shlex.quote(str(tmux_repo.root))} && {command}",
            x=160,
            y=40,
            environment=env,
        )
        pane = session.active_window.active_pane
        assert pane is not None

        def screen() -> str:
            return "\n".join(pane.capture_pane())

        def keys(*names: str, literal: bool = False) -> None:
            server.cmd("send-keys", "-t", "=person:", *(["-l"] if literal else []), *names)

        def shows(text: str, what: str, seconds: float = 30) -> str:
            def found() -> str | None:
                now = screen()
                return now if text in now else None

            return wait_for(found, seconds, what=what)

        shows("lane main: no wave has started yet", "the console before any wave")
        keys("G")
        shows("Start lane main?", "the confirm step of the start")
        keys("y")
        shows("lane main  wave 1", "the wave the console's start launched")
        wait_for(lambda: tmux_repo.events("main"), 30, what="the launcher's first events")

        keys("p")  # the preview, right of the table (160 columns)
        shows("output of B (p hides)", "the preview's title")
        shown = shows("tick-", "B's output in the preview")
        row = next(line for line in shown.splitlines() if "tick-" in line)
        assert row.index("tick-") > 60, row  # beside the table, not under it

        keys("o")
        shows("sorted by state", "the sort named under the header")

        keys("e")
        shows("events of lane main", "the event timeline")
        shows("wave_started", "the wave's start in the timeline")
        keys("/", literal=True)
        shows("Find in the pane", "the find box")
        keys("agent_launched", literal=True)
        keys("Enter")
        wait_for(lambda: "Find in the pane" not in screen(), 10, what="the find box closed")
        assert "not found" not in screen()
        keys("O")
        shows("the launcher's log of lane main", "the launcher's log")
        keys("Escape")  # and its pane closed before the next key (ESC then S would be Alt-S)
        wait_for(lambda: "launcher's log" not in screen(), 10, what="the pane to close")

        keys("S")
        shows("Stop lane main?", "the confirm step of the stop")
        keys("y")
        shows("no launcher runs lane main", "the console to see the lane stopped", 60)

        keys("L")
        shows("show which lane?", "the lanes")
        listed = shows("other", "lane other in the list")
        assert "never run" in listed
        keys("Down", "Enter")
        shows("lane other: no wave has started yet", "the console on lane other")
        keys("q")
        wait_for(
            lambda: not server.has_session("person") or "lane other" not in screen(),
            20,
            what="the console to quit",
        )
    finally:
        tmux_repo.wave("stop", "--lane", "main")
