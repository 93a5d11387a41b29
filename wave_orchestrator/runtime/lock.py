"""``launcher.lock``: one launcher per lane (SPEC 3.6).

The lock is an ``flock`` held on the file for the launcher's whole life: the kernel drops it
when the process dies, however it dies, so a dead launcher's lock is simply free (and taken
over, with a warning) while two live launchers can never both hold it. The file's content,
``{pid, host, started_at, argv}``, tells people who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LockHeld
from ..state.events import utc_now


def read_lock(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def live_lock(path: Path) -> dict[str, Any] | None:
    """The holder's details while a launcher holds the lock, else None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_lock(path) or {"pid": None, "started_at": "?"}
    finally:
        os.close(fd)  # closing drops the shared lock we may have taken
    return None


def holder_text(lane: str, info: dict[str, Any]) -> str:
    return (
        f"another launcher is active on lane {lane!r} "
        f"(pid {info.get('pid')}, started {info.get('started_at')})"
    )


@dataclass
class LaneLock:
    path: Path
    lane: str
    took_over: dict[str, Any] | None = None
    fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise LockHeld naming the launcher that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise LockHeld(holder_text(self.lane, read_lock(self.path) or {})) from None
            if not self._still_named(fd):  # a releasing launcher unlinked it meanwhile
                os.close(fd)
                continue
            previous = os.read(fd, 65536)
            if previous.strip():
                with contextlib.suppress(ValueError):
                    info = json.loads(previous)
                    self.took_over = info if isinstance(info, dict) else {}
            body = json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started_at": utc_now(),
                    "argv": sys.argv,
                }
            )
            os.ftruncate(fd, 0)
            os.pwrite(fd, body.encode(), 0)
            self.fd = fd
            return
        raise LockHeld(f"could not take the lock {self.path} for lane {self.lane!r}")

    def _still_named(self, fd: int) -> bool:
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (named.st_ino, named.st_dev) == (mine.st_ino, mine.st_dev)

    def release(self) -> None:
        if self.fd is None:
            return
        if self._still_named(self.fd):
            self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None
