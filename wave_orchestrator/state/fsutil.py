"""The one place that opens state files: atomic writes, untrusted reads, state folders.

A state dir can hold what a repository shipped (a symlink, a FIFO, a folder where a file
belongs), so nothing here follows a link or waits on a non-regular file: every open uses
``O_NOFOLLOW | O_NONBLOCK`` and checks it got a regular file, and every folder made under a
state root refuses a symlinked component. Append-only JSON lines are ``state.jsonl``'s, and
removing a tree (only one wave marked as its own) is ``state.owned_trees``'s.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import stat
from _thread import get_ident  # threading's, without loading threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import WaveError

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
READ_LIMIT = 16 * 1024 * 1024  # a JSON state file bigger than this is not one wave wrote

_ROOTS: set[Path] = set()
_VERIFIED: set[str] | None = None  # inside ``folders_checked_once``: folders already checked


class UnsafePath(WaveError, OSError):
    """A state path is a symlink, a FIFO, a device or a folder where wave expects a file (or
    the reverse): wave neither follows nor blocks on it. An ``OSError`` too, so a reader that
    treats unreadable state as absent or failed keeps doing so."""


class StateWriteFailed(WaveError, OSError):
    """A state write failed (disk full, read-only folder): one line naming the path and the
    error. An ``OSError`` too, so a best-effort writer (logs, dashboard) can shrug it off."""

    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")
        self.path = path
        self.errno = exc.errno


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failed write into ``StateWriteFailed``; ``UnsafePath`` is already a message."""
    try:
        yield
    except (UnsafePath, StateWriteFailed):
        raise
    except OSError as exc:
        raise StateWriteFailed(path, exc) from exc


def register_state_root(root: Path) -> None:
    """Folders below ``root`` are wave's: none of them may be a symlink."""
    _ROOTS.add(Path(os.path.abspath(root)))


