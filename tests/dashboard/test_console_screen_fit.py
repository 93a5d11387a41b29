"""What a newcomer saw cut or odd on screen: a lane's stages past the 80th column, a table
squeezed beside the preview, a state column wider than any state shown, scrollbar remnants
under the table and at the panes' bottom rows. Each checked on the text of the whole screen
(Textual's pilot) or of the plain view, at the widths people use."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from console_pilot import QuietFleet, until
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets.data_table import ColumnKey

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.render import render
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
STAGES = ["implementation", "cont-eval", "security", "integration", "documentation"]
STAGES += ["cont-qa", "infra"]  # the demo's wave 2: all seven closure stages
BLOCKS = "▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▐"  # what a scrollbar or a half-drawn edge leaves


def demo_wave(**changes: Any) -> dict[str, Any]:
    """wave-3.json with the demo's seven stages and lines of output as long as real ones."""
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    data["stages"] = [{"stage": s, "state": "passed"} for s in STAGES]
    for agent in data["agents"]:
        agent["last_line"] = f"{agent['id']}: edited src/{agent['id']}/handlers.py and its tests"
        agent["detail"] = None
    data.update(changes)
    return data


def screen_lines(app: FleetConsole) -> list[str]:
    """The whole screen as text, as the person sees it (every layer composed)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def drive(
    tmp_path: Path,
    data: dict[str, Any],
    size: tuple[int, int],
    script: Callable[[FleetConsole, Pilot[None]], Awaitable[None]],
) -> FleetConsole:
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    app = FleetConsole(layout, None, QuietFleet())

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(run())
    assert app.failure is None
    return app


def test_the_plain_view_shows_every_stage_in_80_columns() -> None:
    console = Console(width=80, file=io.StringIO(), record=True, no_color=True, height=40)
    console.print(render(demo_wave(), 80, 40))
    lines = console.export_text().splitlines()
    said = " ".join(lines)
    for stage in STAGES:
        assert f"{stage} ✓" in said, (stage, lines[:4])
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in "".join(lines[1:3])  # no stage cut short


def test_the_console_header_shows_every_stage_in_80_columns(tmp_path: Path) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        shown = screen_lines(app)
        head = " ".join(shown[:4])
        for stage in STAGES:
            assert f"{stage} ✓" in head, (stage, shown[:4])
        assert any(line.lstrip().startswith("api ") for line in shown), shown

    drive(tmp_path, demo_wave(), (80, 24), script)


def write_output(tmp_path: Path, agent: str, text: str) -> None:
    out = StateLayout(tmp_path / "state", "main").agent(3, agent).output_log
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


def table_rows(shown: list[str], columns: int) -> dict[str, str]:
    """Each agent's row of the table, as on screen in its first ``columns`` columns."""
    rows = {}
    for line in shown:
        words = line[:columns].split()
        if words and words[0] in ("api", "store", "tests", "migrate", "qa"):
            rows[words[0]] = line[:columns]
    return rows


LONG_FIRST = "agent api (implementation) starting: work in /tmp/lane/.wave/main/worktrees/w1-utils"


def test_beside_the_preview_the_table_keeps_its_last_output_readable(tmp_path: Path) -> None:
    """At 160 columns with `p`: every agent shows its id, its whole state and at least 20
    characters of its last output, a cut one ending in an ellipsis; the preview's long first
    line shows whole, on as many rows as it needs."""
    write_output(tmp_path, "api", LONG_FIRST + " and the rest of the line END\nsecond\n")
    data = demo_wave()

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("p")
        await until(pilot, lambda: "second" in "".join(screen_lines(app)), "the preview")
        shown = screen_lines(app)
        rows = table_rows(shown, 80)
        assert len(rows) == 5, shown
        for agent in data["agents"]:
            row, last = rows[agent["id"]], agent["last_line"]
            assert agent["state"] in row.split(), row
            said = row.rstrip()[row.index(agent["state"]) :].split("  ")[-1].strip()
            assert said == last or (said.endswith("…") and last.startswith(said[:-1])), row
            assert len(said) >= 20, row
        preview = " ".join(line[80:].strip(" │") for line in shown)
        assert "w1-utils and the rest of the line END" in " ".join(preview.split()), shown

    drive(tmp_path, data, (160, 30), script)


def test_the_state_column_is_as_wide_as_the_widest_state_shown(tmp_path: Path) -> None:
    """At 160 columns no state waits on anything: the column is the widest state word's, the
    room is the last output's; a note that comes later widens it, whole, at most 30."""
    data = demo_wave()
    widest = max(len(a["state"]) for a in data["agents"])

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        assert app.table.columns[ColumnKey("state")].width == widest
        note = "waiting for team until 09:40"
        later = demo_wave()
        later["agents"][1].update(state="pending", state_note=note)
        app.layout.dashboard(3).write_text(json.dumps(later))
        await until(
            pilot, lambda: app.table.columns[ColumnKey("state")].width == len(note), "the note"
        )
        await pilot.pause()
        assert any(note in line for line in screen_lines(app))

    drive(tmp_path, data, (160, 30), script)


@pytest.mark.parametrize("size", [(160, 30), (100, 30), (80, 24)])
def test_no_scrollbar_remnant_is_left_after_the_preview_and_the_panes(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Long lines everywhere (the agents', the launcher's log, the events): the panes wrap them,
    the table fits its room, so no horizontal scroll bar is drawn; after each pane closed the
    screen holds no block character at all."""
    long = "step " + "x" * 300 + " done\n"
    for agent in ("api", "store"):
        write_output(tmp_path, agent, long * 3)
    state = tmp_path / "state"
    state.mkdir(parents=True, exist_ok=True)
    record = {"level": "info", "event": "agent launched", "detail": "y" * 300, "at": "x"}
    (state / "launcher.log").write_text(json.dumps(record) + "\n")
    (state / "events.jsonl").write_text(json.dumps({**record, "event": "agent_launched"}) + "\n")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        for key in ("p", "l", "O", "e"):
            await pilot.press(key)
            await pilot.pause(0.3)
            for widget in (app.table, app.preview, app.pane):
                assert not widget.show_horizontal_scrollbar, (key, widget)
            await pilot.press("escape" if key != "p" else "p")
            await pilot.pause(0.3)
            shown = screen_lines(app)
            assert not any(c in BLOCKS for line in shown for c in line), (key, shown)

    drive(tmp_path, demo_wave(), size, script)
