"""What the console's pilot tests share: a fleet whose commands succeed and say nothing, a
wait for a condition with a deadline, and the header as plain text."""

from __future__ import annotations

import io
import time
from collections.abc import Callable

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.fleet import Done


class QuietFleet:
    """Every command succeeds and prints nothing; a launcher runs the lane."""

    def command(self, argv: list[str]) -> Done:
        return Done(0, "")

    def attach(self, argv: list[str]) -> Done:
        return Done(0, "")

    def launcher_alive(self) -> bool:
        return True

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        return {}


async def until(pilot: Pilot[None], condition: Callable[[], object], what: str) -> None:
    """Let the app run until ``condition()`` holds; fail with ``what`` after 10 s."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def head_text(app: FleetConsole, width: int = 100) -> str:
    """The header as plain text at ``width`` columns."""
    console = Console(width=width, file=io.StringIO(), record=True, no_color=True)
    console.print(app.screen.query_one("#head", Static).content)
    return console.export_text()
