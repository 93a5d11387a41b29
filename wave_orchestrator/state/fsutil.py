"""Atomic JSON files and append-only JSON-lines logs: the only two ways `wave` writes state."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # surrogateescape: a path or value that is not UTF-8 is written as the bytes it was
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_text(data: Any, **options: Any) -> str:
    """JSON with non-ASCII kept, except lone surrogates (bytes of a path or value that is not
    UTF-8), written as ``\\udcXX`` escapes: the file stays UTF-8 and reads back the same."""
    text = json.dumps(data, ensure_ascii=False, **options)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json_text(data, indent=2) + "\n")


def read_json(path: Path) -> Any:
    """Read a JSON file; raises ``OSError`` or ``ValueError`` for the caller to classify."""
    return json.loads(path.read_text(encoding="utf-8"))


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one line with one ``write`` on an O_APPEND descriptor: lines never interleave."""
    line = (json_text(record, separators=(",", ":")) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Yield each valid object; a torn or invalid line is skipped, never fatal."""
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record
