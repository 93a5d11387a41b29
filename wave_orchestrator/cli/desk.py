"""`wave desk`: claim, hand over and wait for files shared by agents of one wave.

Agents learn who they are from their WAVE_* environment; a person passes --agent and --wave.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, WaveError
from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from ._common import (
    LANE_HELP,
    add_agent_argument,
    add_json,
    add_lane,
    current_wave,
    emit_json,
    repo_and_lane,
    seconds,
    state_layout,
)
from ._complete import wave_agents
from ._help import action_epilog, add_command

if TYPE_CHECKING:
    from ..coordination.log import CoordLog
    from ..desk.claims import Desk


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "desk",
        "file claims for agents that share files",
        "Agents of one wave that may edit the same files (shared_files: true) take turns "
        "through the desk: claim a file before editing it, hand it over with a note when done, "
        "wait until one is handed to you. Agents get --agent, --lane and --wave from their "
        "WAVE_* environment; a person passes them. Run `wave desk ACTION --help` for each.",
        [
            ('wave desk claim src/app.py --intent "add the route"', "as an agent"),
            ('wave desk handover src/app.py --note "route added, tests pending"', ""),
            ("wave desk status --lane main --wave 2", "as a person: who holds what"),
        ],
    )
    desk = p.add_subparsers(dest="desk_command", metavar="ACTION", required=True)
    claim = _action(desk, "claim", "claim a file before editing it", _claim)
    claim.add_argument("path", help="the file, relative to the repository")
    claim.add_argument("--intent", default="", help="what you are about to do with it")
    handover = _action(desk, "handover", "pass a file you hold to the next in its queue", _handover)
    handover.add_argument("path", help="the file you hold, relative to the repository")
    handover.add_argument("--note", required=True, help="what the next holder should know")
    _action(desk, "mine", "what you hold and what you are queued for", _mine)
    wait = _action(desk, "wait", "return when a file is handed to you", _wait)
    wait.add_argument(
        "--timeout", type=seconds, metavar="S", help="give up after S seconds (exit 1)"
    )
    _action(desk, "status", "holders, queues and the handover log", _status, needs_agent=False)


def _action(desk: Any, name: str, text: str, handler: Any, needs_agent: bool = True) -> Any:
    p = desk.add_parser(
        name,
        help=text,
        description=text[:1].upper() + text[1:] + ".",
        epilog=action_epilog(f"wave desk {name}"),
    )
    p.add_argument(
        "--repo",
        metavar="PATH",
        default=os.environ.get("WAVE_REPO"),
        help="repository (default: $WAVE_REPO, else the nearest folder above with lanes/)",
    )
    add_lane(p, LANE_HELP)
    p.add_argument(
        "--wave", type=int, metavar="N", help="default: $WAVE_WAVE, else the running wave"
    )
    if needs_agent:
        add_agent_argument(
            p,
            "--agent",
            metavar="ID",
            default=os.environ.get("WAVE_AGENT_ID"),
            help="who you are (default: $WAVE_AGENT_ID)",
        )
    add_json(p)
    p.set_defaults(handler=lambda args: handler(args, _open(args, needs_agent)))
    return p


def _open(args: argparse.Namespace, needs_agent: bool) -> Desk:
    from ..desk.claims import Desk

    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if needs_agent and (not args.agent or not AGENT_ID_RE.fullmatch(args.agent)):
        raise UsageError("who are you? pass --agent ID (agents get $WAVE_AGENT_ID)")
    wave = current_wave(args.wave, layout)
    if needs_agent:
        known = wave_agents(repo, lane, wave)
        if args.agent not in known:
            listed = ", ".join(known) or "none"
            raise UsageError(
                f"no agent {args.agent!r} in wave {wave} of lane {lane!r} (agents: {listed})"
            )
    return Desk(layout.desk, repo, wave)


def _in_repo(path: str) -> str:
    """An agent in its own worktree (isolation: worktree) names files by their path there;
    the desk keys them by the path relative to the repository, whichever worktree."""
    worktree = os.environ.get("WAVE_WORKTREE")
    if worktree and os.path.isabs(path) and Path(path).is_relative_to(worktree):
        return os.path.relpath(path, worktree)
    return path


def _say(text: str) -> None:
    """Paths, intents and notes are agents' words: printed without their control codes."""
    print(strip_controls(text))


