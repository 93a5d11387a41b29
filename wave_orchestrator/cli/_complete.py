"""Shell completion of lane names and agent ids (argcomplete calls these while the user types).

They must never fail loudly: a half-typed command line in a folder without lanes completes to
nothing rather than printing an error into the user's prompt.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..definitions.repository import find_repository, list_lanes, resolve_lane_name
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
    import yaml

    repo = _repo(parsed_args)
    if repo is None:
        return []
    try:
        lane = resolve_lane_name(repo, getattr(parsed_args, "lane", None))
    except WaveError:
        return []
    wave = getattr(parsed_args, "wave", None)
    pattern = f"wave-{wave}.yaml" if isinstance(wave, int) else "wave-*.yaml"
    ids: list[str] = []
    for path in sorted((repo / "lanes" / lane / "waves").glob(pattern)):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        agents = data.get("agents") if isinstance(data, dict) else None
        for agent in agents if isinstance(agents, list) else []:
            ident = agent.get("id") if isinstance(agent, dict) else None
            if isinstance(ident, str) and ident.startswith(prefix) and ident not in ids:
                ids.append(ident)
    return ids
