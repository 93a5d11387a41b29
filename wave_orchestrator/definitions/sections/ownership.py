"""Owned paths: when two overlap, and an index that finds the first earlier claim
overlapping a path in a few lookups per folder level, so a wave of thousands of agents is
checked in n log n, not by comparing every pair."""

from __future__ import annotations

from typing import NamedTuple


def paths_overlap(a: str, b: str) -> bool:
    """Two owned paths overlap when equal or when one is a folder holding the other."""
    if a.rstrip("/") == b.rstrip("/"):
        return True
    return (a.endswith("/") and b.startswith(a)) or (b.endswith("/") and a.startswith(b))


class Claim(NamedTuple):
    """A path an agent owns, in the order the wave file lists it (the earlier claim wins)."""

    order: int
    owner: int
    owner_id: str
    path: str


class OwnedPaths:
    """Owned paths by key (the path without its trailing `/`), so that the first earlier
    claim overlapping a path (``paths_overlap``) is found in a few dict lookups per level.

    Each list keeps the first claim and the first claim of another owner: whoever asks, one
    of the two is by someone else, and it is the earliest such claim.
    """

    def __init__(self) -> None:
        self.count = 0
        self.exact: dict[str, list[Claim]] = {}  # any claim, by its key
        self.folders: dict[str, list[Claim]] = {}  # folder claims, by key
        self.below: dict[str, list[Claim]] = {}  # claims strictly inside a folder key

    @staticmethod
    def _keep(table: dict[str, list[Claim]], key: str, claim: Claim) -> None:
        kept = table.setdefault(key, [])
        if not kept or (len(kept) == 1 and kept[0].owner != claim.owner):
            kept.append(claim)

    @staticmethod
    def _ancestors(key: str) -> list[str]:
        parts = key.split("/")
        return ["/".join(parts[:n]) for n in range(1, len(parts))]

    def add(self, path: str, owner: int, owner_id: str) -> None:
        key = path.rstrip("/")
        claim = Claim(self.count, owner, owner_id, path)
        self.count += 1
        self._keep(self.exact, key, claim)
        if path.endswith("/"):
            self._keep(self.folders, key, claim)
        for folder in self._ancestors(key):
            self._keep(self.below, folder, claim)

    def overlap(self, path: str, owner: int) -> Claim | None:
        """The earliest claim by another owner that overlaps ``path``, or None."""
        key = path.rstrip("/")
        found = list(self.exact.get(key, ()))
        for folder in self._ancestors(key):
            found += self.folders.get(folder, ())
        if path.endswith("/"):
            found += self.below.get(key, ())
        others = [c for c in found if c.owner != owner]
        return min(others, key=lambda c: c.order) if others else None
