from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from wave_orchestrator.errors import LockHeld
from wave_orchestrator.state.lock import LaneLock, live_lock, read_lock


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


def test_asking_whether_the_lock_is_held_never_fails_a_launcher(tmp_path: Path) -> None:
    """`live_lock` asks with a shared lock held for an instant; a launcher taking the lock
    at that instant waits it out instead of reporting another launcher."""
    path = tmp_path / "launcher.lock"
    asker = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(asker, fcntl.LOCK_SH | fcntl.LOCK_NB)
    threading.Timer(0.02, os.close, [asker]).start()
    lock = LaneLock(path, "main")
    lock.acquire()
    assert live_lock(path) == {**read_lock(path), "pid": os.getpid()}  # type: ignore[dict-item]
    lock.release()
    assert live_lock(path) is None


def test_a_forged_lock_file_names_no_holder(tmp_path: Path) -> None:
    path = tmp_path / "launcher.lock"
    path.write_text(json.dumps({"pid": os.getpid(), "started_at": "then"}))
    assert live_lock(path) is None


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


def _try_lock(args: tuple[str, float, int]) -> bool:
    """One would-be launcher. The winner holds the lock until every other one has tried, so a
    worker that starts late (spawn is slow on a busy machine) cannot win after a release."""
    import time
    import uuid

    path, start, others = args
    while time.time() < start:
        pass
    lock = LaneLock(Path(path), "main")
    tried = Path(path + ".tried")
    try:
        lock.acquire()
    except LockHeld:
        tried.mkdir(exist_ok=True)
        (tried / uuid.uuid4().hex).touch()
        return False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if tried.is_dir() and len(list(tried.iterdir())) >= others:
            break
        time.sleep(0.01)
    lock.release()
    return True


def test_only_one_of_many_simultaneous_launchers_gets_the_lock(tmp_path: Path) -> None:
    import multiprocessing
    import time

    for trial in range(3):
        path = tmp_path / f"lock-{trial}"
        if trial == 2:  # a stale lock left by a dead launcher
            path.write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
        start = time.time() + 1.0
        with multiprocessing.get_context("spawn").Pool(6) as pool:
            won = pool.map(_try_lock, [(str(path), start, 5)] * 6)
        assert sum(won) == 1
