"""`wave lanes`: every lane of the repository, its waves and its last result."""

from __future__ import annotations

import argparse
from typing import Any

from ..definitions.repository.lanes import find_repository, list_lanes, read_lane_header
from ..names import WAVE_FILE_RE
from ..sanitize import strip_controls
from ..state.run_state import RunState
from ._common import add_json, add_repo, emit_json, state_layout, warn_skipped_lanes
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "lanes",
        "list lanes with their wave counts and last result",
        "List the lanes of the repository (every lanes/<name>/lane.yaml) with how many waves "
        "each has, the last wave result recorded in its state dir and its description.",
        [("wave lanes", ""), ("wave lanes --repo ~/src/app --json", "another repository")],
    )
    add_repo(p)
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    repo = find_repository(args.repo)
    warn_skipped_lanes(repo)
    rows = []
    for name in list_lanes(repo):
        lane_dir = repo / "lanes" / name
        waves = [
            p for p in (lane_dir / "waves").glob("wave-*.yaml") if WAVE_FILE_RE.fullmatch(p.name)
        ]
        header = read_lane_header(repo, name)
        description = "(lane.yaml unreadable)" if header.problem else header.description
        history = RunState(state_layout(repo, name).run_state, name).data["history"]
        last = history[-1] if history else None
        result = f"wave {last['wave']} {last['to']}" if last else "never run"
        rows.append(
            {
                "lane": name,
                "waves": len(waves),
                "description": description or "",
                "last_result": result,
                "last_at": last["at"] if last else None,
            }
        )
    if args.json:
        emit_json({"lanes": rows})
        return 0
    if not rows:
        print(f"no lanes in {repo / 'lanes'} (create one with `wave init`)")
    for r in rows:
        description = strip_controls(str(r["description"]))
        print(f"{r['lane']:<16} {r['waves']:>3} wave(s)  {r['last_result']:<22} {description}")
    return 0
