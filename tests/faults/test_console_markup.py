"""Fault class: markup in the console (issue 33 §7). Everything the `wave dashboard` console
shows from a state file or a command's output (agent rows, the wave picker, titles, the
attention lines, the question box, toasts, the output and diff panes, confirm dialogs) is
plain text: Textual markup an agent wrote is shown as it is, never parsed. Parsed, `[/]` ended
the console with a MarkupError and `[@click=app.quit]` ran an action the agent chose when the
person clicked the line."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from console_pilot import QuietFleet
from helpers import Repo, local_lane
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Log, OptionList, Static
from textual.widgets._toast import Toast

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done
from wave_orchestrator.dashboard.screens import Ask, Confirm, PickWave
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
# Markup that ends the console when parsed ([/] closes nothing), runs an action on a click,
# links to a local file, and styles what follows; each must be shown as it is.
MARKUP = "[/]a[@click=app.quit]b[/]c[link=file:///etc/passwd]x[/link][bold]d"
HOSTILE = "\x1b]52;c;ZXZpbA==\x07" + MARKUP + "\x1b[2J"  # and escapes around it
WAVE_STATES = {1: "[@click=app.quit]completed", 2: "[/]completed\x1b[2J", 3: "[bold]running"}


class Fleet(QuietFleet):
    """Answers every command with the hostile text, as a command quoting an agent would."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        return Done(2 if argv[0] == "attach" else 0, f"{argv[0]}: {HOSTILE}\n+{HOSTILE}")


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    """Three waves whose dashboards, run state and agent output carry markup everywhere."""
    layout = StateLayout(tmp_path / "state", "main")
    data = json.loads(FIXTURE.read_text())
    data.update(title="T" + HOSTILE, attempt_reason=HOSTILE)
    data["stages"][0]["stage"] = "\x1b[2J[/]build[bold]"  # a stage's name has 64 characters
    data["agents"][0]["last_line"] = HOSTILE
    data["agents"].append({"id": "evil", "state": HOSTILE, "role": HOSTILE, "attempt": 1})
    data["gaps"] = [{"kind": "[/]kind", "agent": "api", "detail": HOSTILE}]
    data["gate_failure"] = {"stage": "qa", "status": HOSTILE, "action": HOSTILE}
    data["coordination"] = {
        "blockers": [{"id": "b-1", "agent": "api", "summary": HOSTILE}],
        "questions": [{"id": "q-1", "agent": "api", "question": HOSTILE}],
        "board": HOSTILE,
    }
    for wave in WAVE_STATES:
        folder = layout.base / "waves" / f"wave-{wave}"
        folder.mkdir(parents=True)
        (folder / "dashboard.json").write_text(json.dumps({**data, "wave": wave}))
    waves = {str(n): {"state": state} for n, state in WAVE_STATES.items()}
    layout.run_state.write_text(json.dumps({"waves": waves}))
    log = layout.agent(3, "api").output_log
    log.parent.mkdir(parents=True)
    log.write_text(f"before\n{HOSTILE}\nafter\n")
    return layout


def shown(widget: Widget) -> str:
    """The text a widget puts on the screen (its lines as the compositor draws them)."""
    width, height = widget.outer_size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def assert_literal(text: str, literal: str = MARKUP) -> None:
    assert literal in text, f"{literal!r} not shown as it is in {text!r}"
    assert "\x1b" not in text and "\x07" not in text


def drive(
    layout: StateLayout, script: Callable[[FleetConsole, Pilot[None]], Awaitable[None]]
) -> FleetConsole:
    app = FleetConsole(layout, None, Fleet())

    async def run() -> None:
        async with app.run_test(size=(220, 60), notifications=True) as pilot:
            await pilot.pause()
            await asyncio.wait_for(script(app, pilot), 60)

    asyncio.run(run())
    assert app.failure is None, f"the console ended: {app.failure!r}"
    return app


async def until(
    pilot: Pilot[None], app: FleetConsole, condition: Callable[[], object], what: str
) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert app.failure is None, f"the console ended: {app.failure!r}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def alive(app: FleetConsole) -> None:
    assert app.failure is None and app.is_running, f"the console ended: {app.failure!r}"


