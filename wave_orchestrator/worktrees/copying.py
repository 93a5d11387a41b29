"""``setup.copy``: the person's files (``.env``...) copied into an agent's worktree.

The worktree is the agent's: its branch may hold a symbolic link, a FIFO or a folder where a
copied file goes. So nothing is written through a link (each folder is opened ``O_NOFOLLOW``,
each file written to a fresh temporary name and renamed over the target), nothing blocks on a
FIFO, and no copy is readable by anyone but its owner. The main checkout is trusted.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path, PurePosixPath

from ..errors import WaveError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SOURCE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OWNER_ONLY = 0o700


class CopyRefused(WaveError):
    """A ``setup.copy`` path that is not copied safely: outside the repository, a source that
    is not a file, folder or link, or a target that is a link or a special file."""


def copy_setup_files(source_root: Path, target_root: Path, paths: Sequence[str]) -> list[str]:
    """Copy each repository-relative path from ``source_root`` into ``target_root``; the
    relative paths of the files and links written, for the logs. A missing source is skipped."""
    copier = _Copier(source_root, target_root)
    root_fd = os.open(target_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in paths:
            copier.copy_path(root_fd, _relative_parts(rel))
    finally:
        os.close(root_fd)
    return copier.written


def _relative_parts(rel: str) -> tuple[str, ...]:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts:
        raise CopyRefused(
            f"setup.copy: {rel!r} is not inside the repository: "
            "give a relative path with no '..' in it"
        )
    if not path.parts:
        raise CopyRefused(f"setup.copy: {rel!r} names no file: give a relative path")
    return path.parts


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a file"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def _temp_name(name: str) -> str:
    import secrets  # random and hmac behind it: only when a wave copies setup files

    return f".{name[:200]}.{secrets.token_hex(8)}.wave-copy"


class _Copier:
    """One ``copy_setup_files`` call: the two roots (for messages) and what was written."""

    def __init__(self, source_root: Path, target_root: Path) -> None:
        self.source_root = source_root
        self.target_root = target_root
        self.written: list[str] = []

    def copy_path(self, root_fd: int, parts: tuple[str, ...]) -> None:
        source = self.source_root.joinpath(*parts)
        try:
            mode = os.lstat(source).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return
        dir_fd = self._enter_parents(root_fd, parts)
        try:
            self._copy_entry(source, mode, dir_fd, parts)
        finally:
            os.close(dir_fd)

    def _enter_parents(self, root_fd: int, parts: tuple[str, ...]) -> int:
        """A descriptor on the folder that holds ``parts[-1]``, each folder on the way checked
        (or made) one component at a time."""
        dir_fd = os.dup(root_fd)
        for depth in range(1, len(parts)):
            try:
                child_fd = self._enter_dir(dir_fd, parts[:depth])
            finally:
                os.close(dir_fd)
            dir_fd = child_fd
        return dir_fd

    def _copy_entry(self, source: Path, mode: int, dir_fd: int, parts: tuple[str, ...]) -> None:
        if stat.S_ISLNK(mode):
            self._copy_link(source, dir_fd, parts)
        elif stat.S_ISDIR(mode):
            child_fd = self._enter_dir(dir_fd, parts)
            try:
                self._copy_tree(source, child_fd, parts)
            finally:
                os.close(child_fd)
        else:  # a file; anything else is refused once opened, without blocking
            self._copy_file(source, dir_fd, parts)

    def _copy_tree(self, source: Path, dir_fd: int, parts: tuple[str, ...]) -> None:
        with os.scandir(source) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            self._copy_entry(Path(entry.path), mode, dir_fd, (*parts, entry.name))

    def _check_target(self, dir_fd: int, parts: tuple[str, ...], want_dir: bool) -> bool:
        """Whether the target exists as the kind wanted; refuses a link, a special file, or a
        file where a folder goes (and the reverse)."""
        shown, where = "/".join(parts), self.target_root
        try:
            mode = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(mode):
            to = os.readlink(parts[-1], dir_fd=dir_fd)
            raise CopyRefused(
                f"setup.copy: {shown} in {where} is a symbolic link (to {to}), "
                "refusing to write through it"
            )
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise CopyRefused(
                f"setup.copy: {shown} in {where} is {_kind(mode)}, not a file or folder, "
                "refusing to write to it"
            )
        if stat.S_ISDIR(mode) != want_dir:
            wanted = "a folder" if want_dir else "a file or link"
            raise CopyRefused(
                f"setup.copy: {shown} in {where} is {_kind(mode)} but {wanted} is copied "
                "there, refusing to replace it"
            )
        return True

    def _enter_dir(self, dir_fd: int, parts: tuple[str, ...]) -> int:
        """A new descriptor on the folder ``parts[-1]`` under ``dir_fd``, made 0o700 if
        missing; ``O_NOFOLLOW`` refuses a link swapped in after the check."""
        if not self._check_target(dir_fd, parts, want_dir=True):
            with suppress(FileExistsError):
                os.mkdir(parts[-1], _OWNER_ONLY, dir_fd=dir_fd)
        try:
            return os.open(parts[-1], _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self._check_target(dir_fd, parts, want_dir=True)  # raises the refusal
            raise

    def _open_source(self, source: Path, parts: tuple[str, ...]) -> tuple[int, os.stat_result]:
        def refused(mode: int) -> CopyRefused:
            return CopyRefused(
                f"setup.copy: {'/'.join(parts)} in {self.source_root} is {_kind(mode)}, not a "
                "file, folder or symbolic link: take it out of setup.copy"
            )

        try:
            fd = os.open(source, _SOURCE_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link swapped in, a socket
                raise refused(os.lstat(source).st_mode) from exc
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise refused(st.st_mode)
        return fd, st

    def _copy_file(self, source: Path, dir_fd: int, parts: tuple[str, ...]) -> None:
        src_fd, st = self._open_source(source, parts)
        with os.fdopen(src_fd, "rb") as src:
            self._check_target(dir_fd, parts, want_dir=False)
            temp = _temp_name(parts[-1])
            out_fd = os.open(temp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
            try:
                with os.fdopen(out_fd, "wb") as out:
                    shutil.copyfileobj(src, out)
                    out.flush()
                    os.fchmod(out.fileno(), stat.S_IMODE(st.st_mode) & _OWNER_ONLY)
                    os.utime(out.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))
                os.replace(temp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
        self.written.append("/".join(parts))

    def _copy_link(self, source: Path, dir_fd: int, parts: tuple[str, ...]) -> None:
        self._check_target(dir_fd, parts, want_dir=False)
        temp = _temp_name(parts[-1])
        os.symlink(os.readlink(source), temp, dir_fd=dir_fd)
        try:
            if os.utime in os.supports_follow_symlinks:
                st = os.lstat(source)
                times = (st.st_atime_ns, st.st_mtime_ns)
                os.utime(temp, ns=times, dir_fd=dir_fd, follow_symlinks=False)
            os.replace(temp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        self.written.append("/".join(parts))
