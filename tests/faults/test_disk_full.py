"""Fault class 8: disk full and read-only state dir. Dashboard, event and log writes are best
effort; a failed essential write (a status, the run state) stops the agents cleanly and exits
1 with one line naming the path and the error; a read-only state dir gives every command a
message, never a traceback.

The filesystem variants mount a small tmpfs (and remount it read-only), which needs root or
CAP_SYS_ADMIN; where the machine refuses, they are skipped with that reason and the variants at
the fsutil seam (monkeypatched ENOSPC / EROFS) still run.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, alive, local_lane, wait_for

from wave_orchestrator.runtime.wave.snapshot import SnapshotWriter
from wave_orchestrator.state import fsutil
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.fsutil import StateWriteFailed, write_json_atomic
from wave_orchestrator.state.jsonl import append_jsonl
from wave_orchestrator.state.run_state import RunState


def _fail_with(code: int) -> OSError:
    return OSError(code, os.strerror(code))


# -- at the fsutil seam -----------------------------------------------------------------------
def test_a_full_disk_is_one_line_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run-state.json"

    def no_space(*_: object) -> None:
        raise _fail_with(errno.ENOSPC)

    monkeypatch.setattr(fsutil.os, "replace", no_space)
    with pytest.raises(StateWriteFailed) as info:
        write_json_atomic(path, {"waves": {}})
    assert str(info.value) == f"cannot write {path}: No space left on device"
    assert list(tmp_path.iterdir()) == []  # no temp file left behind
    with pytest.raises(StateWriteFailed, match="No space left on device"):
        RunState(path, "main").transition(1, "running")
    monkeypatch.setattr(fsutil.os, "write", no_space)
    with pytest.raises(StateWriteFailed, match=r"cannot write .*events\.jsonl: No space left"):
        append_jsonl(tmp_path / "events.jsonl", {"event": "x"})


def test_events_dashboard_and_log_writes_are_best_effort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*_: object) -> None:
        raise _fail_with(errno.EROFS)

    events = EventLog(tmp_path / "events.jsonl")
    monkeypatch.setattr(fsutil.os, "write", read_only)
    with pytest.raises(StateWriteFailed, match="Read-only file system"):
        events.emit("launcher_started")  # before the launcher runs: a state dir it cannot use
    events.best_effort = True
    record = events.emit(
        "agent_finished", 1, "A1"
    )  # once running, an event is not a reason to stop
    assert record["event"] == "agent_finished" and events.failed is not None
    monkeypatch.setattr(fsutil.os, "replace", read_only)
    snapshot = SnapshotWriter(tmp_path / "dashboard.json", {"lane": "main"})
    assert snapshot.write([], [], force=True) is False and snapshot.failed is not None
    from wave_orchestrator.state.logs import configure_logging, get_logger

    configure_logging(tmp_path / "launcher.log", quiet=True)
    get_logger().info("still running")  # the JSON tee fails quietly


# -- on real filesystems ------------------------------------------------------------------------
@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs of our own, unmounted afterwards."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            "SKIPPED LOUDLY: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): "
            f"{done.stderr.strip()}; the fsutil-seam variants above still ran"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Write until the filesystem has no space left."""
    with (folder / "filler").open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def remount_read_only(mount: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)


AGENT = 'mkdir -p "$WAVE_REPO/pids"; echo $$ > "$WAVE_REPO/pids/$WAVE_AGENT_ID"; exec sleep 300'


@pytest.mark.e2e
def test_disk_full_mid_wave_stops_the_agents_and_exits_1_naming_the_path(
    tmux_repo: Repo, server: libtmux.Server, tmpfs: Path
) -> None:
    command = json.dumps(AGENT)
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: (
                "agents:\n"
                f"  - {{id: A1, prompt: x, executor: {{local: {{command: {command}}}}}}}\n"
                # A2's budget runs out after the disk is full: its timeout status cannot be kept.
                f"  - {{id: A2, prompt: x, executor: {{budget: {{minutes: 0.2}}, local: {{command: {command}}}}}}}\n"
            )
        },
    )
    tmux_repo.env["WAVE_STATE_DIR"] = str(tmpfs / "state")
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        pids = tmux_repo.root / "pids"
        wait_for(lambda: pids.is_dir() and len(list(pids.iterdir())) == 2, 20, what="agents")
        agents = [int(p.read_text()) for p in pids.iterdir()]
        fill(tmpfs)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    status = tmpfs / "state/waves/wave-1/agents/A2/status.json"
    assert re.fullmatch(
        rf"cannot write {re.escape(str(status))}: No space left on device; "
        r"stopped [12] agent session\(s\)",
        last,
    ), err
    assert not any(alive(pid) for pid in agents)
    wait_for(lambda: not server.sessions, 15, what="no session left")


