"""The interactive dashboard, driven by Textual's headless pilot: keys, panes, the
confirm step and attach, with a fake fleet that records the commands the keys run."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from console_pilot import until
from rich.console import Console
from textual.binding import Binding
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable, Log, Static

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done
from wave_orchestrator.dashboard.screens import Ask, Confirm, Keys, PickWave
from wave_orchestrator.state.layout import StateLayout

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dashboard"
AGENTS = ["api", "store", "tests", "migrate", "qa"]  # wave-3.json's, in its order


class FakeFleet:
    """Records what the keys ask for; answers as the commands would."""

    def __init__(self, alive: bool = True) -> None:
        self.alive = alive
        self.commands: list[list[str]] = []
        self.attached: list[list[str]] = []
        self.replies: dict[str, Done] = {}

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        return self.replies.get(argv[0], Done(0, f"ran {argv[0]}"))

    def attach(self, argv: list[str]) -> Done:
        self.attached.append(argv)
        return Done(0, "")

    def launcher_alive(self) -> bool:
        return self.alive

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        return {"api": (12345, 0.42)} if wave == 3 else {}


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    layout = StateLayout(tmp_path / "state", "main")
    for wave, title in ((3, None), (2, "the wave before")):
        folder = layout.base / "waves" / f"wave-{wave}"
        folder.mkdir(parents=True)
        data = json.loads((FIXTURES / "wave-3.json").read_text())
        data["wave"] = wave
        data["title"] = title or data["title"]
        (folder / "dashboard.json").write_text(json.dumps(data))
    return layout


def drive(
    layout: StateLayout,
    fleet: FakeFleet,
    script: Callable[[FleetConsole, Pilot[None]], Awaitable[None]],
    size: tuple[int, int] = (80, 24),
) -> FleetConsole:
    app = FleetConsole(layout, None, fleet)

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(run())
    return app


def text_of(app: FleetConsole, selector: str) -> str:
    """What a Static shows, as plain text at 80 columns."""
    console = Console(width=80, file=io.StringIO(), record=True, no_color=True)
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


def notes(app: FleetConsole) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_current_wave_s_agents_with_the_first_selected_and_j_k_arrows_move(
    layout: StateLayout,
) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        table: DataTable[Any] = app.query_one(DataTable)
        assert [str(k.value) for k in table.rows] == AGENTS
        assert app.wave == 3 and app.selected() == "api"
        await pilot.press("j", "j")
        assert app.selected() == "tests"
        await pilot.press("k")
        assert app.selected() == "store"
        await pilot.press("down", "down", "down", "down", "down")  # stops at the last
        assert app.selected() == "qa"
        await pilot.press("up")
        assert app.selected() == "migrate"
        # tokens and cost of the agent's finished attempt, from the metrics
        assert table.get_row("api")[4].plain == "12.3k" and table.get_row("api")[5].plain == "$0.42"
        assert table.get_row("store")[5].plain == "-"

    drive(layout, FakeFleet(), script)


def test_l_follows_the_agent_s_output_and_escape_closes_the_pane(layout: StateLayout) -> None:
    out = layout.agent(3, "store").output_log
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("first line\n\x1b]0;owned\x07second line\n")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        pane = app.query_one("#pane", Log)
        assert not pane.display
        await pilot.press("j", "l")
        assert pane.display and "store" in str(pane.border_title)
        await until(pilot, lambda: "second line" in pane.lines, "the output so far")
        assert pane.lines[:2] == ["first line", "second line"]  # the escape is not passed on
        with out.open("a") as fh:
            fh.write("third line, written while the pane is open\n")
        await until(pilot, lambda: "third line" in "".join(pane.lines), "the appended line")
        await pilot.press("escape")
        assert not pane.display and app._follower is None

    drive(layout, FakeFleet(), script)


def test_d_shows_the_agent_s_diff_from_wave_diff(layout: StateLayout) -> None:
    fleet = FakeFleet()
    fleet.replies["diff"] = Done(0, "diff --git a/api.py b/api.py\n+new line")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("d")
        pane = app.query_one("#pane", Log)
        await until(pilot, lambda: "+new line" in pane.lines, "the diff")
        assert "diff of api" in str(pane.border_title)
        await pilot.press("escape")
        assert not pane.display

    drive(layout, fleet, script)
    assert fleet.commands == [["diff", "api", "--wave", "3"]]


def test_s_stops_the_agent_only_after_y(layout: StateLayout) -> None:
    fleet = FakeFleet()
    fleet.replies["stop"] = Done(0, "stopped agent store of wave 3: it counts as cancelled")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("j", "s")
        assert isinstance(app.screen, Confirm) and "Stop store?" in app.screen.question
        await pilot.press("n")  # no: nothing happens
        assert not isinstance(app.screen, Confirm) and fleet.commands == []
        await pilot.press("s", "x")  # any other key is a no as well
        assert fleet.commands == []
        await pilot.press("s", "y")
        await until(pilot, lambda: fleet.commands, "the stop command")
        await until(pilot, lambda: any("cancelled" in n for n in notes(app)), "its words")

    drive(layout, fleet, script)
    assert fleet.commands == [["stop", "--agent", "store"]]


def test_a_tick_while_the_app_closes_draws_nothing_and_raises_nothing(layout: StateLayout) -> None:
    """Closing removes the screen's widgets before it stops the timer: a redraw due then (as after
    a command) must not look for widgets that are gone."""

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await app.default_screen.remove_children()  # as closing does, before the timers stop
        app._seen = None  # a command just ran: redraw at the next tick
        app._tick()
        assert app.failure is None

    app = drive(layout, FakeFleet(), script)
    assert app.failure is None


@pytest.mark.parametrize("alive", [True, False])
def test_r_reruns_after_y_in_the_background_when_no_launcher_runs(
    layout: StateLayout, alive: bool
) -> None:
    """With no launcher the question names the plan `wave rerun --dry-run` gives, and `y`
    runs that plan without the command asking again."""
    fleet = FakeFleet(alive=alive)
    fleet.replies["rerun"] = Done(0, "wave: warning: a word first\nreruns api; reuses store\n")
    argv = ["rerun", "api", "--wave", "3", "--reason=rerun by a person from the dashboard"]
    asked = "Rerun api of wave 3?" if alive else "Rerun api of wave 3? reruns api; reuses store"

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
        assert isinstance(app.screen, Confirm) and app.screen.question == asked
        await pilot.press("y")
        await until(pilot, lambda: len(fleet.commands) == (1 if alive else 2), "the rerun")

    drive(layout, fleet, script)
    planned = [["rerun", "api", "--wave", "3", "--dry-run"], [*argv, "--detach", "--yes"]]
    assert fleet.commands == ([argv] if alive else planned)


def test_a_answers_the_selected_agent_s_question_and_says_when_it_has_none(
    layout: StateLayout,
) -> None:
    path = layout.dashboard(3)
    data = json.loads(path.read_text())
    question = {"id": "q-7", "agent": "store", "question": "keep v1?", "created_at": "x"}
    data["coordination"] = {"questions": [question, {**question, "id": "--force"}]}
    path.write_text(json.dumps(data))
    fleet = FakeFleet()

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("a")  # api asked nothing
        assert not isinstance(app.screen, Ask)
        assert "api has no open question" in notes(app)
        await pilot.press("j", "a")
        assert isinstance(app.screen, Ask) and app.screen.prompt == "keep v1?"
        await pilot.press(*"-yes, keep it", "enter")
        await until(pilot, lambda: fleet.commands, "the answer")

    drive(layout, fleet, script)
    assert fleet.commands == [["feedback", "respond", "q-7", "--response=-yes, keep it"]]


def test_c_comments_and_escape_in_the_box_sends_nothing(layout: StateLayout) -> None:
    fleet = FakeFleet()

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("c", *"never mind", "escape")
        assert not isinstance(app.screen, Ask)
        await pilot.press("c", *"use lib/page.py", "enter")
        await until(pilot, lambda: fleet.commands, "the comment")

    drive(layout, fleet, script)
    assert fleet.commands == [
        ["comment", "--agent", "api", "--wave", "3", "--text=use lib/page.py"]
    ]


def test_enter_suspends_the_app_for_the_attach_and_comes_back(layout: StateLayout) -> None:
    fleet = FakeFleet()
    fleet.replies["attach"] = Done(
        0, "wave: warning: a lane.yaml problem\ntmux -L wave-x attach-session -t =w3-store\n"
    )
    suspended: list[str] = []

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        @contextlib.contextmanager
        def suspend() -> Iterator[None]:
            suspended.append("in")
            yield
            suspended.append("out")

        app.suspend = suspend  # type: ignore[method-assign]  # headless: no terminal to give
        await pilot.press("j", "enter")
        assert suspended == ["in", "out"]
        await pilot.press("j")  # and the app goes on
        assert app.selected() == "tests"

    drive(layout, fleet, script)
    assert fleet.commands == [["attach", "store", "--wave", "3", "--print"]]
    assert fleet.attached == [["tmux", "-L", "wave-x", "attach-session", "-t", "=w3-store"]]


def test_an_attach_the_command_refuses_says_why_and_suspends_nothing(layout: StateLayout) -> None:
    fleet = FakeFleet()
    fleet.replies["attach"] = Done(2, "wave: no tmux session 'w3-api' on lane 'main'")

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("enter")
        assert any("no tmux session" in n for n in notes(app))

    drive(layout, fleet, script)
    assert fleet.attached == []


def test_w_switches_wave_and_slash_filters(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("w")
        assert isinstance(app.screen, PickWave)
        await pilot.press("up", "enter")
        await until(pilot, lambda: app.wave == 2, "wave 2")
        assert "the wave before" in text_of(app, "#head")
        await pilot.press("slash", *"sto", "enter")
        assert app._ids == ["store"] and "filter: sto" in text_of(app, "#head")
        await pilot.press("escape")
        assert app._ids == AGENTS

    drive(layout, FakeFleet(), script)


def test_question_mark_lists_every_key_and_q_quits(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, Keys)
        shown = text_of(app, "Keys Static")
        for key in ("j k", "Enter", "Esc", "?"):
            assert key in shown
        await pilot.press("x")
        assert not isinstance(app.screen, Keys)
        await pilot.press("q")

    app = drive(layout, FakeFleet(), script)
    assert app.return_code == 0 and not app.is_running


def test_with_no_launcher_it_shows_the_last_state_and_says_so(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        head = text_of(app, "#head")
        # it recorded the wave running: with its launcher gone, the wave is shown interrupted
        assert "[interrupted]" in head and "[running]" not in head
        assert "launcher not running (pid 1234): the last state it recorded" in head
        assert app._ids == AGENTS

    drive(layout, FakeFleet(alive=False), script)


def test_before_any_wave_it_says_so_and_keys_do_nothing_harmful(tmp_path: Path) -> None:
    fleet = FakeFleet()

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        assert "no wave has started yet" in text_of(app, "#head")
        await pilot.press("s", "y", "l", "enter", "r", "y")
        assert "no agent selected" in notes(app)

    drive(StateLayout(tmp_path / "state", "main"), fleet, script)
    assert fleet.commands == []


def test_what_agents_wrote_is_shown_not_obeyed_and_fits_80_columns(layout: StateLayout) -> None:
    path = layout.dashboard(3)
    data = json.loads(path.read_text())
    data["agents"][0]["last_line"] = "\x1b[2J\x1b]52;c;ZXZpbA==\x07cleared " + "y" * 300
    data["title"] = "t\x1b[31m" + "x" * 200
    path.write_text(json.dumps(data))

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        table: DataTable[Any] = app.query_one(DataTable)
        last = table.get_row("api")[-1].plain
        assert "\x1b" not in last and last.startswith("cleared yy") and last.endswith("…")
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= 80
        assert "\x1b" not in text_of(app, "#head")

    drive(layout, FakeFleet(), script)


def test_operating_md_lists_every_key_the_console_has() -> None:
    from wave_orchestrator.dashboard.screens import KEYS

    doc = (Path(__file__).parents[2] / "docs" / "operating.md").read_text()
    table = [line for line in doc.splitlines() if line.startswith("| `")]
    bound = {b.key for b in FleetConsole.BINDINGS if isinstance(b, Binding)}
    for keys in bound:
        for key in keys.split(","):
            shown = {
                "slash": "/",
                "question_mark": "?",
                "escape": "Esc",
                "enter": "Enter",
                "down": "↓",
                "up": "↑",
                "pageup": "PgUp",
                "pagedown": "PgDn",
            }.get(key, key)
            assert any(f"`{shown}`" in line for line in table), key
            assert any(shown in k for k, _ in KEYS), key


def test_an_error_inside_ends_the_console_without_a_traceback(layout: StateLayout) -> None:
    class Broken(FakeFleet):
        def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
            raise RuntimeError("metrics went away")

    app = FleetConsole(layout, None, Broken())

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()

    with contextlib.suppress(Exception):  # the pilot re-raises what ended the app
        asyncio.run(run())
    assert isinstance(app.failure, RuntimeError) and not app._exit_renderables


def test_a_short_terminal_still_shows_agents_and_a_wider_one_shows_more_of_each_line(
    layout: StateLayout,
) -> None:
    path = layout.dashboard(3)
    data = json.loads(path.read_text())
    data["attempt_reason"] = "a retry reason long enough to wrap on a narrow terminal " * 3
    data["agents"][0]["last_line"] = "Editing src/api/routes.py (14 changes) and more"
    path.write_text(json.dumps(data))

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        table: DataTable[Any] = app.query_one(DataTable)
        assert table.size.height >= 3  # its header and two agents at least, at 12 rows
        assert table.get_row("api")[-1].plain.endswith("…")
        await pilot.press("j")
        await pilot.resize_terminal(140, 30)
        await until(pilot, lambda: not table.get_row("api")[-1].plain.endswith("…"), "more")
        assert table.get_row("api")[-1].plain == "Editing src/api/routes.py (14 changes) and more"
        assert app.selected() == "store"  # the table made again, the selection kept

    drive(layout, FakeFleet(), script, size=(50, 12))


def test_the_pane_s_title_is_plain_text(layout: StateLayout) -> None:
    """A border title given as a str is parsed as markup: the pane's title is shown as it is."""
    title = "output of [/]x [@click=app.quit]y[/] \x1b]0;t\x07z"

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        app._open_pane(title)
        await pilot.pause()
        pane = app.query_one("#pane", Log)
        top = pane.render_lines(Region(0, 0, pane.outer_size.width, 1))[0].text
        assert "output of [/]x [@click=app.quit]y[/] z" in top
        assert "\x1b" not in top and app.failure is None

    drive(layout, FakeFleet(), script)