def test_the_main_screen_shows_markup_in_rows_titles_and_attention_as_it_is(
    layout: StateLayout,
) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        alive(app)
        table: DataTable[Any] = app.query_one(DataTable)
        assert table.get_row("api")[-1].plain == MARKUP
        hostile_row = [cell.plain for cell in table.get_row("evil")]
        state = hostile_row[1]  # as written, cut to the state column's room
        assert hostile_row[0] == "evil" and len(state) > 20 and MARKUP.startswith(state.rstrip("…"))
        assert_literal(shown(table))
        head = shown(app.query_one("#head", Static))
        assert_literal(head, "T" + MARKUP)  # the wave's title
        assert_literal(head, f"why attempt 2: {MARKUP}")
        assert_literal(head, "stages: [/]build[bold] …")
        attention = shown(app.query_one("#attention", Static))
        assert_literal(attention, f"gap [/]kind (api): {MARKUP}")
        assert_literal(attention, f"qa gate failed: {MARKUP}; {MARKUP}")
        for line in (f"blocker b-1 api: {MARKUP}", f"question q-1 api: {MARKUP}"):
            assert_literal(attention, line)
        assert_literal(attention, f"board: {MARKUP}")
        # the filter line quotes what the person typed
        await pilot.press("slash", "left_square_bracket", *"link", "enter")
        await until(pilot, app, lambda: app._ids == ["evil"], "the filter")
        assert_literal(shown(app.query_one("#head", Static)), "filter: [link")
        alive(app)

    drive(layout, script)


def test_the_wave_picker_shows_states_as_they_are_and_a_click_only_picks(
    layout: StateLayout,
) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("w")
        await until(pilot, app, lambda: isinstance(app.screen, PickWave), "the picker")
        picker = app.screen.query_one(OptionList)
        await pilot.pause()
        alive(app)
        text = shown(picker)
        for n, state in WAVE_STATES.items():
            assert_literal(text, f"wave {n}  {state.replace(chr(27) + '[2J', '')}")
        # a click on wave 1's line picks wave 1; it does not run the action its state names
        await pilot.click(OptionList, offset=(4, picker.get_option_index("1") + 1))
        await until(pilot, app, lambda: app.wave == 1, "wave 1 picked")
        alive(app)

    drive(layout, script)


def test_toasts_show_a_command_s_words_as_they_are_and_a_click_only_closes_them(
    layout: StateLayout,
) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("s", "y")  # stop api: the command's answer quotes the agent
        await until(pilot, app, lambda: len(app.query(Toast)) >= 2, "the stop's toasts")
        await pilot.press("enter")  # attach refused: an error toast
        await until(pilot, app, lambda: len(app.query(Toast)) >= 3, "the error toast")
        said = [toast.render().plain for toast in app.query(Toast)]
        assert sum(MARKUP in text for text in said) == 2, said
        for text in said:
            assert "\x1b" not in text
        alive(app)
        for toast in list(app.query(Toast)):  # a click on a toast closes it, and only that
            await pilot.click(toast, offset=(2, 2))
            await pilot.pause()
            alive(app)

    drive(layout, script)


def test_the_output_and_diff_panes_show_markup_and_no_escape(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        pane = app.query_one("#pane", Log)
        await pilot.press("l")
        await until(pilot, app, lambda: "after" in pane.lines, "the output")
        assert pane.lines[:3] == ["before", MARKUP, "after"]
        assert_literal(shown(pane))
        await pilot.press("escape", "d")
        await until(pilot, app, lambda: f"+{MARKUP}" in pane.lines, "the diff")
        assert pane.lines == [f"diff: {MARKUP}", f"+{MARKUP}"]
        assert_literal(shown(pane))
        alive(app)

    drive(layout, script)


def test_the_question_box_and_dialogs_show_markup_as_it_is(layout: StateLayout) -> None:
    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("a")  # api's question, written by an agent
        await until(pilot, app, lambda: isinstance(app.screen, Ask), "the question box")
        await pilot.pause()
        assert_literal("\n".join(shown(s) for s in app.screen.query(Static)))
        await pilot.press("escape")
        for screen in (Confirm(HOSTILE), Ask(HOSTILE, HOSTILE)):
            app.push_screen(screen)
            await until(pilot, app, lambda: isinstance(app.screen, Confirm | Ask), "the dialog")
            await pilot.pause()
            assert_literal("\n".join(shown(s) for s in screen.query(Static)))
            await pilot.press("escape")
            alive(app)

    drive(layout, script)


def test_dashboard_once_prints_markup_as_it_is(repo: Repo) -> None:
    """The plain frame (`--once`, and the live view without the console) draws agent rows in
    a rich table, which parsed a str cell as markup: `[/]` in a role ended it."""
    repo.lane("main", local_lane(), {1: "agents: [{id: A1, prompt: x}]\n"})
    data = json.loads(FIXTURE.read_text())
    link = "[link=file:///etc/passwd]x[/link]"
    data["agents"][0].update(role="[/]role[bold]", executor=link, last_line=HOSTILE)
    folder = repo.state("main") / "waves" / "wave-3"
    folder.mkdir(parents=True)
    (folder / "dashboard.json").write_text(json.dumps(data))
    done = repo.wave("dashboard", "--lane", "main", "--once", "--width", "200", "--height", "40")
    assert done.returncode == 0, done.stderr
    for text in ("[/]role[bold]", link, MARKUP):
        assert_literal(done.stdout, text)
