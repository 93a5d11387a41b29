"""Reading what an agent left running from /proc: zombies are not alive, a token finds a
process whatever its session, and a subreaper reaps only the orphans that came to it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from helpers import execed, wait_for

from wave_orchestrator.placement import processes
from wave_orchestrator.placement.local import LocalPlacement
from wave_orchestrator.placement.tmux import TmuxServer


def test_a_group_of_zombies_is_not_alive() -> None:
    child = subprocess.Popen(["sleep", "0.1"], process_group=0)
    wait_for(
        lambda: (
            processes._stat(str(child.pid)) is not None
            and processes._stat(str(child.pid))[0] == "Z"
        ),
        10,
        what="a zombie",
    )
    os.killpg(child.pid, 0)  # the kernel still counts the group: what used to stall a wave
    processes.forget()
    assert not processes.group_alive(child.pid)
    child.wait()
    assert not processes.group_alive(child.pid)
    running = subprocess.Popen(["sleep", "30"], process_group=0)
    try:
        processes.forget()
        assert processes.group_alive(running.pid)
    finally:
        running.kill()
        running.wait()


def test_a_group_whose_leader_runs_is_alive_without_a_scan_and_one_whose_leader_left_is_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scans = []
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: scans.append(path) or listdir(path))
    leader = subprocess.Popen(["sleep", "30"], process_group=0)
    # a leader that exits at once, leaving a member of its group behind
    left = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo $!"], process_group=0, stdout=subprocess.PIPE, text=True
    )
    member = int(left.stdout.readline()) if left.stdout else 0
    try:
        left.wait(timeout=10)
        processes.forget()
        assert processes.group_alive(leader.pid) and scans == []
        assert processes.group_alive(left.pid) and scans == ["/proc"]  # the member runs
        os.kill(member, signal.SIGKILL)
        wait_for(
            lambda: processes._stat(str(member)) is None or processes._stat(str(member))[0] == "Z",
            10,
            what="the member ended",
        )
        processes.forget()
        assert not processes.group_alive(left.pid)
    finally:
        leader.kill()
        leader.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def test_a_token_finds_a_process_in_another_session_and_ends_it() -> None:
    token = f"wave-test/{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "WAVE_AGENT_TOKEN": token}
    escapee = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    other = subprocess.Popen(["sleep", "30"], env={**env, "WAVE_AGENT_TOKEN": token + "-x"})
    try:
        execed(escapee.pid, other.pid)
        processes.forget()
        assert processes.tagged(token) == [escapee.pid]
        assert processes.signal_tagged(token, signal.SIGTERM) == 1
        assert escapee.wait(timeout=10) == -signal.SIGTERM
        assert other.poll() is None  # another token: left alone
    finally:
        for proc in (escapee, other):
            proc.kill()
            proc.wait()


def test_tokens_are_not_read_in_a_running_pane_s_group_but_are_once_its_leader_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = f"wave-test/{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "WAVE_AGENT_TOKEN": token}
    pane = subprocess.Popen(["sleep", "30"], env=env, process_group=0)
    escapee = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    # a pane whose leader left, a member of its group still running
    gone = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo $!"],
        env=env,
        process_group=0,
        stdout=subprocess.PIPE,
        text=True,
    )
    member = int(gone.stdout.readline()) if gone.stdout else 0
    read: list[int] = []
    token_of = processes._token
    monkeypatch.setattr(processes, "_token", lambda pid: read.append(int(pid)) or token_of(pid))
    try:
        gone.wait(timeout=10)
        execed(pane.pid, escapee.pid, member)
        processes.forget()
        found = processes.tagged(token, panes=[pane.pid, gone.pid])
        assert sorted(found) == sorted([escapee.pid, member])
        assert pane.pid not in read and escapee.pid in read and member in read
        processes.forget()
        assert sorted(processes.tagged(token)) == sorted([pane.pid, escapee.pid, member])
    finally:
        for proc in (pane, escapee):
            proc.kill()
            proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


ORPHAN = """
import os, subprocess, sys, time
from wave_orchestrator.placement import processes
assert processes.become_subreaper()
# An orphan in a session of its own (an agent's leftover): it comes to us and is reaped.
subprocess.run(["setsid", "-f", "true"], check=True)
# A child of ours in our own session, not yet waited on by its caller: never reaped here.
own = subprocess.Popen(["sh", "-c", "exit 3"])
time.sleep(0.3)
processes.forget()
reaped = processes.reap_adopted()
print(reaped, own.wait())
"""


def test_the_subreaper_reaps_adopted_orphans_and_never_its_own_children() -> None:
    if not sys.platform.startswith("linux"):
        pytest.fail("a child subreaper is Linux only")
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "3"]  # the orphan reaped; its own child's code intact


def test_the_waited_kill_escalation_kills_only_what_outlived_its_grace() -> None:
    """`end_groups` (wave stop, a launcher that cannot keep its records): SIGTERM to every
    group, SIGKILL only to a group still alive once the grace is over."""
    import signal as signals

    from wave_orchestrator.placement.reaper import end_groups

    class Groups:
        def __init__(self) -> None:
            self.living, self.sent = {1, 2}, []

        def alive(self, pid: int) -> bool:
            return pid in self.living

        def signal(self, pid: int, sig: int) -> None:
            self.sent.append((pid, sig))
            if sig == signals.SIGKILL or pid == 1:  # 1 ends on SIGTERM, 2 ignores it
                self.living.discard(pid)

    groups = Groups()
    end_groups(groups, [1, 2], grace=0.3)  # type: ignore[arg-type]
    assert groups.sent == [(1, signals.SIGTERM), (2, signals.SIGTERM), (2, signals.SIGKILL)]
    assert groups.living == set()


@pytest.fixture
def fake_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A /proc of our own making: each process a folder with the files the scan reads."""
    monkeypatch.setattr(processes, "PROC", str(tmp_path))
    processes.forget()
    yield tmp_path
    processes.forget()  # no table of fakes left for the next test


