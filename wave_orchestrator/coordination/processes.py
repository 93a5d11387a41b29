"""The processes behind questions to a person: the lock an answer or an expiry holds (an
exclusive ``flock`` beside ``feedback.jsonl``, waited for a bounded time, with who holds it
written into it, so that a leftover process that keeps it is named rather than waited on
forever), and whether an `ask --wait` that recorded its pid still waits."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import WaveError
from ..sanitize import strip_controls
from .channel import sandboxed


@contextlib.contextmanager
def held(lock: Path, timeout: float) -> Iterator[None]:
    """``lock`` held for the block, waited for at most ``timeout`` seconds: a leftover process
    holding it gets a message naming it, never a hang that SIGTERM cannot end."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WaveError(
                        f"{lock} is held by another process ({_holder(fd)}) for over "
                        f"{timeout:g}s; end it, or try again"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        where = " in a sandbox" if sandboxed() else ""
        said = f"pid {os.getpid()}{where} ({' '.join(sys.argv[:3])[:120]})"
        os.pwrite(fd, said.encode(), 0)
        yield
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """What the holder wrote into the lock file when it took it (it says who it is)."""
    try:
        said = os.pread(fd, 200, 0).decode("utf-8", "replace")
    except OSError:
        return "unknown"
    return strip_controls(said).strip() or "unknown"


def alive(pid: int) -> bool:
    """Running, not a zombie: a killed `ask --wait` stays a zombie while the agent's shell
    is busy in a foreground command, and a zombie waits for nobody."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True
