"""`wave validate`: load and check the whole lane; print a line per wave."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from ..errors import LaneInvalid
from ..sanitize import strip_controls
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "validate",
        "validate a lane; exit 0 when valid, 2 when not",
        "Load the lane's lane.yaml and every waves/wave-<n>.yaml and check every rule: fields "
        "and their types, executor settings, roles, closure gates, owned paths, dependencies. "
        "Every problem is printed as file:line:col: field: message, sorted by file and line, "
        "with a suggestion for a misspelt key, executor or role. Nothing is started, and "
        "neither tmux nor any agent CLI is needed.",
        [
            ("wave validate", "the only lane, $WAVE_LANE or default_lane"),
            ("wave validate --lane main --json", "for a script or an editor"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..definitions.loading.lane_loader import load_lane

    repo, lane_name = repo_and_lane(args)
    try:
        lane = load_lane(repo, lane_name)
    except LaneInvalid as exc:
        if args.json:
            emit_json(
                {"lane": lane_name, "valid": False, "errors": [p._asdict() for p in exc.problems]}
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
