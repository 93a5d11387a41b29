"""`wave validate`: load and check the whole lane; print a line per wave."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from ..definitions.lane_loader import load_lane
from ..errors import LaneInvalid
from ..sanitize import strip_controls
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="validate a lane; exit 0 when valid, 2 when not")
    add_repo(p)
    add_lane(p)
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    repo, lane_name = repo_and_lane(args)
    try:
        lane = load_lane(repo, lane_name)
    except LaneInvalid as exc:
        if args.json:
            emit_json(
                {"lane": lane_name, "valid": False, "errors": [p.__dict__ for p in exc.problems]}
            )
        raise
    waves: list[dict[str, Any]] = []
    for wave in lane.waves:
        waves.append(
            {
                "wave": wave.number,
                "title": wave.title,
                "agents": len(wave.agents),
                "closure_agents": sum(1 for a in wave.agents if a.is_closure),
                "executors": dict(Counter(a.executor.id for a in wave.agents)),
            }
        )
    if args.json:
        emit_json({"lane": lane.name, "valid": True, "waves": waves})
        return 0
    for w in waves:
        ex = ", ".join(f"{k} x{v}" for k, v in w["executors"].items())
        agents = f"{w['agents']} agents ({w['closure_agents']} closure)"
        title = strip_controls(str(w["title"]))  # a lane file's words, shown, never obeyed
        print(f"wave {w['wave']}: {title} - {agents}, {ex}")
    print(f"lane {lane.name}: valid, {len(waves)} wave(s)")
    return 0
