"""lane.yaml ``shared_plan_docs``: the documents every wave's plan lives in (a roadmap, the
current state). An agent whose exit contract says ``doc_impact: shared-plan`` changes them, and
the documentation closure agent brings them in line, so both prompts list them."""

from __future__ import annotations

from typing import Any

from ..repository.paths import normalise_repo_path
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

EXPECTED = "a file path relative to the repository"


def check_shared_plan_docs(ck: Checker, value: Any) -> tuple[str, ...]:
    """Each entry a repository-relative file (not a folder), listed once, normalised."""
    path: FieldPath = ("shared_plan_docs",)
    items = ck.string_list(value, path)
    if items is None:
        return ()
    docs: list[str] = []
    for i, raw in enumerate(items):
        norm = normalise_repo_path(raw)
        if norm is None:
            ck.error((*path, i), f"path {raw!r} is absolute or leaves the repository", EXPECTED)
        elif norm.endswith("/"):
            ck.error((*path, i), f"{raw!r} names a folder", EXPECTED)
        elif norm in docs:
            ck.error((*path, i), f"{norm!r} is listed twice", "each document once")
        else:
            docs.append(norm)
    return tuple(docs)
