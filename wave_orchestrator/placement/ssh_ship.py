"""What an agent's try needs on its host, packed for one ``tar -x`` there.

Its files (run.sh, its prompts) name this machine's paths: the repository, the state
directory, its worktree. On the host each such path lives under the host's ``root/``, so the
files are shipped with every path under the checkout's roots moved there (``/repo/x`` becomes
``<root>/root/repo/x``); on the host, paths it names but that are not there (the state
directory's other files) are simply absent. The launcher's environment file, its private bin
folder and setup copies are never shipped: nothing of this machine's secrets leaves it but the
agent's own environment, in its owner-only run.sh.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..state.fsutil import read_text
from .ssh_requests import SHIM

SHIPPED = ("run.sh", "prompt.md", "retry-prompt.md")  # what the wrapper reads of its folder
SKILLS = "skills"  # the agent's skill bundles as wave wrote them (its CLI's argv names them)
SKILLS_LIMIT = 4 << 20  # the most of them shipped: wave wrote them, a bound all the same


class Relocation:
    """This machine's paths under ``roots`` as a host keeps them (below ``<host root>/root``)."""

    def __init__(self, roots: Iterable[Path], host_root: str) -> None:
        ordered = sorted({str(r).rstrip("/") for r in roots if str(r) != "/"}, key=len)
        self.base = f"{host_root}/root"
        # Longest first; a root ends where a path word does (not /repo in /repo2).
        words = "|".join(re.escape(r) for r in reversed(ordered))
        self._re = re.compile(f"(?<![\\w./~-])(?:{words})(?=[/'\"\\s:;=)]|$)") if words else None

    def path(self, local: Path | str) -> str:
        """Where ``local`` (an absolute path) is on the host."""
        return f"{self.base}{local}"

    def text(self, text: str) -> str:
        """``text`` with each path under the roots moved to the host's."""
        if self._re is None:
            return text
        return self._re.sub(lambda m: self.base + m.group(0), text)


def pack(agent_dir: Path, extra_dirs: Sequence[Path], where: Relocation) -> bytes:
    """A tar of the agent's files, relocated, named relative to the host's ``root/`` (for
    ``tar -x -C <root>/root``); ``extra_dirs`` are folders its wrapper writes into (its
    account's backoff folder), made empty."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in (agent_dir, *extra_dirs):
            info = tarfile.TarInfo(str(folder).lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o700
            tar.addfile(info)
        for name in SHIPPED:
            path = agent_dir / name
            try:
                data = where.text(read_text(path)).encode()
            except FileNotFoundError:
                continue
            _add(tar, path, data, 0o700 if name == "run.sh" else 0o600)
        _add_skills(tar, agent_dir / SKILLS, where)
        bin_dir = agent_dir / "bin"  # its `wave`, first on its PATH there
        info = tarfile.TarInfo(str(bin_dir).lstrip("/"))
        info.type, info.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(info)
        _add(tar, bin_dir / "wave", SHIM.encode(), 0o700)
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, path: Path, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(str(path).lstrip("/"))
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_skills(tar: tarfile.TarFile, folder: Path, where: Relocation) -> None:
    """Its skill files (regular files only, never through a link), relocated: a skill names
    its references by their path here."""
    if not folder.is_dir() or folder.is_symlink():
        return
    left = SKILLS_LIMIT
    files = [Path(top, name) for top, _, names in os.walk(folder) for name in names]
    for path in sorted(files):  # os.walk goes into no linked folder
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = where.text(read_text(path, limit=left)).encode()
        except (OSError, ValueError):  # a link planted meanwhile, not text, or too much
            continue
        left -= len(data)
        _add(tar, path, data, 0o600)


class GitSide(Protocol):
    """The git work on this machine an SSH lane needs (the runtime gives it: git runs in one
    place)."""

    def head(self, cwd: Path) -> tuple[str, str] | None:
        """(branch, commit) of an agent's own worktree; None for the shared checkout."""
        ...

    def push(self, cwd: Path, url: str, refspec: str, env: Mapping[str, str]) -> None: ...

    def take(self, cwd: Path, url: str, ref: str, env: Mapping[str, str]) -> None:
        """Fetch ``ref`` and move the worktree's branch to it (fast-forward only)."""
        ...
