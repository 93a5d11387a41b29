"""Removing what wave made, and nothing else: a tree is cleared or pruned only when wave
marked its folder as its own (``OWNED_MARKER``), and every step goes by descriptor, so a
link found inside is removed, never followed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .fsutil import (
    UnsafePath,
    check_regular_or_missing,
    ensure_dir,
    file_kind,
    forget_checked,
    refused,
    write_atomic,
    writing,
)

OWNED_MARKER = ".wave-owned"  # written in a folder wave created and may remove again


def _owned_tree(path: Path, name: str) -> Path | None:
    """``path/name`` if wave created it, None if it is absent (``path`` then gets wave's
    marker, written before wave makes ``path/name``); a tree wave did not create is refused."""
    ensure_dir(path)
    marker, target = path / OWNED_MARKER, path / name
    try:
        check_regular_or_missing(marker)
        owned = marker.exists()
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        if not owned:
            write_atomic(marker, "created by wave: wave may remove the folders it made here\n")
        return None
    if not owned:
        raise UnsafePath(
            f"{target} exists but wave did not create it (no {OWNED_MARKER} beside it); "
            "wave will not delete it: move it away and run again"
        )
    if not stat.S_ISDIR(mode):
        raise refused(target, file_kind(mode))
    return target


def clear_owned(path: Path, name: str) -> None:
    """Remove the folder ``path/name`` if wave created it; a tree wave did not create is
    refused."""
    target = _owned_tree(path, name)
    if target is not None:
        import shutil  # removing commands only: validate and status never load it

        forget_checked(Path(os.path.abspath(target)))
        shutil.rmtree(target)  # fd-based on Linux: links inside are unlinked, never followed


def prune_owned(path: Path, name: str, keep: Iterable[Path]) -> None:
    """Leave in the folder ``path/name``, if wave created it, only the regular files ``keep``
    names and the folders holding them: whatever else is there goes, links and folders
    standing where a kept file should be included. A tree wave did not create is refused."""
    target = _owned_tree(path, name)
    if target is None:
        return
    top = os.path.abspath(target)
    wanted: dict[str, bool] = {}  # path -> whether it is a folder
    for file in map(os.path.abspath, keep):
        wanted[file] = False
        folder = os.path.dirname(file)
        while folder.startswith(top + os.sep) and folder not in wanted:
            wanted[folder] = True
            folder = os.path.dirname(folder)
    with writing(target):
        fd = os.open(top, _FOLDER)
        try:
            _prune(fd, top, wanted)
        finally:
            os.close(fd)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _prune(fd: int, at: str, wanted: dict[str, bool]) -> None:
    """Remove from the folder open as ``fd`` (which is ``at``) what ``wanted`` does not hold;
    every step goes by descriptor, so a folder swapped for a link meanwhile is not followed."""
    with os.scandir(fd) as listing:
        entries = list(listing)
    for entry in entries:
        path, folder = os.path.join(at, entry.name), entry.is_dir(follow_symlinks=False)
        want = wanted.get(path)
        if want and folder:
            child = os.open(entry.name, _FOLDER, dir_fd=fd)
            try:
                _prune(child, path, wanted)
            finally:
                os.close(child)
        elif want is False and entry.is_file(follow_symlinks=False):
            continue
        elif folder:
            import shutil

            forget_checked(Path(path))
            shutil.rmtree(entry.name, dir_fd=fd)
        else:
            os.unlink(entry.name, dir_fd=fd)  # a link goes, what it points to stays