def ran_once(repo: Repo, state: Path) -> None:
    """A finished one-agent wave in ``state``: something for every reading command."""
    repo.lane(
        "main",
        local_lane(),
        {1: "agents:\n  - {id: A1, prompt: x, executor: {local: {command: 'echo hi'}}}\n"},
    )
    repo.env["WAVE_STATE_DIR"] = str(state)
    done = repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=60)
    assert done.returncode == 0, done.stderr


COMMANDS = (
    ("launch", "--lane", "main", "--no-dashboard"),
    ("launch", "--lane", "main", "--dry-run"),
    ("launch", "--lane", "main", "--detach"),
    ("status", "--lane", "main"),
    ("status", "--lane", "main", "--json"),
    ("stop", "--lane", "main"),
    ("stop", "--lane", "main", "--agent", "A1"),
    ("dashboard", "--lane", "main", "--once"),
    ("logs", "A1", "--lane", "main"),
    ("metrics",),
    ("desk", "status", "--lane", "main", "--wave", "1"),
    ("desk", "claim", "--lane", "main", "--wave", "1", "--agent", "A1", "x.txt"),
)


@pytest.mark.e2e
def test_read_only_state_dir_gives_every_command_a_message(
    tmux_repo: Repo, server: libtmux.Server, tmpfs: Path
) -> None:
    ran_once(tmux_repo, tmpfs / "state")
    remount_read_only(tmpfs)
    for command in COMMANDS:
        result = tmux_repo.wave(*command, timeout=60)
        assert "Traceback" not in result.stderr, (command, result.stderr)
        if result.returncode != 0:
            assert result.stderr.startswith("wave: "), (command, result.stderr)
            assert len(result.stderr.strip().splitlines()) == 1, (command, result.stderr)
    launch = tmux_repo.wave(*COMMANDS[0], timeout=60)
    assert launch.returncode == 1 and "Read-only file system" in launch.stderr
    assert not [s for s in server.sessions if s.name != "launcher"]
    status = tmux_repo.wave("status", "--lane", "main")
    assert status.returncode == 0 and "wave 1: completed" in status.stdout


@pytest.mark.e2e
def test_read_only_lane_folder_where_the_lock_lives(
    tmux_repo: Repo, server: libtmux.Server, tmpfs: Path
) -> None:
    """The default state dir, where the lane lock lives, on a read-only bind mount."""
    ran_once(tmux_repo, tmpfs / "main")
    tmux_repo.env.pop("WAVE_STATE_DIR")
    dot_wave = tmux_repo.root / ".wave"
    shutil.rmtree(dot_wave)
    dot_wave.symlink_to(tmpfs)  # linked out of the repository: refused, with a message
    linked = tmux_repo.wave("status", "--lane", "main")
    assert linked.returncode == 1 and ".wave is a symbolic link" in linked.stderr
    dot_wave.unlink()
    dot_wave.mkdir()
    subprocess.run(["mount", "--bind", str(tmpfs), str(dot_wave)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(dot_wave)], check=True)
        for command in COMMANDS:
            result = tmux_repo.wave(*command, timeout=60)
            assert "Traceback" not in result.stderr, (command, result.stderr)
            if result.returncode != 0:
                assert len(result.stderr.strip().splitlines()) == 1, (command, result.stderr)
        launch = tmux_repo.wave(*COMMANDS[0], timeout=60)
        assert launch.returncode == 1, launch.stderr
        assert "launcher.lock: Read-only file system" in launch.stderr
        stop = tmux_repo.wave("stop", "--lane", "main")
        assert stop.returncode == 1 and "Read-only file system" in stop.stderr
        status = tmux_repo.wave("status", "--lane", "main")
        assert status.returncode == 0 and "wave 1: completed" in status.stdout
    finally:
        subprocess.run(["umount", "-l", str(dot_wave)], check=False)
