"""The package's import graph between rooms, as the Mermaid picture docs/architecture.md shows.

A room is a top-level folder of ``wave_orchestrator`` (the runtime and the definitions count
each of their folders as a room, since those are what a reader navigates); the top-level
modules are grouped as ``shared``, except ``__main__``, which belongs with ``console``. An
arrow means "imports"; an arrow already implied through another room is left out, so the
picture stays readable and a new shortcut import does not change it.
``tests/test_architecture.py`` fails when the page's picture differs from this output: run
``.venv/bin/python scripts/import_graph.py`` and paste it into the page.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

PACKAGE = "wave_orchestrator"
SPLIT = ("runtime", "definitions")  # rooms whose folders are rooms of their own
SHARED = {"errors", "names", "sanitize", "self_command", PACKAGE}


def room_of(module: str) -> str:
    """``wave_orchestrator.runtime.pool.loop`` -> ``runtime/pool``; ``definitions.model`` ->
    ``definitions/model``."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in SHARED:
        return "shared"
    if parts[0] == "__main__":
        return "console"
    if parts[0] in SPLIT and len(parts) > 1:
        return f"{parts[0]}/{parts[1]}"
    return parts[0]


def room_edges(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    edges = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = room_of(importer), room_of(imported)
            if a != b:
                edges.add((a, b))
    return edges


def reduce(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The transitive reduction: drop a -> c when a reaches c through another room."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str, skip: tuple[str, str]) -> bool:
        seen, todo = {start}, [start]
        while todo:
            node = todo.pop()
            for nxt in succ.get(node, ()):
                if (node, nxt) == skip or nxt in seen:
                    continue
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    return {(a, b) for a, b in edges if not reaches(a, b, (a, b))}


def mermaid(edges: set[tuple[str, str]]) -> str:
    def node(name: str) -> str:
        return name.replace("/", "_")

    rooms = sorted({room for edge in edges for room in edge})
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {node(room)}["{room}"]' for room in rooms]
    lines += [f"    {node(a)} --> {node(b)}" for a, b in sorted(edges)]
    lines.append("```")
    return "\n".join(lines)


def picture(root: Path) -> str:
    sys.path.insert(0, str(root))
    try:
        graph = grimp.build_graph(PACKAGE, cache_dir=None)
    finally:
        sys.path.remove(str(root))
    return mermaid(reduce(room_edges(graph)))


if __name__ == "__main__":
    print(picture(Path(__file__).resolve().parents[1]))
