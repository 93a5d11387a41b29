"""Shell completion of lane names and agent ids (argcomplete calls these while the user types).

They must never fail loudly: a half-typed command line in a folder without lanes completes to
nothing rather than printing an error into the user's prompt.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..definitions.repository.lanes import find_repository, list_lanes, resolve_lane_name
from ..errors import WaveError


def _repo(parsed: argparse.Namespace) -> Path | None:
    try:
        return find_repository(getattr(parsed, "repo", None))
    except WaveError:
        return None


def complete_lanes(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    repo = _repo(parsed_args)
    return [lane for lane in list_lanes(repo) if lane.startswith(prefix)] if repo else []


def complete_agents(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """Agent ids of the lane's wave files (every wave, or --wave N's)."""
    repo = _repo(parsed_args)
    if repo is None:
        return []
    try:
        lane = resolve_lane_name(repo, getattr(parsed_args, "lane", None))
    except WaveError:
        return []
    wave = getattr(parsed_args, "wave", None)
    numbers = [wave] if isinstance(wave, int) else wave_numbers(repo, lane)
    ids = [i for n in numbers for i in wave_agents(repo, lane, n) if i.startswith(prefix)]
    return list(dict.fromkeys(ids))


def wave_numbers(repo: Path, lane: str) -> list[int]:
    """The waves a lane's folder defines (by file name), in order."""
    found = []
    for path in (repo / "lanes" / lane / "waves").glob("wave-*.yaml"):
        number = path.name.removeprefix("wave-").removesuffix(".yaml")
        if number.isdigit():
            found.append(int(number))
    return sorted(found)


def wave_agents(repo: Path, lane: str, wave: int) -> list[str]:
    """The agent ids a wave file names, read leniently (no validation): for completion and
    for telling an agent that has not started from one that does not exist."""
    import yaml

    path = repo / "lanes" / lane / "waves" / f"wave-{wave}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    agents = data.get("agents") if isinstance(data, dict) else None
    ids = [a.get("id") for a in agents if isinstance(a, dict)] if isinstance(agents, list) else []
    return [i for i in ids if isinstance(i, str)]
