"""A tmux server on its way out when wave starts the next session: its last session was just
removed, so tmux unlinked its socket and is exiting. That is no lost socket (nothing runs
there): once it has exited, a new server starts and the launch goes on. A server that stays
up without its socket is still refused (a second server would run agents twice)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import libtmux
import pytest
from helpers import alive, wait_for

from wave_orchestrator.placement import tmux as tmux_module
from wave_orchestrator.placement.tmux import TmuxServer, TmuxUnreachable

pytestmark = pytest.mark.e2e


def started(server: libtmux.Server) -> tuple[TmuxServer, int]:
    """wave's TmuxServer on the test's private socket, with one session: and its pid."""
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    tmux.cmd("new-session", "-d", "-s", "old", "sleep 60")
    pid = int(tmux.cmd("display-message", "-p", "#{pid}").stdout.strip())
    tmux.server_pid = pid
    return tmux, pid


def test_a_server_that_exits_as_it_is_asked_gives_way_to_a_new_one(
    server: libtmux.Server,
) -> None:
    tmux, pid = started(server)
    os.kill(pid, signal.SIGSTOP)  # as a server between unlinking its socket and exiting
    Path(tmux.socket_path).unlink()
    threading.Timer(1.5, os.kill, (pid, signal.SIGKILL)).start()
    try:
        options = tmux._server_options()  # waits for it to go, then allows a new one
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert options[0] == "start-server" and tmux.server_pid is None
    wait_for(lambda: not alive(pid), 5, what="the old server's end")
    done = tmux.cmd(*options, ";", "new-session", "-d", "-s", "new", "sleep 60")
    assert done.returncode == 0, done.stderr
    assert tmux.is_running()


def test_a_server_that_stays_up_without_its_socket_is_refused(
    server: libtmux.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tmux_module, "SERVER_EXIT_SECONDS", 0.3)
    tmux, pid = started(server)
    os.kill(pid, signal.SIGSTOP)  # it cannot recreate its socket, and does not exit
    Path(tmux.socket_path).unlink()
    try:
        with pytest.raises(TmuxUnreachable):
            tmux._server_options()
    finally:
        os.kill(pid, signal.SIGKILL)
