"""The console's views beyond the agent table, driven by Textual's headless pilot: the live
preview beside the table, the sort order, the launcher's log, the board and the event timeline
in the pane, and search inside the pane."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from console_pilot import head_text, until
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Log

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done
from wave_orchestrator.dashboard.panes import Found
from wave_orchestrator.dashboard.screens import KEYS, Ask
from wave_orchestrator.state.layout import StateLayout

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dashboard"
AGENTS = ["api", "store", "tests", "migrate", "qa"]  # wave-3.json's, in its order


class FakeFleet:
    """Answers as the commands would; records what the keys ask for."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        return Done(0, f"ran {argv[0]}")

    def attach(self, argv: list[str]) -> Done:
        return Done(0, "")

    def launcher_alive(self) -> bool:
        return True

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        return {"api": (12345, 0.42)} if wave == 3 else {}


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    layout = StateLayout(tmp_path / "state", "main")
    folder = layout.wave_dir(3)
    folder.mkdir(parents=True)
    (folder / "dashboard.json").write_text((FIXTURES / "wave-3.json").read_text())
    return layout


def drive(
    layout: StateLayout,
    script: Callable[[FleetConsole, Pilot[None]], Awaitable[None]],
    size: tuple[int, int] = (100, 30),
) -> FleetConsole:
    app = FleetConsole(layout, None, FakeFleet())

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(run())
    assert app.failure is None
    return app


def write_log(layout: StateLayout, agent: str, text: str) -> Path:
    out = layout.agent(3, agent).output_log
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


@pytest.mark.parametrize("size", [(160, 30), (80, 30)])
def test_p_previews_the_selected_agent_s_output_beside_the_table_and_follows_the_selection(
    layout: StateLayout, size: tuple[int, int]
) -> None:
    write_log(layout, "api", "api line one\napi line two\n")
    store = write_log(layout, "store", "store \x1b[2Jline one\n")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        preview = app.query_one("#preview", Log)
        table = app.table
        assert not preview.display
        await pilot.press("p")
        await until(pilot, lambda: "api line two" in preview.lines, "api's output in the preview")
        assert table.display and not app.pane.display  # beside the table, not over it
        if size[0] >= 120:  # right of the table on a wide terminal, under it on a narrow one
            assert preview.region.x >= table.region.right - 1
        else:
            assert preview.region.y >= table.region.bottom - 1
        await pilot.press("j")  # the preview switches with the selection
        await until(pilot, lambda: "store line one" in preview.lines, "store's output")
        assert "api line one" not in preview.lines and "store" in str(preview.border_title)
        with store.open("a") as fh:
            fh.write("store line two\n")
        await until(pilot, lambda: "store line two" in preview.lines, "what store writes next")
        await pilot.press("p")
        assert not preview.display and app._preview is None

    drive(layout, script, size)


