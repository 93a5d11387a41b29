from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from wave_orchestrator.errors import LockHeld
from wave_orchestrator.lock import LaneLock, read_lock


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    path = tmp_path / "launcher.lock"
    first = LaneLock(path, "main")
    first.acquire()
    info = read_lock(path)
    assert (
        info is not None and info["pid"] == os.getpid() and "started_at" in info and "argv" in info
    )
    # Our own pid is alive, so a second acquirer must refuse.
    with pytest.raises(
        LockHeld, match=r"another launcher is active on lane 'main' \(pid \d+, started "
    ):
        LaneLock(path, "main").acquire()
    first.release()
    assert not path.exists()


def test_dead_launchers_lock_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "launcher.lock"
    pid = dead_pid()
    path.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started_at": "then"}))
    lock = LaneLock(path, "main")
    lock.acquire()
    assert lock.took_over is not None and lock.took_over["pid"] == pid
    assert read_lock(path)["pid"] == os.getpid()  # type: ignore[index]


def test_unreadable_lock_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "launcher.lock"
    path.write_text("garbage")
    LaneLock(path, "main").acquire()
    assert read_lock(path)["pid"] == os.getpid()  # type: ignore[index]


def test_release_leaves_someone_elses_lock(tmp_path: Path) -> None:
    path = tmp_path / "launcher.lock"
    path.write_text(json.dumps({"pid": 1, "host": socket.gethostname()}))
    LaneLock(path, "main").release()
    assert path.exists()
