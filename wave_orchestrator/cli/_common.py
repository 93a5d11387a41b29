"""Flags and helpers every subcommand shares: --repo, --lane, --json, human vs JSON output."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..definitions.repository.lanes import (
    find_repository,
    read_lane_header,
    resolve_lane_name,
    skipped_lane_warnings,
)
from ..errors import UsageError
from ..state.layout import StateLayout, resolve_state_dir
from ._complete import complete_agents, complete_lanes

LANE_HELP = (
    "lane name (default: $WAVE_LANE, else default_lane: in lanes/wave.yaml, else the only lane)"
)


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="repository (default: $WAVE_REPO, else the nearest folder above with lanes/)",
    )


def add_lane(parser: argparse.ArgumentParser, text: str = LANE_HELP) -> None:
    action = parser.add_argument("--lane", metavar="LANE", help=text)
    action.completer = complete_lanes  # type: ignore[attr-defined]


def add_agent_argument(parser: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> None:
    """An agent id argument (positional or --agent) that the shell completes."""
    action = parser.add_argument(*(flags or ("agent",)), **kwargs)
    action.completer = complete_agents  # type: ignore[attr-defined]


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def repo_and_lane(args: argparse.Namespace) -> tuple[Path, str]:
    repo = find_repository(args.repo)
    warn_skipped_lanes(repo)
    return repo, resolve_lane_name(repo, args.lane)


def warn_skipped_lanes(repo: Path) -> None:
    """A lanes/ folder whose name is no lane name is skipped, and said so on stderr."""
    for line in skipped_lane_warnings(repo):
        print(f"wave: warning: {line}", file=sys.stderr)


def state_layout(repo: Path, lane: str) -> StateLayout:
    """The lane's state dir, read without validating the whole lane (read-only commands and
    `wave stop`): a lane.yaml that cannot be read is reported, and the default is used."""
    header = read_lane_header(repo, lane)
    if header.problem is not None:
        print(
            f"wave: warning: {header.problem} (using the default state dir)",
            file=sys.stderr,
        )
    return StateLayout(resolve_state_dir(repo, lane, header.state_dir), lane, repo=repo)


# Inside a JSON string these are written as \\u escapes: C1 controls a terminal would obey
# (U+009B is CSI), and the lone surrogates of a path or value that is not UTF-8.
# A pattern, compiled (and cached by `re`) on the first --json: its Unicode ranges take ~0.7 ms.
UNSAFE_IN_JSON = "[\x7f-\x9f\u2028\u2029\ud800-\udfff]"


def emit_json(data: Any) -> None:
    import json  # --json only

    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(re.sub(UNSAFE_IN_JSON, lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def relative(path: Path, repo: Path) -> str:
    try:
        return str(path.relative_to(repo))
    except ValueError:
        return str(path)


def current_wave(explicit: int | None, layout: StateLayout) -> int:
    """--wave, else the agent's $WAVE_WAVE / $WAVE_NUMBER, else the running (or latest) wave."""
    if explicit is not None:
        if explicit < 1:
            raise UsageError("--wave must be a positive number")
        return explicit
    for name in ("WAVE_WAVE", "WAVE_NUMBER"):
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    wave = _running_wave(layout)
    if wave is None:
        raise UsageError("which wave? pass --wave N (agents get $WAVE_WAVE)")
    return wave


def _running_wave(layout: StateLayout) -> int | None:
    from ..state.run_state import RunState  # not for the commands that never name a wave

    state = RunState(layout.run_state, layout.lane)  # checked field by field
    numbers, running = state.waves_in(), state.waves_in("running")
    return max(running or numbers) if numbers else None


COLOR_CHOICES = ("auto", "always", "never")
_ANSI = {"green": "32", "red": "31", "yellow": "33", "bold": "1", "dim": "2"}


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default="auto",
        help="colour the output: auto (on a terminal, unless $NO_COLOR is set), always, never",
    )


def use_color(mode: str, stream: Any) -> bool:
    """--color's answer for ``stream``: NO_COLOR (https://no-color.org) turns auto off."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def paint(text: str, style: str, enabled: bool) -> str:
    return f"\033[{_ANSI[style]}m{text}\033[0m" if enabled else text


def agent_action(
    actions: Any, name: str, text: str, handler: Any, agent_help: str
) -> argparse.ArgumentParser:
    """One action of a command agents run bare (`wave coord`, `wave feedback`): repository,
    lane, wave and agent default to the agent's WAVE_* environment; a person passes them."""
    from ._help import action_epilog

    prog = f"{actions._prog_prefix} {name}".removeprefix("Usage: ")
    p: argparse.ArgumentParser = actions.add_parser(
        name, help=text, description=text, epilog=action_epilog(prog)
    )
    p.add_argument(
        "--repo",
        metavar="PATH",
        default=os.environ.get("WAVE_REPO"),
        help="repository (default: $WAVE_REPO, else the nearest folder above with lanes/)",
    )
    add_lane(p)
    p.add_argument(
        "--wave", type=int, metavar="N", help="default: $WAVE_WAVE, else the running wave"
    )
    p.add_argument(
        "--agent", metavar="ID", default=os.environ.get("WAVE_AGENT_ID"), help=agent_help
    )
    add_json(p)
    p.set_defaults(handler=handler)
    return p


def person_only(command: str) -> None:
    """A command that speaks for a person: refused in an agent's session (``WAVE_AGENT_ID``
    is set there), so no agent's words reach another agent as a person's."""
    if os.environ.get("WAVE_AGENT_ID"):
        raise UsageError(
            f"`{command}` speaks for a person and is refused in an agent's session "
            "($WAVE_AGENT_ID is set); an agent posts with `wave coord post`, as itself"
        )


def check_recipient(repo: Path, lane: str, wave: int, agent: str | None) -> None:
    """Exit 2 unless the lane has wave ``wave`` and, given, ``agent`` is one of its agents:
    guidance for nobody must not vanish with exit 0."""
    from ..definitions.source.schema import did_you_mean
    from ._complete import wave_agents, wave_numbers

    waves = wave_numbers(repo, lane)
    if wave not in waves:
        known = ", ".join(str(n) for n in waves) or "none"
        raise UsageError(f"lane {lane!r} has no wave {wave} (its waves: {known})")
    ids = wave_agents(repo, lane, wave)
    if agent is not None and agent not in ids:
        raise UsageError(
            f"no agent {agent!r} in wave {wave} of lane {lane!r}{did_you_mean(agent, ids)} "
            f"(its agents: {', '.join(ids) or 'none'})"
        )


MAX_SECONDS = 366 * 86400.0  # a year: any wait longer than that is a typo


def seconds(text: str) -> float:
    """An argparse type for a duration: a finite number of seconds, 0 to a year. `nan`,
    `inf` and `1e400` parse as floats but would never time out (or never wait)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds from 0 to {int(MAX_SECONDS)} (a year)"
        )
    return value
