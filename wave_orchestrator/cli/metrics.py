"""`wave metrics`: runs, success, timings, tokens and cost per model."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..definitions.repository.lanes import find_repository, list_lanes, resolve_lane_name
from ..metrics.report import (
    BY_CHOICES,
    SORT_CHOICES,
    aggregate,
    format_table,
    read_records,
    read_verdicts,
)
from ._common import add_json, add_lane, add_repo, emit_json, state_layout, warn_skipped_lanes
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "metrics",
        "runs, success rate, durations, tokens and cost per model and reasoning",
        "Aggregate every finished agent attempt recorded in the lanes' metrics.jsonl: runs, "
        "success rate, average and longest duration, tokens, tokens per second and cost, per "
        "model and reasoning level (or per model and role). Reads the state dirs only.",
        [
            ("wave metrics", "every lane of the repository"),
            ("wave metrics --by role --sort avg", "fastest model per role first"),
            ("wave metrics --lane main --filter claude --json", "for a script"),
        ],
    )
    add_repo(p)
    add_lane(p, "lane name (default: $WAVE_LANE, else every lane of the repository)")
    p.add_argument(
        "--by",
        choices=(*BY_CHOICES, "wave"),
        default="model",
        help="group per model, per model and role, or show per-wave task stats",
    )
    p.add_argument(
        "--sort",
        choices=SORT_CHOICES,
        default="runs",
        help="runs, success and cost descending, avg ascending (fastest first)",
    )
    p.add_argument(
        "--filter",
        metavar="TEXT",
        help="only runs whose agent, model, reasoning, role or status contains TEXT",
    )
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    repo = find_repository(getattr(args, "repo", None))
    warn_skipped_lanes(repo)
    lane = getattr(args, "lane", None) or os.environ.get("WAVE_LANE") or None
    lanes = [resolve_lane_name(repo, lane)] if lane is not None else list_lanes(repo)
    # WAVE_STATE_DIR can point every lane at one folder: read each file once
    layouts = {(lay := state_layout(repo, name)).metrics.resolve(): lay for name in lanes}
    paths = list(layouts)
    records = read_records(paths)
    by = getattr(args, "by", "model")
    if by == "wave":
        return _waves(records, layouts.values(), getattr(args, "json", False))
    filter_text = getattr(args, "filter", None)
    groups = aggregate(
        records,
        by=by,
        sort=getattr(args, "sort", "runs"),
        filter_text=filter_text,
        verdicts=read_verdicts(layout.verdicts for layout in layouts.values()),
    )
    if getattr(args, "json", False):
        emit_json({"groups": groups})
    elif groups:
        print(format_table(groups, by))
    elif records and filter_text:
        print(f"no runs match --filter {filter_text!r}")
    else:
        print("no runs recorded yet")
    return 0


def _waves(records: list[dict[str, Any]], layouts: Any, as_json: bool) -> int:
    """Per-wave task stats: completed, abandoned and active tasks, mean time to complete."""
    from ..metrics.report import read_verdicts
    from ..metrics.tasks import format_waves, wave_stats

    layouts = list(layouts)
    verdicts = read_verdicts(layout.verdicts for layout in layouts)
    rows = wave_stats(records, _active(layouts), verdicts)
    if as_json:
        emit_json({"waves": rows})
    else:
        print(format_waves(rows) if rows else "no runs recorded yet")
    return 0


def _active(layouts: Any) -> dict[tuple[str, int], set[str]]:
    """The agents each lane's live launcher runs now, by (lane, wave), from its dashboard."""
    from ..state.lifecycle import TERMINAL
    from ..state.lock import live_lock
    from ..state.run_state import RunState
    from ..state.untrusted import read_snapshot

    done = {s.value for s in TERMINAL} | {"pending", "reused"}
    found: dict[tuple[str, int], set[str]] = {}
    for layout in layouts:
        if live_lock(layout.lock) is None:
            continue
        state = RunState(layout.run_state, layout.lane)
        for number in state.waves_in("running"):
            snap = read_snapshot(layout.dashboard(number)) or {}
            agents = {
                str(a.get("id"))
                for a in snap.get("agents", [])
                if isinstance(a, dict) and a.get("state") not in done
            }
            found[(layout.lane, number)] = agents
    return found