def refused(path: Path, what: str) -> UnsafePath:
    return UnsafePath(f"{path} is {what}; wave does not follow or replace it (remove it)")


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words for a message (a FIFO, a folder, ...)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_or_missing(path: Path) -> None:
    """Raise ``UnsafePath`` unless ``path`` is absent or a regular file (not a link)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise refused(path, file_kind(mode))


@contextlib.contextmanager
def folders_checked_once() -> Iterator[None]:
    """Within this block, a folder ``ensure_dir`` has checked is not checked again: for one
    command writing many files into the folders it has just made (a dry run), not for a
    launcher that lives as long as its agents, who may change the state dir meanwhile."""
    global _VERIFIED
    outer, _VERIFIED = _VERIFIED, set() if _VERIFIED is None else _VERIFIED
    try:
        yield
    finally:
        _VERIFIED = outer


def forget_checked(path: Path) -> None:
    """``path`` and what is below it are about to go: check them again when made again."""
    if _VERIFIED:
        top = str(path)
        _VERIFIED.difference_update(
            [d for d in _VERIFIED if d == top or d.startswith(top + os.sep)]
        )


def ensure_dir(path: Path) -> None:
    """``mkdir -p`` that refuses a symlink (or a non-folder) for any component below a
    registered state root; outside the roots it is a plain ``mkdir -p``."""
    text = os.path.abspath(path)
    if _VERIFIED is not None and text in _VERIFIED:
        return
    with writing(Path(text)):
        _ensure_dir(text)


def _state_root(text: str) -> str | None:
    """The registered root ``text`` is in (string prefixes: ``Path.parents`` costs more)."""
    for root in map(str, _ROOTS):
        if text == root or text.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


def _ensure_dir(text: str) -> None:
    root = _state_root(text)
    if root is None:
        Path(text).mkdir(parents=True, exist_ok=True)
        return
    if not os.path.isdir(root):  # a stat, not a failing mkdir, for the usual root that exists
        Path(root).mkdir(parents=True, exist_ok=True)
    current, below = root, text[len(root) :].strip(os.sep)
    for part in below.split(os.sep) if below else ():
        current = os.path.join(current, part)
        if _VERIFIED is not None and current in _VERIFIED:
            continue
        try:  # look first: most folders exist, and a failed mkdir costs an exception
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            try:
                os.mkdir(current)
                mode = stat.S_IFDIR
            except FileExistsError:  # made meanwhile by another process: check it as below
                mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            what = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
            raise refused(Path(current), what)
        if _VERIFIED is not None:
            _VERIFIED.add(current)


def _new_temp(path: Path) -> tuple[int, str]:
    """A fresh temporary file beside ``path``, named for this process and thread (no random
    names to draw: the launcher writes hundreds of these a second at fleet scale). Whatever
    is found under that name (a crash's leftover, a planted link) is removed, never opened."""
    tmp = str(path.parent / f".{path.name}.{os.getpid()}.{get_ident()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(tmp, flags, 0o600), tmp
    except FileExistsError:
        os.unlink(tmp)  # a link is removed, not followed
        return os.open(tmp, flags, 0o600), tmp


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one.
    A link or non-regular file in its place is refused, never written through."""
    ensure_dir(path.parent)
    with writing(path):
        check_regular_or_missing(path)
        fd, tmp = _new_temp(path)
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
    import json  # commands that read or write state: `wave validate` does neither

    text = json.dumps(data, ensure_ascii=False, **options)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json_text(data, indent=2) + "\n")


def open_regular(path: Path, flags: int = _READ) -> int:
    """A descriptor on ``path`` only if it is a regular file: no link followed, no FIFO or
    device waited on. Raises ``FileNotFoundError`` when absent, ``UnsafePath`` when odd."""
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refused(path, "a symbolic link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise refused(path, file_kind(os.lstat(path).st_mode)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise refused(path, file_kind(mode))
    return fd


def open_read(path: Path) -> IO[bytes]:
    """A binary reader on a regular file (logs, prompts): see ``open_regular``."""
    return os.fdopen(open_regular(path), "rb")


def read_text(path: Path, limit: int = READ_LIMIT) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes."""
    with open_read(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes")
    return data.decode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number wave accepts")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def _bounded_int(text: str) -> int:
    value = int(text)
    if abs(value) >= 2**63:
        raise ValueError(f"{text[:20]}... is out of range")
    return value


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: NaN, Infinity, numbers that overflow a float and integers beyond 64 bits
    are errors, not values; so is nesting too deep to parse (``RecursionError`` becomes
    ``ValueError``)."""
    import json

    try:
        return json.loads(
            text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        )
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def read_json(path: Path) -> Any:
    """Read an untrusted JSON file; raises ``OSError`` (``UnsafePath`` for a link, FIFO or
    folder) or ``ValueError`` for the caller to classify."""
    return parse_json(read_text(path))


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    """``write_atomic``, unless ``path`` already is a regular file of ours holding ``text``
    with ``mode``: a preview made again mostly is, and a new file costs far more than a read
    on some disks. Whether it wrote."""
    ensure_dir(path.parent)  # a link among the folders is refused here, even with no write
    data = text.encode("utf-8", "surrogateescape")
    try:
        fd = open_regular(path)  # no link followed, no FIFO waited on
    except OSError:
        pass  # absent, or odd: ``write_atomic`` replaces it or says why it will not
    else:
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if (
                stat.S_IMODE(info.st_mode) == mode
                and info.st_uid == os.geteuid()
                and info.st_size == len(data)
                and fh.read(len(data) + 1) == data
            ):
                return False
    write_atomic(path, text, mode)
    return True


def write_new(path: Path, text: str, mode: int = 0o644) -> bool:
    """Create ``path`` holding ``text`` in place: no temporary file, rename or chmod, which
    a file system under load makes costly. False, with nothing written, when anything is
    already there (a file, a link, a FIFO): the caller decides. Only for files nobody reads
    while they are written (a dry run's, under its lock): a reader could see half of one."""
    data = memoryview(text.encode("utf-8", "surrogateescape"))  # before anything is made
    ensure_dir(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with writing(path):
        try:
            fd = os.open(path, flags, mode)
        except FileExistsError:
            return False
        try:
            while data:
                data = data[os.write(fd, data) :]
            if stat.S_IMODE(os.fstat(fd).st_mode) != mode:  # the umask took bits away
                os.fchmod(fd, mode)
        except BaseException:
            with contextlib.suppress(OSError):  # the write's own error is the one to see
                os.unlink(path)  # a failed write leaves no half of a file
            raise
        finally:
            os.close(fd)
    return True
