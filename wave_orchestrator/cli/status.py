"""`wave status`: waves, agents and whether a launcher is alive, from the state dir."""

from __future__ import annotations

import argparse
import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..sanitize import clean_tree, one_line
from ..state.events import local_clock
from ..state.layout import StateLayout, socket_name
from ..state.lifecycle import TERMINAL
from ..state.run_state import RunState
from ..state.shown import governor_lines, live_stream, state_text, stream_text
from ..state.snapshot_schema import GATE_FIELDS
from ..state.untrusted import deploy_line, read_governor, read_launch_record, read_snapshot
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane, state_layout
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "status",
        "run state: waves, agents, launcher",
        "Show whether the lane's launcher is alive, and for every wave that ran: its state and "
        "attempts, a failed gate and what to do about it, open blockers, and each agent's "
        "state, tries, elapsed time, exit code, tmux session and last event; under a running "
        "agent whose CLI streams events, what it does now (a tool, its turns, tokens and cost) "
        "and its last line. Read from the state dir only: works without tmux and while a "
        "launcher runs.",
        [
            ("wave status", "the only lane, $WAVE_LANE or default_lane"),
            ("wave status --lane main --json | jq '.waves[-1].agents'", "for a script"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_json(p)
    p.set_defaults(handler=run)


def collect(args: argparse.Namespace) -> dict[str, Any]:
    from ..state.lock import live_lock

    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    lock = live_lock(layout.lock)
    alive = lock is not None
    if lock and lock.get("state_dir") and Path(lock["state_dir"]) != layout.root:
        # The live launcher keeps its state elsewhere (WAVE_STATE_DIR, an edited state_dir).
        layout = StateLayout(Path(lock["state_dir"]), lane, repo=repo)
    state = RunState(layout.run_state, lane)
    waves = []
    sessions: dict[str, bool] | None = None  # asked only when a launcher died mid-wave
    numbered = {
        int(k): v for k, v in state.data["waves"].items() if k.isdigit() and isinstance(v, dict)
    }
    for number in sorted(numbered):
        # What the next run reads (the retry plan, the agents a gate rejected) stays in
        # run-state.json: launcher bookkeeping, not the wave's state.
        entry = {k: v for k, v in numbered[number].items() if k not in ("plan", "rejected_agents")}
        snapshot = read_snapshot(layout.dashboard(number)) or {}
        agents = [dict(a) for a in snapshot.get("agents", [])]
        last: dict[str, dict[str, Any]] = {}
        for event in _dicts(snapshot.get("events")):
            if event.get("agent") and event.get("wave") == number:
                # JSON readers get the event itself ({event, at, ...}), not a sentence
                last[str(event["agent"])] = {
                    k: v for k, v in event.items() if k not in ("agent", "wave", "lane")
                }
        for a in agents:
            a["last_event"] = last.get(a.get("id", ""))
            if not alive and a.get("state") not in FINAL and a.get("state") != "pending":
                if sessions is None:
                    sessions = _running_sessions(layout, repo)
                _settle(a, layout, number, sessions)
        waves.append(
            {
                "wave": number,
                **entry,
                "agents": agents,
                "waiting_on": snapshot.get("waiting_on", [])
                if entry.get("state") == "running"
                else [],
                "gate_failure": _gate_failure(entry, snapshot),
                "gaps": _dicts(snapshot.get("gaps")),
                "cluster_unreachable_since": snapshot.get("cluster_unreachable_since")
                if entry.get("state") == "running"
                else None,
                "coordination": snapshot.get("coordination")
                if entry.get("state") == "running"
                and isinstance(snapshot.get("coordination"), dict)
                else None,
            }
        )
    gone = None if alive else _gone_launcher(layout, bool(state.waves_in("running")))
    if not alive:
        for wave in waves:
            if wave.get("state") == "running":  # nobody runs it: never shown as running
                wave["recorded_state"], wave["state"] = "running", "interrupted"
                wave["reason"] = (
                    f"{_not_running(gone)}: resume it with `wave launch --resume`, "
                    "or stop its agents with `wave stop`"
                )
    return {
        "lane": lane,
        "state_dir": str(layout.root),
        "launcher": {
            "alive": alive,
            **({"pid": gone} if gone is not None else {}),
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
        "governor": read_governor(layout.governor),
        **({"problem": state.problem} if state.problem else {}),
    }


def _not_running(pid: int | None) -> str:
    return "launcher not running" + (f" (pid {pid})" if pid is not None else "")


def _gone_launcher(layout: StateLayout, mid_wave: bool) -> int | None:
    """The pid of the lane's last launcher when it died without a word: the lock file it
    left (kill -9), else, with a wave still recorded running, its `launcher_started` event."""
    from ..state.lock import stale_holder

    pid = stale_holder(layout.lock)
    if pid is not None or not mid_wave:
        return pid
    from ..state.fsutil import open_read

    try:
        with open_read(layout.events) as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - 256 * 1024))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(tail):
        if '"launcher_started"' in line:
            found = _started_pid(line)
            if found is not None:
                return found
    return None


def _started_pid(line: str) -> int | None:
    """The pid of a `launcher_started` line of events.jsonl (a file agents could write)."""
    import json

    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("event") != "launcher_started":
        return None
    pid = event.get("pid")
    return pid if type(pid) is int and 1 < pid < 2**22 else None


FINAL = {s.value for s in TERMINAL} | {"reused"}  # reused: an earlier run's success stands


def _gate_failure(entry: dict[str, Any], snapshot: dict[str, Any]) -> dict[str, str] | None:
    """The wave's last failed gate (run state once it ended, the dashboard while it runs);
    none for a completed wave: a gate that failed on an earlier attempt passed since."""
    if entry.get("state") == "completed":
        return None
    found = entry.get("gate_failure") or snapshot.get("gate_failure")
    if not isinstance(found, dict):
        return None
    return {k: found[k] for k in GATE_FIELDS if isinstance(found.get(k), str)}


def _print_gate_and_board(wave: dict[str, Any]) -> None:
    gate, talk = wave.get("gate_failure"), wave.get("coordination")
    failed = isinstance(gate, dict) and bool(gate.get("status"))
    if not failed and not isinstance(talk, dict):
        return
    if isinstance(gate, dict) and failed:
        print(
            f"  {gate.get('stage', '?')} gate failed: {one_line(gate['status'])}"
            + (f" - {one_line(gate['detail'])[:300]}" if gate.get("detail") else "")
        )
        if gate.get("action"):
            print(f"  what to do: {one_line(gate['action'])}")
        for key in ("report", "log"):
            if gate.get(key):
                print(f"  {key}: {one_line(gate[key])}")
    if isinstance(talk, dict):
        for key, title in (("blockers", "open blocker"), ("requests", "open request")):
            for item in _dicts(talk.get(key)):
                said = _said(item, "id", "agent", "summary")
                print(f"  {title} {said[0]} from {said[1]}: {said[2]}")
        for item in _dicts(talk.get("questions")):
            said = _said(item, "id", "agent", "question")
            print(f"  question {said[0]} from {said[1]}: {said[2]}")
        if isinstance(talk.get("board"), str):
            print(f"  board: {one_line(talk['board'])}")


def _said(item: dict[str, Any], *keys: str) -> list[str]:
    """Fields of an item agents wrote, each one line a terminal shows as text."""
    return [one_line(str(item.get(key))) for key in keys]


def _settle(
    agent: dict[str, Any], layout: StateLayout, wave: int, sessions: dict[str, bool]
) -> None:
    """With no launcher alive, the dashboard's "running" is stale: the status file says how
    the agent ended; without one, an agent whose session still runs is `running (no
    launcher)`, its elapsed time counted to now; one whose session is gone is `orphaned`."""
    from ..state.status import StatusUnreadable, read_status  # only once a launcher died

    paths = layout.agent(wave, str(agent["id"]))
    try:
        status = read_status(paths.status)
    except (StatusUnreadable, ValueError):
        agent["state"] = "status-unreadable"
        return
    if status is not None and status.limited_until is not None:  # parked on a usage limit
        agent["state"] = "limited"
        agent["limited_until"] = _iso(status.limited_until)
    elif status is not None:
        agent["state"] = status.state.value
    elif agent.get("session") in sessions:
        queued = sessions[agent["session"]]
        agent["state"] = "queued (no launcher)" if queued else "running (no launcher)"
        launched = read_launch_record(paths.launch_record).launched_at
        if launched is not None:
            agent["elapsed_ms"] = max(0, int((time.time() - launched) * 1000))
    else:
        agent["state"] = "orphaned"


def _iso(epoch: float) -> str | None:
    """An agent-written time as ISO text; None for one no calendar holds (never a trace:
    `wave status` is how a person looks at a broken lane)."""
    try:
        return datetime.fromtimestamp(epoch, UTC).isoformat()
    except (ValueError, OverflowError, OSError):
        return None


def _running_sessions(layout: StateLayout, repo: Path) -> dict[str, bool]:
    """The lane's agents that still run where its last launch placed them: session -> queued
    (a Slurm job waiting for resources). A local lane asks its tmux server; a Slurm lane asks
    squeue for this user's jobs (a cluster that does not answer: none known)."""
    from ..placement.choose import recorded_placement
    from ..placement.tmux import running_sessions

    placement = recorded_placement(layout, repo)
    if placement.kind == "local":
        return dict.fromkeys(running_sessions(socket_name(layout.lane, repo)), False)
    with contextlib.closing(placement):
        found = placement.sessions()
    return {name: info.queued for name, info in found.items() if not info.dead}


def _print_stream(agent: dict[str, Any]) -> None:
    """Under a running agent whose CLI streams events: what it does, and its last line."""
    if (stream := live_stream(agent)) is None:
        return
    if doing := stream_text(stream):
        print(f"{'':<15}{doing}")
    if isinstance(said := stream.get("last_line"), str) and said:
        print(f"{'':<15}last said: {one_line(said)}")


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _event_text(event: Any) -> str:
    if not isinstance(event, dict) or not event.get("event"):
        return "-"
    return f"{event['event']} at {str(event.get('at', ''))[11:23]}Z"


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
        f"launcher alive (pid {launcher['pid']}, since {launcher['started_at']})"
        if launcher["alive"]
        else _not_running(launcher.get("pid"))
    )
    print(f"lane {data['lane']}: {alive}")
    if data.get("problem"):
        print(f"  warning: {data['problem']}")
    for line in governor_lines(data.get("governor") or {}):
        print(f"  {line}")
    if launcher.get("waiting_on"):
        print(f"  waiting on: {', '.join(launcher['waiting_on'])}")
    if not data["waves"]:
        print("no wave has run yet")
    for wave in data["waves"]:
        reason = f" - {wave['reason']}" if wave.get("reason") else ""
        state, attempts = wave.get("state", "pending"), wave.get("attempts", 0)
        print(f"wave {wave['wave']}: {state}, attempts {attempts}{reason}")
        if isinstance(wave.get("waiting_for"), str):
            print(f"  waiting for {wave['waiting_for']}")
        if isinstance(wave.get("attempt_reason"), str):
            print(f"  why attempt {attempts}: {wave['attempt_reason']}")
        if isinstance(wave.get("cluster_unreachable_since"), str):
            since = local_clock(wave["cluster_unreachable_since"])
            print(f"  cluster unreachable since {since}: agents kept as they were")
        _print_gate_and_board(wave)
        if deploys := deploy_line(wave["agents"]):
            print(f"  deploys: {deploys}")
        for gap in wave.get("gaps") or []:
            print(f"  gap {gap.get('kind')} ({gap.get('agent')}): {gap.get('detail') or '-'}")
        states = [state_text(a) for a in wave["agents"]]
        width = max([16, *(len(st) + 1 for st in states)])  # `running (no launcher)` fits
        for a, state in zip(wave["agents"], states, strict=True):
            code = "-" if a.get("exit_code") is None else a["exit_code"]
            elapsed = _elapsed(a.get("elapsed_ms"))
            print(
                f"  {a['id']:<12} {state:<{width}} "
                f"attempt {a.get('attempt', '?')}  tries {a.get('tries', '?')}  "
                f"elapsed {elapsed}  exit {code}  session {a.get('session', '?')}  "
                f"last event {_event_text(a.get('last_event'))}"
            )
            _print_stream(a)
    return 0
