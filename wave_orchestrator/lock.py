"""``launcher.lock``: one launcher per lane (SPEC 3.6); a dead launcher's lock is taken over."""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import LockHeld
from .events import utc_now


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (killed, not yet reaped by its parent) is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def read_lock(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def lock_is_live(info: dict[str, Any] | None) -> bool:
    if not info or not isinstance(info.get("pid"), int):
        return False
    if info.get("host") not in (None, socket.gethostname()):
        return True  # another machine's launcher: we cannot tell, so respect it
    return pid_alive(info["pid"])


@dataclass
class LaneLock:
    path: Path
    lane: str
    took_over: dict[str, Any] | None = None

    def acquire(self) -> None:
        """Create the lock exclusively; take over a dead launcher's lock; else raise LockHeld."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started_at": utc_now(),
                "argv": sys.argv,
            }
        )
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                info = read_lock(self.path)
                if lock_is_live(info):
                    assert info is not None
                    raise LockHeld(
                        f"another launcher is active on lane {self.lane!r} "
                        f"(pid {info.get('pid')}, started {info.get('started_at')})"
                    ) from None
                self.took_over = info or {}
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
            return
        raise LockHeld(f"could not take the lock {self.path} for lane {self.lane!r}")

    def release(self) -> None:
        info = read_lock(self.path)
        if info and info.get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)
