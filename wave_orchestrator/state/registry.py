"""The user-wide list of running launchers (`wave ps`): one small JSON file per launcher under
``$XDG_STATE_HOME/wave/launchers/``, written when a launcher takes its lane and removed when
it ends. A launcher killed with -9 leaves its file behind; readers prune it (``prune``).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..errors import WaveError
from .fsutil import UnsafePath, ensure_dir, parse_json, read_text, write_json_atomic


def registry_dir() -> Path:
    """``$XDG_STATE_HOME/wave/launchers``, else ``~/.local/state/wave/launchers``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "wave" / "launchers"


def register_launcher(entry: dict[str, Any]) -> Path | None:
    """Record a running launcher; best effort: a read-only home never stops a launch."""
    path = registry_dir() / f"{entry['pid']}.json"
    try:
        ensure_dir(path.parent)
        write_json_atomic(path, entry)
    except (OSError, ValueError, WaveError):  # a full or odd home: `wave ps` just misses it
        return None
    return path


def unregister_launcher(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


ENTRY_RE = re.compile(r"([1-9][0-9]{0,9})\.json")


def process_started(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/<pid>/stat field 22): with the
    pid, what names one process for good (None without /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _real_folder(folder: Path) -> bool:
    """The registry folder and its parent are real folders (not links): wave never lists,
    nor deletes in, a folder a link points it to."""
    for path in (folder.parent, folder):
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def read_entries() -> list[tuple[Path, dict[str, Any]]]:
    """Every entry wave could have written, with its file: ``<pid>.json``, a regular file
    whose ``pid`` is that pid. A file of that name that says otherwise is removed (it helps
    nobody); any other file is left alone, and a folder behind a link is not read at all."""
    found = []
    folder = registry_dir()
    if not _real_folder(folder):
        return []
    for name in sorted(os.listdir(folder)):
        match = ENTRY_RE.fullmatch(name)
        if match is None:
            continue
        path = folder / name
        try:
            data = parse_json(read_text(path, limit=64 * 1024))  # no link, no FIFO
        except UnsafePath:
            continue
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("pid") == int(match.group(1)):
            found.append((path, data))
        else:
            unregister_launcher(path)
    return found
