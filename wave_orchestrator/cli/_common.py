"""Flags and helpers every subcommand shares: --repo, --lane, --json, human vs JSON output."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..definitions.repository import (
    find_repository,
    read_lane_header,
    resolve_lane_name,
    skipped_lane_warnings,
)
from ..errors import UsageError
from ..state.layout import StateLayout, resolve_state_dir
from ..state.run_state import RunState


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo", metavar="PATH", help="repository (default: nearest folder with lanes/)"
    )


def add_lane(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lane", metavar="L", help="lane name (optional when the repository has one lane)"
    )


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
UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def emit_json(data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


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
    waves = RunState(layout.run_state, layout.lane).data["waves"]  # checked field by field
    numbers = [int(k) for k in waves]
    running = [n for n in numbers if waves[str(n)]["state"] == "running"]
    return max(running or numbers) if numbers else None
