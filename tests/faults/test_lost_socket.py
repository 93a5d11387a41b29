"""Fault class 3: the tmux server's socket file is removed while agents run (a /tmp cleaner).
A failed ``list-panes`` is "unknown", not "every session is gone": the server is found by its
pid and asked to recreate its socket, agents are followed by pid meanwhile, nothing is launched
twice, a status file of another attempt is never taken for this one's, and no tmux server is
left behind (issue 10)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, alive, local_lane, wait_for

from wave_orchestrator.placement.tmux import TmuxServer, TmuxUnreachable

pytestmark = pytest.mark.e2e

# Counts its runs, says it started, then works until the test says go.
AGENT = (
    'echo run >> "$WAVE_REPO/runs-$WAVE_AGENT_ID"; touch "$WAVE_REPO/started-$WAVE_AGENT_ID"; '
    'while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.1; done; exit {code}'
)


def lane(repo: Repo, ids: list[str], retries: int = 1, code: int = 0) -> None:
    command = json.dumps(AGENT.format(code=code))
    rows = "\n".join(
        f"  - {{id: {i}, prompt: p, executor: {{local: {{command: {command}}}}}}}" for i in ids
    )
    repo.lane("main", local_lane(retries=retries), {1: f"agents:\n{rows}\n"})


def socket_path(repo: Repo) -> Path:
    tmpdir = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return Path(tmpdir) / f"tmux-{os.getuid()}" / repo.env["WAVE_TMUX_SOCKET"]


def server_pid(repo: Repo) -> int:
    out = subprocess.run(
        ["tmux", "-L", repo.env["WAVE_TMUX_SOCKET"], "display-message", "-p", "#{pid}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def events(repo: Repo, name: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == name]


@pytest.fixture
def launched(tmux_repo: Repo) -> Iterator[list[subprocess.Popen[str]]]:
    """Launchers a test starts; killed at its end if still running."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start(repo: Repo, launched: list[subprocess.Popen[str]], ids: list[str]) -> int:
    launched.append(repo.spawn("launch", "--lane", "main"))
    for agent in ids:
        wait_for(lambda a=agent: (repo.root / f"started-{a}").exists(), what=f"{agent} to start")
    return server_pid(repo)


def test_a_removed_socket_is_recreated_and_nothing_runs_twice(
    tmux_repo: Repo, launched: list[subprocess.Popen[str]]
) -> None:
    ids = ["A1", "A2"]
    lane(tmux_repo, ids)
    pid = start(tmux_repo, launched, ids)
    path = socket_path(tmux_repo)
    path.unlink()
    # The launcher's next liveness round finds the server by its pid; SIGUSR1 brings it back.
    wait_for(path.exists, seconds=10, what="the launcher to have the socket recreated")
    assert server_pid(tmux_repo) == pid
    (tmux_repo.root / "go").touch()
    assert launched[0].wait(timeout=60) == 0, launched[0].communicate()[1]
    for agent in ids:
        assert (tmux_repo.root / f"runs-{agent}").read_text() == "run\n", f"{agent} ran twice"
    assert len(events(tmux_repo, "agent_launched")) == 2
    assert {e["status"] for e in events(tmux_repo, "agent_finished")} == {"success"}
    wait_for(lambda: not alive(pid), seconds=10, what="the tmux server to end")


def test_an_unrecoverable_socket_follows_agents_by_pid_and_ends_the_server(
    tmux_repo: Repo, launched: list[subprocess.Popen[str]]
) -> None:
    ids = ["A1", "A2"]
    lane(tmux_repo, ids)
    pid = start(tmux_repo, launched, ids)
    path = socket_path(tmux_repo)
    path.unlink()
    path.mkdir()  # something else took the socket's place: tmux cannot recreate it
    try:
        launcher_log = tmux_repo.state("main") / "launcher.log"
        wait_for(
            lambda: "tmux unreachable" in launcher_log.read_text(),
            seconds=10,
            what="the launcher to notice",
        )
        (tmux_repo.root / "go").touch()
        assert launched[0].wait(timeout=60) == 0, launched[0].communicate()[1]
        for agent in ids:
            assert (tmux_repo.root / f"runs-{agent}").read_text() == "run\n", f"{agent} ran twice"
        assert {e["status"] for e in events(tmux_repo, "agent_finished")} == {"success"}
        # Nobody can reach that server any more: the launcher ended it by its pid.
        wait_for(lambda: not alive(pid), seconds=10, what="the unreachable tmux server to end")
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_status_file_of_another_attempt_is_not_accepted(
    tmux_repo: Repo, launched: list[subprocess.Popen[str]]
) -> None:
    lane(tmux_repo, ["A1"], retries=0, code=3)
    start(tmux_repo, launched, ["A1"])
    agent_dir = tmux_repo.agent_dir("main", 1, "A1")
    # What a first attempt still running beside this one would write: a success, attempt 7.
    stale = {"agent": "A1", "wave": 1, "lane": "main", "attempt": 7, "code": 0, "tries": 1}
    (agent_dir / ".stale").write_text(json.dumps(stale))
    (agent_dir / ".stale").rename(agent_dir / "status.json")
    wait_for(
        lambda: "another attempt" in (tmux_repo.state("main") / "launcher.log").read_text(),
        seconds=10,
        what="the launcher to read the stale status",
    )
    (tmux_repo.root / "go").touch()
    assert launched[0].wait(timeout=60) == 1
    finished = events(tmux_repo, "agent_finished")
    assert [(e["status"], e["code"]) for e in finished] == [("failed", 3)]


