"""Repository-relative paths as lane files give them (owns, deliverables, setup.copy)."""

from __future__ import annotations

import posixpath
import unicodedata


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
