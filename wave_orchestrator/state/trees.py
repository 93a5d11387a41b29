"""Copying a tree an agent made (its folder, reused by a new run of a wave): by descriptor,
without recursion, regular files and folders only, within limits of depth, size and count.

An agent can leave a folder 700 levels deep (``shutil.copytree`` recurses once per level), a
link to the person's files, a FIFO that blocks whoever opens it, or a sparse file that claims a
terabyte: none of them may stop a relaunch or reach beyond the tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from ..errors import WaveError
from .fsutil import UnsafePath, ensure_dir, file_kind

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _refuse(path: Path, what: str) -> UnsafePath:
    return UnsafePath(f"{path} is {what}; wave does not follow or replace it (remove it)")


class CopyRefused(WaveError, OSError):
    """A tree is too deep, too big or holds too many files to copy: what was copied of it is
    not a copy. An ``OSError`` too, like every other way a copy fails."""


_COPY_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_COPY_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def copy_plain_tree(
    src: Path, dst: Path, *, max_depth: int, max_bytes: int, max_files: int
) -> None:
    """Copy the folders and regular files of ``src`` into ``dst`` (made if absent): a tree an
    agent made, so nothing else in it is followed or opened (links, FIFOs, sockets, devices
    are left out), no path is ever spelled whole (every step goes by descriptor: a tree deeper
    than a path may be long is fine) and nothing recurses. Raises ``CopyRefused`` past
    ``max_depth`` folders, ``max_bytes`` read or ``max_files`` entries, and ``OSError``
    (``UnsafePath`` for a link at ``src`` or where the copy writes) for anything else; what
    was copied until then stays for the caller to remove."""
    ensure_dir(dst)
    budget = _Budget(src, max_bytes, max_files)
    stack = [_Frame(partial(_open_folder, src), partial(_open_folder, dst), 0)]
    try:
        while stack:
            frame = stack[-1]
            entry = next(frame.listing, None)
            if entry is None:
                stack.pop().close()
                continue
            budget.entry()
            if entry.is_dir(follow_symlinks=False):
                if frame.depth >= max_depth:
                    raise CopyRefused(f"{src} is more than {max_depth} folders deep")
                mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) | 0o700
                stack.append(
                    _Frame(
                        partial(_open_folder, Path(entry.name), frame.src),
                        partial(_target_folder, frame.dst, entry.name, mode),
                        frame.depth + 1,
                    )
                )
            elif entry.is_file(follow_symlinks=False):
                _copy_file(frame.src, frame.dst, entry.name, budget)
    finally:
        while stack:
            stack.pop().close()


class _Frame:
    """One folder being copied: both its descriptors and its listing, closed together (as
    many are open at once as the copy is deep, never one per folder of the tree)."""

    def __init__(self, open_src: Callable[[], int], open_dst: Callable[[], int], depth: int):
        self.depth = depth
        self._closing = contextlib.ExitStack()
        try:
            self.src = open_src()
            self._closing.callback(os.close, self.src)
            self.dst = open_dst()
            self._closing.callback(os.close, self.dst)
            self.listing: Iterator[os.DirEntry[str]] = self._closing.enter_context(
                os.scandir(self.src)
            )
        except BaseException:
            self._closing.close()
            raise

    def close(self) -> None:
        self._closing.close()


class _Budget:
    """What a copy may still take: bytes and entries."""

    def __init__(self, src: Path, max_bytes: int, max_files: int) -> None:
        self.src, self.bytes, self.files = src, max_bytes, max_files
        self.max_bytes, self.max_files = max_bytes, max_files

    def entry(self) -> None:
        self.files -= 1
        if self.files < 0:
            raise CopyRefused(f"{self.src} holds more than {self.max_files} files and folders")

    def take(self, size: int) -> None:
        self.bytes -= size
        if self.bytes < 0:
            raise CopyRefused(f"{self.src} holds more than {self.max_bytes} bytes")


def _open_folder(path: Path, at: int | None = None) -> int:
    """A descriptor on the folder ``path`` (relative to the folder ``at``), never a link."""
    try:
        return os.open(path, _FOLDER, dir_fd=at)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        mode = os.lstat(path, dir_fd=at).st_mode  # a link (to a folder or not), or a file
    raise _refuse(path, file_kind(mode))


def _target_folder(at: int, name: str, mode: int) -> int:
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, mode, dir_fd=at)
    return _open_folder(Path(name), at)


def _copy_file(src_fd: int, dst_fd: int, name: str, budget: _Budget) -> None:
    """One regular file, opened without following a link or waiting on a FIFO (one swapped in
    since the listing is left out), copied a piece at a time against the byte budget."""
    try:
        fd = os.open(name, _COPY_READ, dir_fd=src_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return  # became a link or a socket since it was listed: not a plain file
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        # A new file, never one found there: a link or a hard link to someone's file planted
        # where the copy writes goes, and is not written through.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dst_fd)
        out = os.open(name, _COPY_WRITE, 0o600, dir_fd=dst_fd)
        try:
            while chunk := os.read(fd, _CHUNK):
                budget.take(len(chunk))
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
            os.fchmod(out, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(fd)
