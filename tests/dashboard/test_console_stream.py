"""The console shows what a running agent does, from its CLI's event stream in dashboard.json:
the activity and last line lead its last-output cell, its tokens and cost fill those columns
while it runs, a change shows at the next look, and what the agent wrote is shown, never
obeyed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from console_pilot import QuietFleet, until
from textual.pilot import Pilot
from textual.widgets import DataTable

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"


def stream(**said: Any) -> dict[str, Any]:
    base = {
        "activity": "tool",
        "tool": "Bash",
        "turns": 12,
        "tool_calls": 31,
        "input_tokens": 40_000,
        "output_tokens": 8_000,
        "cost_usd": 0.42,
        "last_line": "Running the test suite",
        "conversation": "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f",
        "events": 120,
    }
    return {**base, **said}


def write(layout: StateLayout, streams: dict[str, dict[str, Any] | None]) -> None:
    data = json.loads(FIXTURE.read_text())
    for agent in data["agents"]:
        agent["stream"] = streams.get(agent["id"])
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_a_running_agent_s_activity_tokens_and_cost_show_and_follow_its_stream(
    tmp_path: Path,
) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    hostile = stream(tool="\x1b]52;c;ZXZpbA==\x07Bash", last_line="\x1b[2Jcleared")
    # "tests" has ended: what its stream said last is history, not what it does
    write(layout, {"api": hostile, "tests": stream(activity="writing")})
    app = FleetConsole(layout, None, QuietFleet())

    async def script(pilot: Pilot[None]) -> None:
        table: DataTable[Any] = app.query_one(DataTable)
        api = table.get_row("api")
        assert api[-1].plain == "tool: Bash · 12 turns · 31 tools · cleared"
        assert "\x1b" not in "".join(cell.plain for cell in api)
        assert (api[4].plain, api[5].plain) == ("48.0k", "$0.42")
        ended = table.get_row("tests")
        assert ended[-1].plain == "All 42 tests pass" and ended[5].plain == "-"
        assert table.get_row("store")[-1].plain.startswith("[wave] rate limited")  # text mode

        write(layout, {"api": stream(activity="thinking", turns=13, cost_usd=0.5)})
        await until(
            pilot,
            lambda: table.get_row("api")[-1].plain.startswith("thinking · 13 turns"),
            "the console to show the agent's new activity",
        )
        assert table.get_row("api")[5].plain == "$0.50"

    async def run() -> None:
        async with app.run_test(size=(140, 24)) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(run())
