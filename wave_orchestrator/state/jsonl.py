"""Append-only JSON lines (events, metrics, the ledger, the coordination log): each line
written by one ``write`` on an ``O_APPEND`` descriptor, so writers never interleave, and read
back line by line, a torn or invalid line skipped, never fatal."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .fsutil import (
    APPEND_FLAGS,
    ensure_dir,
    json_text,
    open_read,
    open_regular,
    parse_json,
    writing,
)


def append_line(path: Path, line: str) -> None:
    """Append ``line`` with one ``write`` on an O_APPEND descriptor: lines never interleave.
    A short write (a nearly full disk) is ended with a newline, so the torn line cannot
    swallow the next one, and raised: the caller must not report the line as written."""
    ensure_dir(path.parent)
    data = line.encode()
    with writing(path):
        fd = open_regular(path, APPEND_FLAGS)
        try:
            written = os.write(fd, data)
            if written < len(data):
                with contextlib.suppress(OSError):
                    os.write(fd, b"\n")
                short = f"only {written} of {len(data)} bytes written (disk full?)"
                raise OSError(errno.ENOSPC, short, str(path))
        finally:
            os.close(fd)


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    append_line(path, json_text(record, separators=(",", ":")) + "\n")


MAX_LINE = 1 << 20  # a JSON-lines record of wave's is a few KB; a longer line is skipped


def read_jsonl(
    path: Path, start: int = 0, on_skip: Callable[[int], None] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield each valid object (from byte ``start``); a torn or invalid line is skipped,
    never fatal (nor is a missing file or one that is not a regular file). A line longer
    than ``MAX_LINE`` is skipped without ever being held whole (``on_skip(its length)``)."""
    for record, _ in read_jsonl_from(path, start, on_skip, whole_lines=False):
        if record is not None:
            yield record


def read_jsonl_from(
    path: Path,
    start: int = 0,
    on_skip: Callable[[int], None] | None = None,
    whole_lines: bool = True,
) -> Iterator[tuple[dict[str, Any] | None, int]]:
    """Like ``read_jsonl``, with the offset just past each line (None for a line that is no
    valid object): a reader that follows a growing file goes on from there. With
    ``whole_lines``, a last line without its newline (still being written) is left for the
    next read."""
    try:
        fh = open_read(path)
    except OSError:
        return
    with fh:
        fh.seek(start)
        offset = start
        while line := fh.readline(MAX_LINE + 1):
            if len(line) > MAX_LINE:
                rest = 0 if line.endswith(b"\n") else _skip_to_newline(fh)
                skipped = len(line) + rest
                offset += skipped
                if on_skip is not None:
                    on_skip(skipped)
                yield None, offset
                continue
            if whole_lines and not line.endswith(b"\n"):
                return  # the writer's line is not complete yet
            offset += len(line)
            try:
                record = parse_json(line.decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                record = None
            yield (record if isinstance(record, dict) else None), offset


def _skip_to_newline(fh: Any) -> int:
    """Read past the rest of an over-long line in 64 KiB pieces; the bytes passed over."""
    passed = 0
    while chunk := fh.readline(65536):
        passed += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return passed
