"""`wave status`: waves, agents and whether a launcher is alive, from the state dir."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..coordination.views import clean
from ..runtime.lock import live_lock
from ..sanitize import clean_tree
from ..state.layout import StateLayout
from ..state.lifecycle import TERMINAL
from ..state.run_state import GATE_FIELDS, RunState
from ..state.status import StatusUnreadable, read_status
from ..state.untrusted import read_snapshot
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
    if lock and lock.get("state_dir") and Path(lock["state_dir"]) != layout.root:
        # The live launcher keeps its state elsewhere (WAVE_STATE_DIR, an edited state_dir).
        layout = StateLayout(Path(lock["state_dir"]), lane, repo=repo)
    state = RunState(layout.run_state, lane)
    waves = []
    numbered = {
        int(k): v for k, v in state.data["waves"].items() if k.isdigit() and isinstance(v, dict)
    }
    for number in sorted(numbered):
        entry = dict(numbered[number])
        snapshot = read_snapshot(layout.dashboard(number)) or {}
        agents = [dict(a) for a in snapshot.get("agents", [])]
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
                "gate_failure": _gate_failure(entry, snapshot),
                "coordination": snapshot.get("coordination")
                if entry.get("state") == "running"
                and isinstance(snapshot.get("coordination"), dict)
                else None,
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
        **({"problem": state.problem} if state.problem else {}),
    }


FINAL = {s.value for s in TERMINAL}


def _gate_failure(entry: dict[str, Any], snapshot: dict[str, Any]) -> dict[str, str] | None:
    """The wave's last failed gate (run state once it ended, the dashboard while it runs)."""
    found = entry.get("gate_failure") or snapshot.get("gate_failure")
    if not isinstance(found, dict):
        return None
    return {k: found[k] for k in GATE_FIELDS if isinstance(found.get(k), str)}


def _print_gate_and_board(wave: dict[str, Any]) -> None:
    gate = wave.get("gate_failure")
    if isinstance(gate, dict) and gate.get("status"):
        print(
            f"  {gate.get('stage', '?')} gate failed: {clean(gate['status'])}"
            + (f" - {clean(gate['detail'])[:300]}" if gate.get("detail") else "")
        )
        if gate.get("action"):
            print(f"  what to do: {clean(gate['action'])}")
        for key in ("report", "log"):
            if gate.get(key):
                print(f"  {key}: {clean(gate[key])}")
    talk = wave.get("coordination")
    if isinstance(talk, dict):
        for key, title in (("blockers", "open blocker"), ("requests", "open request")):
            for item in _dicts(talk.get(key)):
                print(
                    f"  {title} {clean(str(item.get('id')))} from {clean(str(item.get('agent')))}: "
                    f"{clean(str(item.get('summary')))}"
                )
        if isinstance(talk.get("board"), str):
            print(f"  board: {clean(talk['board'])}")


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
    if data.get("problem"):
        print(f"  warning: {data['problem']}")
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
        _print_gate_and_board(wave)
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