def test_a_status_file_without_an_attempt_is_not_accepted(
    tmux_repo: Repo, launched: list[subprocess.Popen[str]]
) -> None:
    lane(tmux_repo, ["A1"], retries=0, code=3)
    start(tmux_repo, launched, ["A1"])
    agent_dir = tmux_repo.agent_dir("main", 1, "A1")
    (agent_dir / ".stale").write_text(json.dumps({"agent": "A1", "code": 0}))
    (agent_dir / ".stale").rename(agent_dir / "status.json")
    wait_for(
        lambda: "another attempt" in (tmux_repo.state("main") / "launcher.log").read_text(),
        seconds=10,
        what="the launcher to read the stale status",
    )
    (tmux_repo.root / "go").touch()
    assert launched[0].wait(timeout=60) == 1
    assert [e["status"] for e in events(tmux_repo, "agent_finished")] == ["failed"]


def test_a_status_of_another_attempt_does_not_outlive_this_attempt(
    tmux_repo: Repo, launched: list[subprocess.Popen[str]]
) -> None:
    lane(tmux_repo, ["A1"], retries=0)
    start(tmux_repo, launched, ["A1"])
    agent_dir = tmux_repo.agent_dir("main", 1, "A1")
    stale = {"agent": "A1", "wave": 1, "lane": "main", "attempt": 7, "code": 0, "tries": 1}
    (agent_dir / ".stale").write_text(json.dumps(stale))
    (agent_dir / ".stale").rename(agent_dir / "status.json")
    wait_for(
        lambda: "another attempt" in (tmux_repo.state("main") / "launcher.log").read_text(),
        seconds=10,
        what="the launcher to read the stale status",
    )
    # This attempt's wrapper dies without a status of its own.
    panes = subprocess.run(
        [
            "tmux",
            "-L",
            tmux_repo.env["WAVE_TMUX_SOCKET"],
            "list-panes",
            "-a",
            "-F",
            "#{session_name} #{pane_pid}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    wrapper = next(line.split()[1] for line in panes if line.startswith("w1-A1 "))
    os.kill(int(wrapper), 9)
    assert launched[0].wait(timeout=60) == 1
    assert [e["status"] for e in events(tmux_repo, "agent_finished")] == ["failed"]
    assert not (agent_dir / "status.json").exists(), "attempt 7's success stood for attempt 1"


def test_panes_brings_a_removed_socket_back(tmp_path: Path, server: libtmux.Server) -> None:
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    tmux.start_session("a", ["sleep", "30"], str(tmp_path))
    pid = tmux.server_pid
    assert pid is not None and alive(pid)
    Path(tmux.socket_path).unlink()
    assert set(tmux.panes(strict=True)) == {"a"}
    assert tmux.server_pid == pid
    tmux.kill_server()


def test_no_second_server_starts_beside_an_unreachable_one(
    tmp_path: Path, server: libtmux.Server
) -> None:
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    tmux.start_session("a", ["sleep", "30"], str(tmp_path))
    pid = tmux.server_pid
    assert pid is not None
    path = Path(tmux.socket_path)
    path.unlink()
    path.mkdir()
    try:
        with pytest.raises(TmuxUnreachable):
            tmux.panes(strict=True)
        with pytest.raises(TmuxUnreachable, match="lost its socket"):
            tmux.start_session("b", ["sleep", "30"], str(tmp_path))
        assert tmux.shutdown_if_unreachable()
        wait_for(lambda: not alive(pid), what="the unreachable server to end")
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_socket_bound_but_not_listening_is_not_taken_for_recovered(tmp_path: Path) -> None:
    """tmux binds its new socket a moment before it listens: a call in between fails."""
    tmux = TmuxServer("wave-test-unused")
    tmux.socket_path = str(tmp_path / "s")
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        bound.bind(tmux.socket_path)
        assert tmux._socket_present()
        assert not tmux._socket_listening()
        bound.listen(1)
        assert tmux._socket_listening()
    finally:
        bound.close()


def test_a_start_that_meets_its_server_exiting_starts_a_new_one(tmp_path: Path) -> None:
    """The last session of a server ends as a start reaches it: tmux's client says the server
    "exited unexpectedly"; once it has exited, the start is made again and succeeds."""
    from wave_orchestrator.placement.tmux import EXITING, TmuxServer

    answers = [
        subprocess.CompletedProcess([], 1, "", f"{EXITING}\n"),
        subprocess.CompletedProcess([], 0, "4242\t4343\n", ""),
    ]

    class Exiting(TmuxServer):
        def cmd(self, *args: str) -> subprocess.CompletedProcess[str]:
            return answers.pop(0)

        def server_alive(self) -> bool:
            return False  # the old server is gone by now

    assert Exiting("never-started").start_session("w1-A", ["true"], str(tmp_path)) == 4343
    assert answers == []  # started twice: the second start met a new server
