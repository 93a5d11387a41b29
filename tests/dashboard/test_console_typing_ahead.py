"""Keys a person types without waiting for a window to show: the `a` that opens the answer box,
then the answer at once. The keys reach the console faster than the box is mounted; every one
must land in the box, none on the table beneath, and the stored answer is what was typed."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from console_pilot import QuietFleet
from textual import events

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done
from wave_orchestrator.dashboard.screens import Ask, Confirm
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
CHARACTERS = {"enter": "\r", "backspace": "\x7f", "escape": "\x1b"}


class RecordingFleet(QuietFleet):
    """The quiet fleet, each command noted."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        return Done(0, "ok")


def typed(keys: list[str]) -> list[events.Key]:
    """The keys as a terminal delivers them: each posted as it comes, nobody waiting."""
    return [events.Key(k, CHARACTERS.get(k, k if len(k) == 1 else None)) for k in keys]


def run_typing(tmp_path: Path, keys: list[str]) -> tuple[RecordingFleet, str]:
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    data = json.loads(FIXTURE.read_text())
    data["coordination"] = {"questions": [{"id": "q-7", "agent": "api", "question": "v1?"}]}
    path.write_text(json.dumps(data))
    fleet = RecordingFleet()
    app = FleetConsole(layout, None, fleet)
    screens: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            for key in typed(keys):
                app.post_message(key)
            deadline = time.monotonic() + 10
            while not fleet.commands and time.monotonic() < deadline:
                await pilot.pause(0.05)
            await pilot.pause(0.2)  # anything else the keys would have started shows by now
            screens.append(type(app.screen).__name__)

    asyncio.run(run())
    assert app.failure is None
    return fleet, screens[0]


def test_an_answer_typed_straight_after_a_is_stored_exactly_as_typed(tmp_path: Path) -> None:
    """The newcomer's keys: `a` twice (the box seemed slow), BSpace, the answer, Enter."""
    keys = ["a", "a", "backspace", *"Hello, newcomer", "enter"]
    fleet, screen = run_typing(tmp_path, keys)
    assert fleet.commands == [["feedback", "respond", "q-7", "--response=Hello, newcomer"]]
    assert screen == "Beneath"  # the box closed; no second box, no action of the table's keys


def test_keys_typed_ahead_never_act_on_the_console_beneath_a_box(tmp_path: Path) -> None:
    """`s`, `r`, `d` in the typed answer are letters of it, not a stop, a rerun or a diff."""
    fleet, _ = run_typing(tmp_path, ["a", *"stop rerun diff", "enter"])
    assert fleet.commands == [["feedback", "respond", "q-7", "--response=stop rerun diff"]]


def test_escape_typed_ahead_closes_the_box_and_sends_nothing(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    data = json.loads(FIXTURE.read_text())
    data["coordination"] = {"questions": [{"id": "q-7", "agent": "api", "question": "v1?"}]}
    path.write_text(json.dumps(data))
    fleet = RecordingFleet()
    app = FleetConsole(layout, None, fleet)

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            for key in typed(["a", *"no", "escape", "s"]):
                app.post_message(key)
            deadline = time.monotonic() + 10
            while not isinstance(app.screen, Confirm):  # `s` after the box: a stop, asked
                assert time.monotonic() < deadline, "the s after Esc never reached the console"
                await pilot.pause(0.05)
            assert not isinstance(app.screen, Ask)
            await pilot.press("n")

    asyncio.run(run())
    assert fleet.commands == []


def test_a_burst_of_keys_in_an_open_box_is_applied_in_the_order_typed(tmp_path: Path) -> None:
    """The box is up; the keys come in one burst (typed while the console was busy): BSpace
    removes the letter before it, not the last one of the burst, and Enter sends all of it
    (the newcomer's answer was stored as ``aHello, newcome``)."""
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    data = json.loads(FIXTURE.read_text())
    data["coordination"] = {"questions": [{"id": "q-7", "agent": "api", "question": "v1?"}]}
    path.write_text(json.dumps(data))
    fleet = RecordingFleet()
    app = FleetConsole(layout, None, fleet)

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("a")
            deadline = time.monotonic() + 10
            while not isinstance(app.screen, Ask):
                assert time.monotonic() < deadline, "the box never opened"
                await pilot.pause(0.05)
            await pilot.pause(0.2)
            for key in typed(["a", "backspace", *"Hello, newcomer", "enter"]):
                app.post_message(key)
            while not fleet.commands:
                assert time.monotonic() < deadline, "nothing was sent"
                await pilot.pause(0.05)

    asyncio.run(run())
    assert fleet.commands == [["feedback", "respond", "q-7", "--response=Hello, newcomer"]]
