"""What a newcomer saw cut or odd on screen: a lane's stages past the 80th column, a table
squeezed beside the preview, a state column wider than any state shown, scrollbar remnants
under the table and at the panes' bottom rows. Each checked on the text of the whole screen
(Textual's pilot) or of the plain view, at the widths people use."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done
from wave_orchestrator.dashboard.render import render
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
STAGES = ["implementation", "cont-eval", "security", "integration", "documentation"]
STAGES += ["cont-qa", "infra"]  # the demo's wave 2: all seven closure stages
BLOCKS = "▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▐"  # what a scrollbar or a half-drawn edge leaves


class QuietFleet:
    def command(self, argv: list[str]) -> Done:
        return Done(0, "")

    def attach(self, argv: list[str]) -> Done:
        return Done(0, "")

    def launcher_alive(self) -> bool:
        return True

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        return {}


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


async def until(pilot: Pilot[None], condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


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