def _process(proc: Path, pid: int, environ: bytes, cmdline: bytes, flags: int = 0) -> None:
    """``pid`` leading a group and session of its own, as a ``setsid`` leftover does."""
    folder = proc / str(pid)
    folder.mkdir(exist_ok=True)
    (folder / "stat").write_bytes(f"{pid} (a (b) S 1 {pid} {pid} 0 -1 {flags} 0 0".encode())
    (folder / "environ").write_bytes(environ)
    (folder / "cmdline").write_bytes(cmdline)


def test_a_process_caught_mid_exec_is_looked_at_again_and_not_taken_for_gone(
    fake_proc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a process execs, /proc shows it no environment and no command line: its token
    is unknown. A kernel thread and a process started with no environment never count."""
    _process(fake_proc, 2, b"", b"", flags=processes.PF_KTHREAD)
    _process(fake_proc, 50, b"", b"env-less\0")
    _process(fake_proc, 51, b"WAVE_AGENT_TOKEN=wave-x/A2\0", b"sleep\0")  # another agent's
    assert not processes.carried("wave-x/A1") and processes.carried("wave-x/A2")
    scans: list[str] = []
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: scans.append(path) or listdir(path))
    _process(fake_proc, 60, b"", b"")
    processes.forget()
    assert processes.carried("wave-x/A1") and len(scans) == 2  # a fresh look, still caught
    assert processes.tagged("wave-x/A1") == []  # nothing signalled on a guess

    def exec_over(path: str) -> list[str]:  # the fresh look finds the exec done
        _process(fake_proc, 60, b"PATH=/bin\0WAVE_AGENT_TOKEN=wave-x/A1\0", b"server\0")
        return listdir(path)

    _process(fake_proc, 60, b"", b"")
    processes.forget()
    monkeypatch.setattr(os, "listdir", exec_over)
    assert processes.carried("wave-x/A1") and processes.tagged("wave-x/A1") == [60]
    _process(fake_proc, 60, b"", b"")
    processes.forget()

    def exited(path: str) -> list[str]:  # the fresh look finds it gone
        (fake_proc / "60").rename(fake_proc / "exited")
        return listdir(path)

    monkeypatch.setattr(os, "listdir", exited)
    assert not processes.carried("wave-x/A1")


def test_an_environment_read_empty_once_is_read_again(
    fake_proc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment opened just before its process execs reads empty after it."""
    _process(fake_proc, 60, b"WAVE_AGENT_TOKEN=wave-x/A1\0", b"sleep\0")
    read = processes._read
    environs: list[str] = []

    def first_empty(pid: str, name: str, limit: int) -> bytes | None:
        environs.extend([pid] if name == "environ" else [])
        return b"" if environs == [pid] and name == "environ" else read(pid, name, limit)

    monkeypatch.setattr(processes, "_read", first_empty)
    assert processes.tagged("wave-x/A1") == [60] and environs == ["60", "60"]


def test_a_local_agent_whose_leftover_is_mid_exec_is_still_alive(fake_proc: Path) -> None:
    """Its pane's group is gone, what it left is caught starting: not yet an ended agent."""
    placement = LocalPlacement(cast(TmuxServer, SimpleNamespace(socket="wave-x")))
    handle = 2**22 + 7  # no such process group
    placement.session_of[handle] = "A1"
    _process(fake_proc, 60, b"", b"")
    assert placement.alive(handle)
    (fake_proc / "60" / "environ").write_bytes(b"WAVE_AGENT_TOKEN=wave-x/A2\0")
    (fake_proc / "60" / "cmdline").write_bytes(b"sleep\0")
    processes.forget()
    assert not placement.alive(handle)  # another agent's
