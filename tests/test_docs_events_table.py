"""The events table of docs/launcher.md against the code: every event wave appends to
events.jsonl has a row, and every row is an event wave appends. The code's list is read from
the package's source (each ``.emit(...)`` call, and the agent's state moves and renewals that name one), so a
new event without a row, or a row left after its event went, fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "wave_orchestrator"
PAGE = ROOT / "docs" / "launcher.md"

# `f"wave_{outcome.state}"`: a wave ends in one of these states (runtime/wave/runner.py).
WAVE_ENDS = ("wave_completed", "wave_failed", "wave_cancelled")


def emitted_events() -> tuple[set[str], list[str]]:
    """The event names the code emits, and the calls whose name is not a plain string."""
    names: set[str] = set()
    unread: list[str] = []
    for source in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "emit" and node.args:
                first = node.args[0]
            elif node.func.attr == "to" and len(node.args) >= 3:  # AgentRun.to(state, events, name)
                first = node.args[2]
            elif node.func.attr == "renew" and len(node.args) >= 2:  # AgentRun.renew(events, name)
                first = node.args[1]
            else:
                continue
            where = f"{source.relative_to(ROOT)}:{node.lineno}"
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif (
                isinstance(first, ast.JoinedStr) and ast.unparse(first) == "f'wave_{outcome.state}'"
            ):
                names.update(WAVE_ENDS)
            elif node.func.attr == "emit" and not (
                isinstance(first, ast.Name) and source.name == "run.py"  # AgentRun._move
            ):
                unread.append(f"{where}: {ast.unparse(first)}")
    return names, unread


def table_events() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## events.jsonl\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return names


def test_the_code_is_read() -> None:
    names, unread = emitted_events()
    assert not unread, f"emit calls whose event name this test cannot read: {unread}"
    for known in ("launcher_started", "agent_launched", "agent_finished", "wave_failed"):
        assert known in names


def test_every_emitted_event_has_a_row() -> None:
    names, _ = emitted_events()
    missing = sorted(names - table_events())
    assert not missing, f"docs/launcher.md's events table lacks {missing}"


def test_every_row_is_an_event_the_code_emits() -> None:
    names, _ = emitted_events()
    stale = sorted(table_events() - names)
    assert not stale, f"docs/launcher.md's events table lists events wave never emits: {stale}"
