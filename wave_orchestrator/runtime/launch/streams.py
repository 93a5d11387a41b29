"""A launcher's terminal may go away before its agents are done: `wave launch | head -3` closes
its stdout, a closed terminal makes every write to it fail. Its agents must not go down with
it, so the launcher's stdout and stderr become streams that, once a write fails, send the rest
to /dev/null; what the launcher says goes on in launcher.log."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from typing import Any, TextIO

from ...state.logs import Logger, in_context

log = Logger(__name__)


class SurvivingStream(io.TextIOBase):
    """``stream``, as long as it can be written; then nothing, quietly. Its file descriptor
    is pointed at /dev/null at the first failed write, so whatever else writes there (the
    interpreter's last flush, a child process) meets no closed pipe either."""

    def __init__(self, stream: TextIO, name: str) -> None:
        super().__init__()
        self.stream = stream
        self.label = name
        self.lost = False
        self.terminal = _isatty(stream)  # asked now: a terminal that hung up no longer says

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.stream.write(text)
                if self.stream.line_buffering or "\n" not in text:
                    return len(text)
                self.stream.flush()  # a pipe is block-buffered: fail now, not at exit
            except (OSError, ValueError) as exc:
                self._lose(exc)
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._lose(exc)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return not self.lost and _isatty(self.stream)

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def _lose(self, exc: BaseException) -> None:
        if self.lost:
            return
        self.lost = True
        with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.stream.fileno())
            finally:
                os.close(null)
        # Said on a thread of its own: the write that failed may hold the logger's lock. The
        # other stream may still reach a person; the log keeps it in any case.
        said = f"the launcher's {self.label} was closed: it goes on, its output in launcher.log"
        error = str(exc) or type(exc).__name__
        if isinstance(exc, TerminalGone):
            said = "the launcher's terminal hung up: it goes on, its output in launcher.log"
        threading.Thread(target=in_context(_warn), args=(said, error), daemon=True).start()


class TerminalGone(OSError):
    """Why a stream was let go when a SIGHUP said its terminal closed."""


def hang_up() -> None:
    """The terminal is gone (SIGHUP): let go of both streams at once rather than at their
    next failed write, so that nothing more is tried on a terminal that no longer is."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, SurvivingStream) and stream.terminal:
            stream._lose(TerminalGone("SIGHUP"))


def _warn(said: str, error: str) -> None:
    log.warning(said, error=error)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError):
        return False


def survive_closed_output() -> None:
    """Make this process's stdout and stderr streams that outlive their reader."""
    if not isinstance(sys.stdout, SurvivingStream) and sys.stdout is not None:
        sys.stdout = SurvivingStream(sys.stdout, "standard output")
    if not isinstance(sys.stderr, SurvivingStream) and sys.stderr is not None:
        sys.stderr = SurvivingStream(sys.stderr, "standard error")
