"""Following one agent's output for the dashboard's log pane: the end of the file first, then
what is appended, a bounded chunk per read (a 500 MB log costs one chunk of memory)."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from ..errors import WaveError
from ..sanitize import strip_controls
from ..state.fsutil import open_read

TAIL_BYTES = 64 * 1024  # what the pane shows of what was written before it opened
CHUNK_BYTES = 256 * 1024  # the most one read takes in


class LogFollower:
    """New text of ``path`` on each ``read()``, without escapes or control characters: an
    agent's output is shown, never obeyed. Never follows a link, never blocks on a FIFO."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset: int | None = None  # where the next read starts; None: not opened yet
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._partial = ""  # a line not ended yet, held so the pane shows whole lines

    def read(self) -> str:
        """The whole lines appended since the last read ('' when nothing new or no file)."""
        try:
            with open_read(self.path) as fh:
                if self.offset is None:  # first read: the tail, from a line's start
                    size = os.fstat(fh.fileno()).st_size
                    self.offset = max(0, size - TAIL_BYTES)
                    fh.seek(self.offset)
                    if self.offset:
                        self.offset += len(fh.readline(TAIL_BYTES))
                fh.seek(self.offset)
                chunk = fh.read(CHUNK_BYTES)
        except (OSError, WaveError):  # not there yet, or a link or FIFO: nothing to show
            return ""
        self.offset += len(chunk)
        text = self._partial + self._decoder.decode(chunk)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        done, _, self._partial = text.rpartition("\n")
        if len(self._partial) >= CHUNK_BYTES:  # a line with no end: shown in parts
            done, self._partial = f"{done}\n{self._partial}" if done else self._partial, ""
        return strip_controls(done, newlines=True) if done else ""
