"""The dashboard never shows a stale picture: a state that changes after the table was drawn
shows whole at the common terminal widths, in the console and in the plain view."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from console_pilot import QuietFleet
from rich.console import Console
from textual.widgets import DataTable

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.render import render
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
WIDTHS = (160, 120, 100, 80)
# Every state word an agent can be in: each must show whole, whichever came first.
LATER = {
    "api": "waiting-human",
    "store": "usage-limit",
    "tests": "cancelled",
    "migrate": "status-unreadable",
    "qa": "session-missing",
}


def frame(states: dict[str, str], last: str = "") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    for agent in data["agents"]:
        agent["state"] = states.get(agent["id"], agent["state"])
        agent["last_line"] = last
        agent["detail"] = None
    return data


def table_text(table: DataTable[Any]) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_console_shows_each_later_state_whole_without_a_redraw(
    tmp_path: Path, width: int
) -> None:
    """The table is first drawn while every agent runs with no output yet; then they wait on
    a person, hit a usage limit, are cancelled, and print a long line: each state word
    shows whole and the last output takes the room left, with no resize or attach between."""
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(frame(dict.fromkeys(LATER, "running"))))
    app = FleetConsole(layout, None, QuietFleet())

    async def run() -> None:
        async with app.run_test(size=(width, 40)) as pilot:
            await pilot.pause()
            table: DataTable[Any] = app.query_one(DataTable)
            assert any("running" in line for line in table_text(table))
            later = frame(LATER, "Editing src/api/routes.py: " + "z" * 300)
            path.write_text(json.dumps(later))
            deadline = time.monotonic() + 10
            while not table.get_row("tests")[1].plain.startswith("cancelled"):
                assert time.monotonic() < deadline, "the new states never reached the table"
                await pilot.pause(0.05)
            await pilot.pause()
            shown = table_text(table)
            for agent, state in LATER.items():
                line = next(ln for ln in shown if ln.lstrip().startswith(agent))
                assert state in line, (width, agent, line)
                # the last output takes the room the other columns leave, cut by an ellipsis
                said = line.split(state, 1)[1]
                assert "Editing sr" in said and said.rstrip().endswith("…"), (width, line)
            assert sum(c.get_render_width(table) for c in table.columns.values()) <= width

    asyncio.run(run())


@pytest.mark.parametrize("width", WIDTHS)
def test_the_plain_view_shows_each_state_whole(width: int) -> None:
    data = frame(LATER, "z" * 300)
    console = Console(width=width, file=io.StringIO(), no_color=True, height=40)
    console.print(render(data, width, 40))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    for agent, state in LATER.items():
        line = next(ln for ln in out.splitlines() if ln.startswith(agent))
        assert state in line and "zzz" in line, (width, line)
