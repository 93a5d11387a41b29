"""`wave dashboard`: the live view of a lane's current wave (`--once`: one frame)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from ..errors import UsageError, WaveError
from ._common import add_color, add_lane, add_repo, repo_and_lane, state_layout
from ._complete import wave_numbers
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "dashboard",
        "live dashboard of the lane's current wave",
        "On a terminal, an interactive console of the lane's current wave: each agent's "
        "state, attempt, elapsed time, tokens, cost and last line, the closure stages, open "
        "questions and spend; pick an agent with the arrows or j/k, then l its output, d its "
        "diff, Enter attach, s stop, r rerun, a answer, c comment (p preview, o order, w "
        "wave, L lane, O launcher log, b board, e events, G/R/S start, resume, stop the "
        "lane, / filter or find, ? keys, q quit). Piped, with --once, --plain, NO_COLOR or "
        "--color never: the plain view, redrawn as the launcher writes (Ctrl-C leaves); "
        "--once prints one frame.",
        [
            ("wave dashboard", "the interactive console of the current wave"),
            ("wave dashboard --plain", "the plain live view (no keys)"),
            ("wave dashboard --wave 2 --once --width 80", "one frame of wave 2"),
        ],
    )
    add_repo(p)
    add_lane(p)
    p.add_argument(
        "--wave", type=int, metavar="N", help="show this wave (default: the current one)"
    )
    p.add_argument("--once", action="store_true", help="print one frame and exit")
    p.add_argument("--plain", action="store_true", help="the plain live view, without keys")
    p.add_argument(
        "--width", type=int, metavar="COLS", help="frame width (default: the terminal's)"
    )
    p.add_argument(
        "--height", type=int, metavar="ROWS", help="frame height (default: the terminal's)"
    )
    add_color(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # rich loads only here: other commands start faster without it.
    from rich.console import Console

    from ..dashboard.render import show_live, show_once

    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if args.wave is not None and args.wave not in (numbers := wave_numbers(repo, lane)):
        listed = ", ".join(map(str, numbers)) or "none"
        raise UsageError(f"lane {lane!r} has no wave {args.wave} (waves: {listed})")
    if _interactive(args):
        from ..dashboard.console_app import FleetConsole
        from .dashboard_fleet import CommandFleet, CommandLanes

        fleet = CommandFleet(repo, lane, layout)
        app = FleetConsole(layout, args.wave, fleet, CommandLanes(repo))
        app.run()
        if app.failure is not None:
            raise WaveError(
                f"the dashboard stopped on an error ({type(app.failure).__name__}: "
                f"{app.failure}); `wave dashboard --plain` shows the wave without "
                "keys"
            )
        return 0
    console = Console(
        width=args.width,
        height=args.height,
        no_color=args.color == "never" or (args.color == "auto" and "NO_COLOR" in os.environ),
        force_terminal=True if args.color == "always" else None,
        highlight=False,
    )
    if args.once:
        show_once(layout, args.wave, console)
        return 0
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person leaves it
        show_live(layout, args.wave, console)
    return 0


def _interactive(args: argparse.Namespace) -> bool:
    """The console on a terminal; the plain view when piped, asked for, or colour is off."""
    plain = args.once or args.plain or args.width is not None or args.height is not None
    colourless = args.color == "never" or (args.color == "auto" and "NO_COLOR" in os.environ)
    terminal = sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    return not plain and not colourless and terminal
