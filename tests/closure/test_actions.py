"""Every gate status code has one action line, and docs/markers.md's table says the same."""

from __future__ import annotations

import re
from pathlib import Path

from wave_orchestrator.closure.actions import FALLBACK, action_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "markers.md"
EXAMPLES = {"<dimension>": "live", "<kind>": "gate", "<state>": "drift"}


def _rows() -> list[tuple[list[str], str]]:
    table = DOC.read_text().split("## Status codes and what to do")[1]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        codes = re.findall(r"`([^`]+)`", cells[0])
        for placeholder, example in EXAMPLES.items():
            codes = [c.replace(placeholder, example) for c in codes]
        rows.append((codes, cells[3].replace("`", "")))
    return rows


def test_the_docs_table_and_the_action_table_agree() -> None:
    rows = _rows()
    assert len(rows) > 20
    for codes, action in rows:
        for code in codes:
            assert action_for(code) == action, code


def test_an_unknown_code_still_gets_an_action() -> None:
    assert action_for("something-new") == FALLBACK
    assert action_for(None) == FALLBACK
