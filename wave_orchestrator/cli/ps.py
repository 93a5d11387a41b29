"""`wave ps`: running launchers across repositories, from the user-wide registry."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import add_json, emit_json
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "ps",
        "list running launchers across repositories",
        "List every launcher running on this machine for this user, whatever the repository: "
        "its pid, repository, lane, current wave, agents running and finished, when it started "
        "and its tmux socket. Launchers register under $XDG_STATE_HOME/wave/launchers "
        "(~/.local/state/wave/launchers); entries of launchers that died are pruned as they "
        "are read.",
        [
            ("wave ps", "what runs where"),
            ("wave ps --json | jq '.launchers[].lane'", "for scripts"),
        ],
    )
    add_json(p)
    p.set_defaults(handler=run)


def collect(gone: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Live launchers; an entry whose launcher no longer holds its lane is removed (and,
    given ``gone``, added to it: a launcher that died is said to be gone, once)."""
    from ..state.layout import StateLayout
    from ..state.lifecycle import TERMINAL
    from ..state.lock import live_lock
    from ..state.registry import process_started, read_entries, unregister_launcher
    from ..state.run_state import RunState
    from ..state.untrusted import read_snapshot, text

    finished = {s.value for s in TERMINAL}
    rows = []
    for path, entry in read_entries():
        try:
            layout = StateLayout(Path(str(entry["state_dir"])), str(entry["lane"]))
            holder = live_lock(layout.lock)
        except (KeyError, OSError, ValueError):
            holder = None
        started = entry.get("pid_started")
        same = started is None or started == process_started(entry["pid"])
        if holder is None or holder.get("pid") != entry["pid"] or not same:
            unregister_launcher(path)
            if gone is not None:
                gone.append(
                    {"pid": entry["pid"], **{k: text(entry.get(k)) for k in ("lane", "repo")}}
                )
            continue
        running = RunState(layout.run_state, layout.lane).waves_in("running")
        wave = max(running) if running else None
        agents = (read_snapshot(layout.dashboard(wave)) or {}).get("agents", []) if wave else []
        states = [a.get("state") for a in agents if isinstance(a, dict)]
        rows.append(
            {
                "pid": entry["pid"],
                "repo": text(entry.get("repo")),
                "lane": layout.lane,
                "wave": wave,
                "agents_running": sum(1 for s in states if s not in finished and s != "pending"),
                "agents_finished": sum(1 for s in states if s in finished),
                "agents_total": len(states),
                "started_at": text(entry.get("started_at"), 40),
                "socket": text(entry.get("socket"), 100),
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    gone: list[dict[str, Any]] = []
    rows = collect(gone)
    if args.json:
        emit_json({"launchers": rows, "gone": gone})
        return 0
    from ..sanitize import clean_tree

    for g in clean_tree(gone):  # a launcher that died without unregistering (kill -9)
        print(f"launcher not running (pid {g['pid']}): lane {g['lane']} in {g['repo']}")
    if not rows:
        print("no launcher is running")
        return 0
    rows = clean_tree(rows)  # registry entries are files anyone of this user can write
    print(f"{'PID':>7}  {'LANE':<14} {'WAVE':>4}  {'AGENTS':<14} {'STARTED':<20} REPO / SOCKET")
    for r in rows:
        agents = f"{r['agents_running']} run, {r['agents_finished']} done"
        print(
            f"{r['pid']:>7}  {r['lane']:<14} {r['wave'] or '-':>4}  {agents:<14} "
            f"{str(r['started_at'])[:19]:<20} {r['repo']}  ({r['socket']})"
        )
    return 0
