"""Following a file for the dashboard's panes: an agent's output (or the launcher's log, or the
events) from the end of the file, then what is appended, a bounded chunk per read (a 500 MB
log costs one chunk of memory); the board, which is rewritten whole, again when it changed."""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path
from typing import Any

from ..errors import WaveError
from ..sanitize import strip_controls
from ..state.events import local_clock
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


class EventFollower(LogFollower):
    """``events.jsonl`` as a timeline: a line per event, at this machine's clock. The fields
    are decoded before they are cleaned (a JSON ``\\u001b`` is an escape too)."""

    def read(self) -> str:
        text = super().read()
        return "\n".join(event_line(line) for line in text.split("\n") if line.strip())


def event_line(line: str) -> str:
    """``10:00:00  agent_started  wave 3  api  key=value ...``; a line that is no event as it is."""
    record = _record(line)
    if record is None:
        return strip_controls(line)  # no record: its words, never its escapes
    parts = [local_clock(str(record.get("at", ""))), str(record.get("event", "?"))]
    parts += _where(record)
    rest = {k: v for k, v in record.items() if k not in ("at", "event", "wave", "agent")}
    parts += [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in rest.items()]
    return strip_controls("  ".join(parts))


class LauncherLogFollower(LogFollower):
    """``launcher.log`` as a person reads it: a JSON record per line, shown as its time, level,
    words and fields (decoded before they are cleaned, as the events are)."""

    def read(self) -> str:
        text = super().read()
        return "\n".join(launcher_line(line) for line in text.split("\n") if line.strip())


LOG_KEYS = ("at", "level", "event", "wave", "agent", "logger", "lane")  # said first, or not


def launcher_line(line: str) -> str:
    """``10:00:00  info  agent launched  wave 3  api  attempt=1 session=w3-api``: the lane is
    the pane's, the logger is for whoever debugs wave; a line that is no record as it is."""
    record = _record(line)
    if record is None:
        return strip_controls(line)  # no record: its words, never its escapes
    parts = [local_clock(str(record.get("at", ""))), str(record.get("level", "?"))]
    parts.append(str(record.get("event", "")))
    parts += _where(record)
    fields = [f"{k}={_field(v)}" for k, v in record.items() if k not in LOG_KEYS]
    return strip_controls("  ".join([*parts, " ".join(fields)]).rstrip())


def _record(line: str) -> dict[str, Any] | None:
    """A line of a JSON-lines file as its record, decoded before anything of it is cleaned
    (a JSON ``\\u001b`` is an escape too); None for a line that is no record."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _where(record: dict[str, Any]) -> list[str]:
    """``wave 3`` and the agent, those of them the record names."""
    where = [f"wave {record['wave']}"] if "wave" in record else []
    return where + ([str(record["agent"])] if "agent" in record else [])


def _field(value: object) -> str:
    """A field's value as words: quoted when it has spaces (``title="Build and review"``)."""
    if isinstance(value, str):
        return value if value and not any(c.isspace() for c in value) else json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


class WholeFile:
    """A file the launcher rewrites whole (the board): its text again when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int] | bool | None = False  # False: not read yet

    def read(self) -> str | None:
        """The file's text when it changed since the last read ('' while there is none), else
        None; a stat per call, a read only on a change."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == self._seen:
            return None
        self._seen = stamp
        try:
            with open_read(self.path) as fh:
                data = fh.read(CHUNK_BYTES)
        except (OSError, WaveError):  # not there, or a link or FIFO: nothing to show
            return ""
        return strip_controls(data.decode("utf-8", "replace"), newlines=True)
