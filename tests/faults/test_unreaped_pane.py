"""tmux 3.3 can miss the SIGCHLD of a pane's process: the pane shows dead (its output
closed) but its exit status never comes, until another child of the server ends. An agent
whose wrapper was killed would then end with no exit code. Reading the panes, wave makes
tmux reap (one ``run-shell true``) whenever a dead pane has no status yet, and reads again."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import libtmux
import pytest
from helpers import wait_for

from wave_orchestrator.placement.tmux import TmuxServer

pytestmark = pytest.mark.e2e

LISTED = "A1\t0\t\t\t41\t7\nA2\t1\t\t\t42\t7\n"  # A2 dead, tmux has not reaped it


def test_a_dead_pane_with_no_exit_status_gets_tmux_to_reap_it_and_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tmux = TmuxServer("wave-test-unreaped")
    calls: list[tuple[str, ...]] = []
    answers = {"list-panes": LISTED, "run-shell": LISTED.replace("1\t\t\t42", "1\t\t9\t42")}

    def cmd(*args: str) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, answers[args[0]], "")

    monkeypatch.setattr(tmux, "cmd", cmd)
    panes = tmux.panes()
    assert panes["A2"].dead and panes["A2"].dead_status == 137  # killed by SIGKILL
    assert [c[:4] for c in calls] == [
        ("list-panes", "-a", "-F", calls[0][3]),
        ("run-shell", "true", ";", "list-panes"),
    ]
    calls.clear()
    answers["list-panes"] = answers["run-shell"]  # every dead pane has its status: one call
    assert tmux.panes()["A2"].dead_status == 137 and len(calls) == 1


def test_tmux_takes_the_reaping_call_and_lists_its_panes(
    tmp_path: Path, server: libtmux.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pane whose process closed its terminal but runs on is dead with no status (what a
    missed SIGCHLD looks like, without the race): the second call is one tmux takes."""
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    mute = 'trap "" HUP; exec </dev/null >/dev/null 2>&1; exec sleep 30'  # deaf to the hang-up
    pid = tmux.start_session("A", ["bash", "-c", mute], str(tmp_path))
    assert pid is not None
    answered: list[tuple[str, int, str]] = []
    cmd = tmux.cmd

    def spied(*args: str) -> subprocess.CompletedProcess[str]:
        done = cmd(*args)
        answered.append((args[0], done.returncode, done.stdout))
        return done

    monkeypatch.setattr(tmux, "cmd", spied)
    try:
        wait_for(lambda: tmux.panes()["A"].dead, 10, what="the pane dead, its process running")
        assert tmux.panes()["A"].dead_status is None  # it has not ended: nothing to reap yet
        reaping = [(code, out) for name, code, out in answered if name == "run-shell"]
        assert reaping and all(code == 0 and out.startswith("A\t1\t") for code, out in reaping)
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: tmux.panes()["A"].dead_status == 143, 10, what="its status once it ends")
    tmux.kill_server()
