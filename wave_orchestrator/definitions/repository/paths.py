"""Paths in the repository: relative ones as lane files give them (owns, deliverables,
setup.copy), and where one really leads once links are followed."""

from __future__ import annotations

import posixpath
import unicodedata
from pathlib import Path


def _hostile_char(c: str) -> bool:
    """Control, format and line/paragraph-separator characters have no place in a path."""
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")


def normalise_repo_path(raw: str) -> str | None:
    """A repository-relative POSIX path, or None when it is absolute, escapes, or is hostile."""
    if not raw or raw.startswith(("/", "~")) or any(_hostile_char(c) for c in raw):
        return None
    trailing = raw.endswith("/")
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../") or norm == ".":
        return None
    return norm + "/" if trailing else norm


def inside_repository(repo: Path, rel: str) -> Path | None:
    """The real path of ``repo/rel`` when it stays inside the repository, else None: a link
    (anywhere on the way) that leads out of it, or a link loop, confines nothing."""
    try:
        target = (repo / rel).resolve()
        root = repo.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
        return None
    return target if target == root or target.is_relative_to(root) else None