def _coord_log(args: argparse.Namespace, desk: Desk) -> CoordLog:
    """The coordination log of the desk's wave, where holders and waiters talk."""
    from ..coordination.log import CoordLog

    layout = state_layout(*repo_and_lane(args))
    return CoordLog(layout.coordination_log(desk.wave), desk.wave)


def _tell_holder(args: argparse.Namespace, desk: Desk, result: Any) -> None:
    """The holder learns in its inbox who waits for its file (best effort: the claim stands)."""
    said = (
        f"{args.agent} waits for {result.path}: hand it over when you are done with it "
        f"(wave desk handover {result.path} --note '...')"
    )
    with contextlib.suppress(OSError, WaveError):
        _coord_log(args, desk).post(
            kind="request",
            summary=said[:300],
            agent=args.agent,
            targets=[result.holder],
            artifacts=[result.path],
        )


def _resolve_wait(args: argparse.Namespace, desk: Desk, path: str, waiter: str) -> None:
    """The waiter's "waits for" request, once the file is its (best effort)."""
    from ..coordination.views import desk_waits

    log = _coord_log(args, desk)
    with contextlib.suppress(OSError, WaveError):
        for rid in desk_waits(log.records().values(), path, waiter):
            log.update(rid, status="resolved", detail=f"{path} was handed to {waiter}")


def _claim(args: argparse.Namespace, desk: Desk) -> int:
    result = desk.claim(args.agent, _in_repo(args.path), args.intent)
    if result.outcome == "queued" and result.joined:
        _tell_holder(args, desk, result)
    if args.json:
        emit_json(result.__dict__)
    elif result.outcome == "queued":
        intent = f" ({result.holder_intent})" if result.holder_intent else ""
        _say(
            f"queued {result.path}: held by {result.holder}{intent}; "
            f"you are number {result.position} in the queue. "
            "Run `wave desk wait` once you hold nothing others wait for."
        )
    else:
        _say(f"{result.outcome} {result.path}")
    return 0


def _handover(args: argparse.Namespace, desk: Desk) -> int:
    done = desk.handover(args.agent, _in_repo(args.path), args.note)
    if done.to_agent:
        _resolve_wait(args, desk, done.path, done.to_agent)
    if args.json:
        emit_json(done.__dict__)
    else:
        _say(f"handed {done.path} to {done.to_agent}" if done.to_agent else f"released {done.path}")
    return 0


def _mine(args: argparse.Namespace, desk: Desk) -> int:
    mine = desk.mine(args.agent)
    if args.json:
        emit_json(
            {
                "held": [{"path": p, "intent": i} for p, i in mine.held],
                "queued": [{"path": p, "position": n, "holder": h} for p, n, h in mine.queued],
            }
        )
        return 0
    for path, intent in mine.held:
        _say(f"holding {path}" + (f" ({intent})" if intent else ""))
    for path, position, holder in mine.queued:
        _say(f"queued  {path}: number {position}, held by {holder}")
    if not mine.held and not mine.queued:
        _say("you hold no file and wait for none")
    return 0


def _wait(args: argparse.Namespace, desk: Desk) -> int:
    got = desk.wait(args.agent, args.timeout)
    if args.json:
        emit_json(got.__dict__)
    else:
        _say(f"granted {got.path} by {got.from_agent}: {got.note}")
    return 0


def _status(args: argparse.Namespace, desk: Desk) -> int:
    data = desk.status()
    if args.json:
        emit_json(data)
        return 0
    _say(f"desk of wave {data['wave']}:")
    for h in data["holders"]:  # type: ignore[attr-defined]
        _say(f"  {h['path']}: held by {h['agent']}" + (f" ({h['intent']})" if h["intent"] else ""))
        for q in data["queues"].get(h["path"], []):  # type: ignore[attr-defined]
            _say(
                f"    {q['position']}. {q['agent']}" + (f" ({q['intent']})" if q["intent"] else "")
            )
    if not data["holders"]:
        _say("  no file is held")
    for entry in data["handovers"]:  # type: ignore[attr-defined]
        to = entry["to"] or "(released)"
        _say(f"  {entry['at'][11:19]} {entry['path']}: {entry['from']} -> {to}: {entry['note']}")
    return 0
