"""The console's lane keys, driven by Textual's headless pilot: `L` lists the repository's
lanes and switches the console (and what its keys act on) to another; `G`, `R` and `S` start,
resume and stop the lane with the cli's own commands, each after `y`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from console_pilot import head_text, until
from textual.pilot import Pilot

from wave_orchestrator.dashboard.console_app import TICK_SECONDS, FleetConsole
from wave_orchestrator.dashboard.fleet import Done, Fleet
from wave_orchestrator.dashboard.screens import Confirm, PickLane
from wave_orchestrator.state.layout import StateLayout

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dashboard"


class FakeFleet:
    def __init__(self, lane: str, alive: bool = True) -> None:
        self.lane, self.alive = lane, alive
        self.commands: list[list[str]] = []

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        return Done(0, f"ran {argv[0]} on {self.lane}")

    def attach(self, argv: list[str]) -> Done:
        return Done(0, "")

    def launcher_alive(self) -> bool:
        return self.alive

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        return {}


class FakeLanes:
    """The repository's lanes: main with a wave, other never run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fleets: dict[str, FakeFleet] = {}

    def lanes(self) -> list[tuple[str, str]]:
        return [("main", "launcher running"), ("other", "never run \x1b[31m[/]")]

    def open(self, lane: str) -> tuple[StateLayout, Fleet]:
        fleet = self.fleets.setdefault(lane, FakeFleet(lane, alive=False))
        return StateLayout(self.root / lane, lane), fleet


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    layout = StateLayout(tmp_path / "main", "main")
    layout.wave_dir(3).mkdir(parents=True)
    layout.dashboard(3).write_text((FIXTURES / "wave-3.json").read_text())
    return layout


def drive(
    app: FleetConsole, script: Callable[[FleetConsole, Pilot[None]], Awaitable[None]]
) -> None:
    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(run())
    assert app.failure is None


def test_capital_l_lists_the_lanes_and_switches_the_console_to_the_one_picked(
    layout: StateLayout, tmp_path: Path
) -> None:
    lanes = FakeLanes(tmp_path)
    main = FakeFleet("main")
    app = FleetConsole(layout, None, main, lanes)

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        assert app.wave == 3 and app._ids
        await pilot.press("L")
        assert isinstance(app.screen, PickLane)
        shown = [str(o.prompt) for o in app.screen.query_one("OptionList").options]  # type: ignore[attr-defined]
        assert shown[0].startswith("main") and "launcher running" in shown[0]
        assert "never run [/]" in shown[1] and "\x1b" not in shown[1]  # shown, not obeyed
        await pilot.press("down", "enter")
        await until(pilot, lambda: app.layout.lane == "other", "the switch to lane other")
        assert "lane other: no wave has started yet" in head_text(app)
        assert "no launcher runs lane other" in head_text(app)
        assert app._ids == [] and app.wave is None
        await pilot.press("S", "y")  # the keys act on the lane shown now
        await until(pilot, lambda: lanes.fleets["other"].commands, "the stop on lane other")

    drive(app, script)
    assert main.commands == [] and lanes.fleets["other"].commands == [["stop"]]


def test_capital_l_without_a_list_of_lanes_says_so(layout: StateLayout) -> None:
    app = FleetConsole(layout, None, FakeFleet("main"))

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("L")
        assert not isinstance(app.screen, PickLane)
        assert any("lane" in n.message for n in app._notifications)

    drive(app, script)


@pytest.mark.parametrize(
    ("key", "asked", "argv"),
    [
        ("G", "Start lane main?", ["launch", "--detach"]),
        ("R", "Resume lane main?", ["launch", "--resume", "--detach"]),
        ("S", "Stop lane main?", ["stop"]),
    ],
)
def test_lane_keys_run_the_cli_s_command_only_after_y(
    layout: StateLayout, key: str, asked: str, argv: list[str]
) -> None:
    fleet = FakeFleet("main", alive=key == "S")
    app = FleetConsole(layout, None, fleet)

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press(key)
        assert isinstance(app.screen, Confirm) and asked in app.screen.question
        await pilot.press("n")  # no: nothing runs
        assert not isinstance(app.screen, Confirm) and fleet.commands == []
        await pilot.press(key, "y")
        await until(pilot, lambda: fleet.commands, "the command")
        await until(pilot, lambda: any("ran" in n.message for n in app._notifications), "words")

    drive(app, script)
    assert fleet.commands == [argv]


class SlowPlanFleet(FakeFleet):
    """A fleet whose `wave rerun --dry-run` takes until the test lets it answer."""

    def __init__(self, lane: str) -> None:
        super().__init__(lane, alive=False)
        self.go = threading.Event()

    def command(self, argv: list[str]) -> Done:
        self.commands.append(argv)
        if "--dry-run" in argv:
            self.go.wait(10)
            return Done(0, "wave rerun: reruns api; reuses store")
        return Done(0, "")


def test_a_rerun_plan_that_comes_back_after_a_lane_switch_is_not_asked_about(
    layout: StateLayout, tmp_path: Path
) -> None:
    """`r` on lane main, then `L` to lane other while main's plan is being made: the plan is
    dropped, and nothing runs on either lane (before, `y` ran main's plan on lane other)."""
    lanes, main = FakeLanes(tmp_path), SlowPlanFleet("main")
    app = FleetConsole(layout, None, main, lanes)

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        await pilot.press("r")
        await until(pilot, lambda: main.commands, "the plan to be asked for")
        await pilot.press("L", "down", "enter")
        await until(pilot, lambda: app.layout.lane == "other", "the switch to lane other")
        main.go.set()
        await until(
            pilot,
            lambda: any("lane changed" in n.message for n in app._notifications),
            "the plan to be dropped",
        )
        assert not isinstance(app.screen, Confirm)
        await pilot.press("y")

    drive(app, script)
    assert [argv[-1] for argv in main.commands] == ["--dry-run"]
    assert lanes.fleets["other"].commands == []


def test_the_preview_lets_go_of_the_old_lane_s_agent_after_a_switch(
    layout: StateLayout, tmp_path: Path
) -> None:
    lanes = FakeLanes(tmp_path)
    app = FleetConsole(layout, None, FakeFleet("main"), lanes)

    async def script(app: FleetConsole, pilot: Pilot[None]) -> None:
        agent = app.selected()
        assert agent is not None
        log = layout.agent(3, agent).output_log
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("old lane line\n")
        await pilot.press("p")
        await until(pilot, lambda: "old lane line" in list(app.preview.lines), "the preview")
        app.switch_lane("other")
        await until(pilot, lambda: app.layout.lane == "other", "the switch")
        with log.open("a") as fh:
            fh.write("still the old lane\n")
        await pilot.pause(3 * TICK_SECONDS)
        assert list(app.preview.lines) in ([], [""])
        assert "no agent selected" in str(app.preview.border_title)

    drive(app, script)


def test_a_lane_whose_state_folder_is_a_link_is_listed_as_unusable(tmp_path: Path) -> None:
    from wave_orchestrator.cli.dashboard_fleet import CommandLanes

    repo = tmp_path / "repo"
    for lane in ("main", "other"):
        (repo / "lanes" / lane / "waves").mkdir(parents=True)
        (repo / "lanes" / lane / "lane.yaml").write_text("defaults: {executor: local}\n")
    (repo / ".wave").mkdir()
    (repo / ".wave" / "other").symlink_to(tmp_path)
    rows = dict(CommandLanes(repo).lanes())
    assert rows["main"] == "never run"
    assert rows["other"].startswith("state folder unusable")
