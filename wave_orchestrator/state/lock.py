"""``launcher.lock``: one launcher per lane.

The lock is an ``flock`` held on the lock file's *folder* for the launcher's whole life: the
kernel drops it when the process dies, however it dies, so a dead launcher's lock is simply
free (taken over, with a warning) while two live launchers can never both hold it. Locking
the folder, not the file, means deleting ``launcher.lock`` frees nothing. The live lock's
folder is ``<repo>/.wave/<lane>`` whatever the state dir (``StateLayout.lock``), so `wave stop`
and `wave status` find a launcher that keeps its state elsewhere. The file's content,
``{pid, host, started_at, argv, state_dir, command}``, tells people who holds it; the holder's
pid is checked against ``/proc/locks``, so a forged or stale file cannot point elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import LockHeld
from .events import utc_now
from .fsutil import ensure_dir, read_json, write_json_atomic

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def this_host() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it (glibc's gethostname is
    uname's nodename), without loading ``socket`` into every command that takes a lock."""
    return os.uname().nodename


def read_lock(path: Path) -> dict[str, Any] | None:
    """The lock file's fields that have the expected types (untrusted: a person or a
    repository may have written it); None when there is no readable object."""
    try:
        data = read_json(path)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    info: dict[str, Any] = {}
    pid = data.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and 1 < pid < 2**22:
        info["pid"] = pid
    for key in ("host", "started_at", "state_dir", "command"):
        if isinstance(data.get(key), str):
            info[key] = data[key][:4096]
    argv = data.get("argv")
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        info["argv"] = argv
    return info


def lock_holders(folder: Path) -> set[int] | None:
    """Pids holding an ``flock`` on ``folder`` per ``/proc/locks``; None where that file is
    not there to ask (then the lock file's own word is all there is)."""
    try:
        st = os.stat(folder)
    except OSError:
        return set()  # no folder, no lock
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    holders = set()
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":  # "->" lines are waiters, not holders
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        if key == want:
            holders.add(pid)
    return holders


def _probe_held(folder: Path) -> bool:
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a filesystem that cannot flock: let /proc/locks (or the file) answer
        return True
    finally:
        os.close(fd)  # closing drops the shared lock we may have taken
    return False


def live_lock(path: Path) -> dict[str, Any] | None:
    """The holder's details while a launcher (or a `wave stop`) holds the lock, else None.
    The pid given is one the kernel says holds the lock, whatever the file claims.

    Whether anyone holds it is asked first by a non-blocking shared lock, taken and dropped
    at once: /proc/locks, which names the holder, costs one RCU grace period per process to
    read (6-20 ms on this project's VMs), which `wave status` would otherwise pay after every
    run. A launcher taking the lock meanwhile retries (`LaneLock.acquire`)."""
    if not _probe_held(path.parent):
        return None
    holders = lock_holders(path.parent)
    if holders is None:
        return read_lock(path) or {"pid": None, "started_at": "?"}
    if not holders:
        return None
    holders.discard(0)  # a holder in another pid namespace: held, pid unknown
    info = read_lock(path) or {"started_at": "?"}
    if info.get("pid") not in holders:
        info["pid"] = min(holders) if holders else None
    return info


def stale_holder(path: Path) -> int | None:
    """The pid a lock file names while nobody holds the lock: a launcher that died without
    releasing it (kill -9, the OOM killer). None when it is held, or names no one."""
    if _probe_held(path.parent):
        return None
    info = read_lock(path)
    return info.get("pid") if info is not None else None


def _take(fd: int) -> bool:
    """The exclusive lock, retried for ~0.1 s: `live_lock` holds a shared one for a few
    microseconds to ask, and that must not read as another launcher."""
    for pause in (0, 0.002, 0.005, 0.01, 0.02, 0.05):
        time.sleep(pause)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return True
    return False


def holder_text(lane: str, info: dict[str, Any]) -> str:
    if info.get("command") == "stop":
        return f"`wave stop` (pid {info.get('pid')}) is stopping lane {lane!r}; try again"
    where = f", state dir {info['state_dir']}" if info.get("state_dir") else ""
    return (
        f"another launcher is active on lane {lane!r} "
        f"(pid {info.get('pid')}, started {info.get('started_at')}{where})"
    )


class LaneLock:
    """``path`` is the lock file; the ``flock`` is on its folder. (A plain class: `wave status`
    imports this module without loading `dataclasses`, as ``state.layout`` says.)"""

    def __init__(
        self, path: Path, lane: str, state_dir: Path | None = None, command: str = "launch"
    ) -> None:
        self.path = path
        self.lane = lane
        self.state_dir = state_dir
        self.command = command
        self.took_over: dict[str, Any] | None = None  # the earlier holder's fields, if any
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise LockHeld naming the launcher that holds it."""
        ensure_dir(self.path.parent)
        fd = os.open(self.path.parent, _DIR_FLAGS)
        if not _take(fd):
            os.close(fd)
            raise LockHeld(holder_text(self.lane, live_lock(self.path) or {}))
        try:
            previous = read_lock(self.path)
            if previous is not None or self.path.exists():
                self.took_over = previous or {}
            body: dict[str, Any] = {
                "pid": os.getpid(),
                "host": this_host(),
                "started_at": utc_now(),
                "argv": sys.argv,
                "command": self.command,
            }
            if self.state_dir is not None:
                body["state_dir"] = str(self.state_dir)
            write_json_atomic(self.path, body)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def release(self) -> None:
        """Remove the file (while it still names us), then drop the lock."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            info = read_lock(self.path)
            if info is not None and info.get("pid") == os.getpid():
                self.path.unlink()
        os.close(self.fd)
        self.fd = None
