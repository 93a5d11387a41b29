"""`wave status`: waves, agents and whether a launcher is alive, from the state dir."""

from __future__ import annotations

import argparse
from typing import Any

from ..runtime.lock import live_lock
from ..sanitize import clean_tree
from ..state.fsutil import read_json
from ..state.layout import StateLayout
from ..state.lifecycle import TERMINAL
from ..state.run_state import RunState
from ..state.status import StatusUnreadable, read_status
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane, state_layout


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="run state: waves, agents, launcher")
    add_repo(p)
    add_lane(p)
    add_json(p)
    p.set_defaults(handler=run)


def collect(args: argparse.Namespace) -> dict[str, Any]:
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    lock = live_lock(layout.lock)
    alive = lock is not None
    state = RunState(layout.run_state, lane)
    waves = []
    numbered = {
        int(k): v for k, v in state.data["waves"].items() if k.isdigit() and isinstance(v, dict)
    }
    for number in sorted(numbered):
        entry = dict(numbered[number])
        try:
            snapshot = read_json(layout.dashboard(number))
        except (OSError, ValueError):
            snapshot = {}
        snapshot = snapshot if isinstance(snapshot, dict) else {}
        agents = [dict(a) for a in _dicts(snapshot.get("agents")) if "id" in a]
        last: dict[str, str] = {}
        for event in _dicts(snapshot.get("events")):
            if event.get("agent") and event.get("wave") == number:
                last[str(event["agent"])] = (
                    f"{event.get('event')} at {str(event.get('at', ''))[11:23]}Z"
                )
        for a in agents:
            a["last_event"] = last.get(a.get("id", ""))
            if not alive and a.get("state") not in FINAL and a.get("state") != "pending":
                a["state"] = _settled_state(layout, number, str(a["id"]))
        waves.append(
            {
                "wave": number,
                **entry,
                "agents": agents,
                "waiting_on": snapshot.get("waiting_on", [])
                if entry.get("state") == "running"
                else [],
            }
        )
    return {
        "lane": lane,
        "state_dir": str(layout.root),
        "launcher": {
            "alive": alive,
            **(
                {
                    "pid": lock.get("pid"),
                    "started_at": lock.get("started_at"),
                    "waiting_on": next((w["waiting_on"] for w in waves if w["waiting_on"]), []),
                }
                if lock and alive
                else {}
            ),
        },
        "waves": waves,
    }


FINAL = {s.value for s in TERMINAL}


def _settled_state(layout: StateLayout, wave: int, agent: str) -> str:
    """With no launcher alive, the dashboard's "running" is stale: ask the status file."""
    try:
        status = read_status(layout.agent(wave, agent).status)
    except (StatusUnreadable, ValueError):
        return "status-unreadable"
    return status.state.value if status else "orphaned"


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _elapsed(ms: Any) -> str:
    if not isinstance(ms, int):
        return "-"
    s = round(ms / 1000)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run(args: argparse.Namespace) -> int:
    data = collect(args)
    if args.json:  # JSON escapes every control character itself
        emit_json(data)
        return 0
    data = clean_tree(data)  # ids, states, reasons and notes from files agents can write
    launcher = data["launcher"]
    alive = (
        f"alive (pid {launcher['pid']}, since {launcher['started_at']})"
        if launcher["alive"]
        else "not running"
    )
    print(f"lane {data['lane']}: launcher {alive}")
    if launcher.get("waiting_on"):
        print(f"  waiting on: {', '.join(launcher['waiting_on'])}")
    if not data["waves"]:
        print("no wave has run yet")
    for wave in data["waves"]:
        reason = f" - {wave['reason']}" if wave.get("reason") else ""
        state, attempts = wave.get("state", "pending"), wave.get("attempts", 0)
        print(f"wave {wave['wave']}: {state}, attempts {attempts}{reason}")
        if isinstance(wave.get("attempt_reason"), str):
            print(f"  why attempt {attempts}: {wave['attempt_reason']}")
        for a in wave["agents"]:
            code = "-" if a.get("exit_code") is None else a["exit_code"]
            elapsed = _elapsed(a.get("elapsed_ms"))
            limited = a.get("state") == "rate-limited" and a.get("state_note")
            note = f" ({a['state_note']})" if limited else ""
            state = f"{a.get('state', '?')}{note}"
            print(
                f"  {a['id']:<12} {state:<16} "
                f"attempt {a.get('attempt', '?')}  tries {a.get('tries', '?')}  "
                f"elapsed {elapsed}  exit {code}  session {a.get('session', '?')}  "
                f"last event {a.get('last_event') or '-'}"
            )
    return 0
