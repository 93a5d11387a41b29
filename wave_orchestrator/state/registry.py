"""The user-wide list of running launchers (`wave ps`): one small JSON file per launcher under
``$XDG_STATE_HOME/wave/launchers/``, written when a launcher takes its lane and removed when
it ends. A launcher killed with -9 leaves its file behind; readers prune it (``prune``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ..errors import WaveError
from .fsutil import ensure_dir, read_json, write_json_atomic


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


def read_entries() -> list[tuple[Path, dict[str, Any]]]:
    """Every readable entry with its file; unreadable files are removed (they help nobody)."""
    found = []
    folder = registry_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = read_json(path)
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("pid"), int):
            found.append((path, data))
        else:
            unregister_launcher(path)
    return found