def test_o_cycles_the_sort_and_the_header_says_which(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        assert app._ids == AGENTS and "sorted by" not in head_text(app)
        orders = {
            "state": ["migrate", "store", "api", "qa", "tests"],
            "elapsed": ["migrate", "api", "store", "tests", "qa"],
            "cost": ["api", "store", "tests", "migrate", "qa"],
            "attempts": ["migrate", "api", "store", "tests", "qa"],
            "id": ["api", "migrate", "qa", "store", "tests"],
        }
        await pilot.press("j")  # store selected: it stays selected whatever the order
        for name, ids in orders.items():
            await pilot.press("o")
            assert app._ids == ids, name
            assert f"sorted by {name}" in head_text(app)
            assert app.selected() == "store"
        await pilot.press("o")  # back to the wave file's order
        assert app._ids == AGENTS and "sorted by" not in head_text(app)

    drive(layout, script)


def test_the_keys_window_fits_an_80x24_terminal(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        box = app.screen.query_one("#box")
        assert box.region.height == len(KEYS) + 2  # every key, q the last, inside its border
        assert box.region.y >= 0 and box.region.bottom <= 24

    drive(layout, script, (80, 24))


def test_launcher_log_board_and_events_open_in_the_pane_as_plain_text(
    layout: StateLayout,
) -> None:
    layout.launcher_log.write_text("launcher started\n[/]\x1b]0;owned\x07 wave 3 running\n")
    board = layout.board(3)
    board.parent.mkdir(parents=True)
    board.write_text("# Board of wave 3\n- [@click=app.quit]blocker by api\n")
    event = {"at": "2026-12-05T10:00:00.000Z", "event": "agent_started", "wave": 3}
    layout.events.write_text(json.dumps({**event, "agent": "api\x1b[31m"}) + "\n")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        pane = app.pane
        await pilot.press("O")
        await until(pilot, lambda: "[/] wave 3 running" in pane.lines, "the launcher's log")
        assert "launcher" in str(pane.border_title)
        with layout.launcher_log.open("a") as fh:
            fh.write("wave 3 gate passed\n")
        await until(pilot, lambda: "wave 3 gate passed" in pane.lines, "the log followed")
        await pilot.press("b")
        await until(pilot, lambda: "# Board of wave 3" in pane.lines, "the board")
        assert "- [@click=app.quit]blocker by api" in pane.lines
        board.write_text("# Board of wave 3\n- resolved\n")  # rewritten whole, as the launcher does
        await until(pilot, lambda: "- resolved" in pane.lines, "the board again")
        assert not any("blocker" in line for line in pane.lines)
        await pilot.press("e")
        await until(pilot, lambda: any("agent_started" in ln for ln in pane.lines), "events")
        line = next(ln for ln in pane.lines if "agent_started" in ln)
        assert "wave 3" in line and "api" in line and "\x1b" not in line
        with layout.events.open("a") as fh:
            fh.write(json.dumps({**event, "event": "wave_completed"}) + "\n")
        await until(pilot, lambda: any("wave_completed" in ln for ln in pane.lines), "the next")
        await pilot.press("escape")
        assert not pane.display and app.failure is None

    drive(layout, script)


def test_slash_in_the_pane_finds_text_and_n_shift_n_move_between_matches(
    layout: StateLayout,
) -> None:
    lines = [f"line {i}" for i in range(200)]
    lines[40] = "ERROR: first problem"
    lines[150] = "error: second problem"
    write_log(layout, "api", "\n".join(lines) + "\n")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        pane = app.pane
        await pilot.press("l")
        await until(pilot, lambda: len(pane.lines) >= 200, "the whole log")
        pane.scroll_home(animate=False)
        await pilot.press("slash")
        assert isinstance(app.screen, Ask)  # with the pane open, `/` searches it
        await pilot.press(*"error", "enter")
        await until(pilot, lambda: app._match == 40, "the first match")
        assert pane.highlight and isinstance(pane.highlighter, Found)  # the text marked
        marked = Text("an Error here")
        pane.highlighter.highlight(marked)
        assert [marked.plain[s.start : s.end] for s in marked.spans] == ["Error"]
        await until(pilot, lambda: int(pane.scroll_y) <= 40 < pane.scroll_y + pane.size.height, "")
        await pilot.press("n")
        assert app._match == 150
        await until(pilot, lambda: int(pane.scroll_y) <= 150 < pane.scroll_y + pane.size.height, "")
        await pilot.press("n")  # past the last, back to the first
        assert app._match == 40
        await pilot.press("N")
        assert app._match == 150
        await pilot.press("slash", *"nowhere to be seen", "enter")
        await until(pilot, lambda: any("not found" in n.message for n in app._notifications), "")
        await pilot.press("escape")
        await pilot.press("slash")  # with no pane, `/` filters the agents as before
        assert isinstance(app.screen, Ask) and "Show the agents" in app.screen.title_text

    drive(layout, script)