@pytest.mark.parametrize("alive", [True, False])
def test_capital_c_continues_the_agent_s_conversation_with_what_is_typed(
    layout: StateLayout, alive: bool
) -> None:
    """`C` asks what to tell the agent, then runs `wave rerun --continue` with it: in the running
    wave, or the wave again in the background."""
    fleet = FakeFleet(alive=alive)

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("C")
        await until(pilot, lambda: isinstance(app.screen, Ask), "the text box")
        await pilot.press(*"use v2", "enter")
        await until(pilot, lambda: len(fleet.commands) == 1, "the rerun")

    drive(layout, fleet, script)
    argv = ["rerun", "api", "--wave", "3", "--continue=use v2"]
    assert fleet.commands == [argv if alive else [*argv, "--detach", "--yes"]]


def test_the_output_pane_names_the_agent_s_conversation_once_known(layout: StateLayout) -> None:
    """What `C` and `wave rerun --continue` go on with, to resume by hand too; an odd value is
    shown without its escapes."""
    path = layout.dashboard(3)
    data = json.loads(path.read_text())
    data["agents"][0]["conversation"] = "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"
    data["agents"][1]["conversation"] = "x\x1b[31my"
    path.write_text(json.dumps(data))

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        pane = app.query_one("#pane", Log)
        await pilot.press("l")
        title = str(pane.border_title)
        assert "output of api · conversation 0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e" in title
        await pilot.press("escape", "j", "l")
        assert "\x1b" not in str(pane.border_title)
        await pilot.press("escape", "j", "l")
        assert "conversation" not in str(pane.border_title)  # not known: not said

    drive(layout, FakeFleet(), script)
