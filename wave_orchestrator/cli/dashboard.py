"""`wave dashboard`: the live view of a lane's current wave (`--once`: one frame)."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from ..errors import UsageError
from ._common import add_color, add_lane, add_repo, repo_and_lane, state_layout
from ._complete import wave_numbers
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "dashboard",
        "live dashboard of the lane's current wave",
        "Draw the lane's current wave live: each agent's state, elapsed time and last line, "
        "the closure stages and the latest events, refreshed as the launcher writes them. "
        "Ctrl-C leaves. --once prints one frame (plain text when piped).",
        [
            ("wave dashboard", "follow the current wave"),
            ("wave dashboard --wave 2 --once --width 80", "one frame of wave 2"),
        ],
    )
    add_repo(p)
    add_lane(p)
    p.add_argument(
        "--wave", type=int, metavar="N", help="show this wave (default: the current one)"
    )
    p.add_argument("--once", action="store_true", help="print one frame and exit")
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
