"""`wave coord`: post to, read and resolve items of a wave's coordination log.

Agents run it bare: lane, wave and agent come from their WAVE_* environment. A person passes
--lane, --wave and --agent (posts from a person are recorded with source "human"). In an
agent's sandbox a post goes to the agent's own outbox, as itself (coordination/channel.py).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from ..coordination.log import KINDS, PERSON, PRIORITIES, STATUSES, CoordLog
from ..coordination.views import InboxOwner, inbox, inbox_items, newest_first
from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..sanitize import one_line as clean
from ..state.fsutil import read_json
from ..state.layout import StateLayout
from ._common import (
    agent_action,
    current_wave,
    emit_json,
    repo_and_lane,
    state_layout,
)
from ._help import COMMAND_EXIT_CODES, exit_codes_text, wrap

_STAMP = re.compile(r"[0-9]{8}T[0-9]{6}Z(-[0-9]{1,6})?")

EXAMPLES = """examples:
  wave coord post --kind request --target agent:api --summary "expose GET /items"
  wave coord post --kind blocker --priority high --summary "schema undecided" --artifact db/
  wave coord show --open
  wave coord resolve c-1a2b3c4d --note "done in db/schema.sql"
  wave coord inbox
"""
EXAMPLES += "\n" + exit_codes_text(COMMAND_EXIT_CODES["coord"])


def register(sub: Any) -> None:
    p = sub.add_parser(
        "coord",
        help="the wave's coordination log: post, show, resolve, inbox",
        description=wrap(
            "Agents of a wave talk through an append-only coordination log: requests, "
            "acks, blockers, decisions, evidence, handoffs. The launcher keeps a board, a shared "
            "summary and one inbox per agent current from it."
        ),
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="coord_command", metavar="ACTION", required=True)

    post = _action(actions, "post", "add an item (or update one with --id)", _post)
    post.add_argument("--kind", required=True, choices=KINDS, metavar="KIND", help=", ".join(KINDS))
    post.add_argument("--summary", required=True, help="one line: what this is about")
    post.add_argument("--detail", default=None, help="more text (up to 4000 characters)")
    post.add_argument(
        "--target", action="append", default=[], metavar="agent:ID", help="who it is for"
    )
    post.add_argument("--priority", choices=PRIORITIES, metavar="P", help=", ".join(PRIORITIES))
    post.add_argument("--status", choices=STATUSES, metavar="S", help=", ".join(STATUSES))
    post.add_argument(
        "--depends-on", action="append", default=[], metavar="ID", help="an item this one waits on"
    )
    post.add_argument(
        "--artifact", action="append", default=[], metavar="PATH", help="a file it concerns"
    )
    post.add_argument("--id", dest="record_id", metavar="ID", help="update this item")

    show = _action(actions, "show", "list the wave's items, merged, newest first", _show)
    show.add_argument("--open", action="store_true", help="only open items")
    show.add_argument(
        "--run",
        metavar="STAMP",
        help="an earlier run's items: its log, set aside when the wave ran again",
    )

    resolve = _action(actions, "resolve", "mark an item resolved", _resolve)
    resolve.add_argument("record_id", metavar="ID", help="the item's id (c-...)")
    resolve.add_argument("--note", default=None, help="how it was resolved")

    _action(actions, "inbox", "the calling agent's inbox (--agent ID for a person)", _inbox)


def _action(actions: Any, name: str, text: str, handler: Any) -> argparse.ArgumentParser:
    return agent_action(
        actions,
        name,
        text,
        handler,
        "who you are (default: $WAVE_AGENT_ID; a person may leave it out)",
    )


def _open(args: argparse.Namespace) -> tuple[StateLayout, CoordLog]:
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if args.agent and not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    wave = current_wave(args.wave, layout)
    return layout, CoordLog(layout.coordination_log(wave), wave)


def _post(args: argparse.Namespace) -> int:
    _, log = _open(args)
    fields: dict[str, Any] = {}
    for key, value in (
        ("detail", args.detail),
        ("priority", args.priority),
        ("status", args.status),
    ):
        if value is not None:
            fields[key] = value
    for key, values in (
        ("targets", args.target),
        ("depends_on", args.depends_on),
        ("artifacts", args.artifact),
    ):
        if values:
            fields[key] = values
    agent, source = _poster(args.agent)
    if args.record_id and log.find(args.record_id) is not None:
        record = log.update(args.record_id, kind=args.kind, summary=args.summary, **fields)
        rid = record.id
    else:
        rid = log.post(
            kind=args.kind,
            summary=args.summary,
            agent=agent,
            source=source,
            record_id=args.record_id,
            **fields,
        )
    if args.json:  # in a sandbox, as its outbox has it: the launcher merges it within a second
        found = log.find(rid)
        emit_json(found.to_json() if found is not None else {"id": rid})
    else:
        print(rid)
    return 0


def _poster(agent: str | None) -> tuple[str, str]:
    """Who a post is from: in an agent's session ($WAVE_AGENT_ID set) always an agent, named
    by a valid id (never the person's); outside one, --agent's id, else the person."""
    if os.environ.get("WAVE_AGENT_ID"):
        if not agent or agent == PERSON:
            raise UsageError(
                "an agent posts as itself: only a person, outside an agent's session, posts "
                f"as {PERSON!r} (--agent {agent!r} refused)"
            )
        return agent, "agent"
    if agent == PERSON:
        return PERSON, "human"
    return (agent, "agent") if agent else (PERSON, "human")


def _show(args: argparse.Namespace) -> int:
    layout, log = _open(args)
    earlier = _earlier_runs(layout, log.wave)
    if args.run is not None:
        if args.run not in earlier:
            runs = ", ".join(earlier) or "none"
            raise UsageError(f"wave {log.wave} has no earlier run {args.run!r} (runs: {runs})")
        log = CoordLog(_earlier_log(layout, log.wave, args.run), log.wave, direct=True)
    items = [r for r in newest_first(log.records().values()) if r.is_open or not args.open]
    if args.json:
        emit_json([r.to_json() for r in items])
        return 0
    if not items:
        print(f"wave {log.wave}: no {'open ' if args.open else ''}coordination items")
    for r in items:  # every field through the one sanitizer: an agent may have written it
        to = f" -> {clean(', '.join(r.targets))}" if r.targets else ""
        print(
            f"{clean(r.id)}  {clean(r.kind):<21} {clean(r.status):<12} {clean(r.priority):<6} "
            f"{clean(r.agent)}{to}: {clean(r.summary)}"
        )
    if earlier and args.run is None:  # a new run starts a fresh log: its items are not lost
        more = f" ({len(earlier)} earlier runs: --run takes any)" if len(earlier) > 1 else ""
        print(
            f"earlier run's items: wave coord show --lane {layout.lane} --wave {log.wave} "
            f"--run {earlier[0]}{more}"
        )
    return 0


def _earlier_log(layout: StateLayout, wave: int, stamp: str) -> Path:
    return layout.coordination_dir / f"wave-{wave}.{stamp}.jsonl"


def _earlier_runs(layout: StateLayout, wave: int) -> list[str]:
    """The stamps of the wave's earlier runs whose logs a new run set aside, latest first."""
    found = []
    for path in layout.coordination_dir.glob(f"wave-{wave}.*.jsonl"):
        stamp = path.name.removeprefix(f"wave-{wave}.").removesuffix(".jsonl")
        if _STAMP.fullmatch(stamp) and path.is_file():
            found.append(stamp)
    return sorted(found, key=_order, reverse=True)


def _order(stamp: str) -> tuple[str, int]:
    day, _, k = stamp.partition("-")
    return day, int(k) if k else 1


def _resolve(args: argparse.Namespace) -> int:
    _, log = _open(args)
    fields: dict[str, Any] = {"status": "resolved"}
    if args.note:
        fields["detail"] = args.note
    record = log.update(args.record_id, **fields)
    if args.json:
        emit_json(record.to_json())
    else:
        print(f"resolved {record.id}")
    return 0


def _owns(layout: StateLayout, wave: int, agent: str) -> tuple[str, ...]:
    """The agent's owned paths as the launcher recorded them at wave start; () if unknown."""
    try:
        data = read_json(layout.owners(wave))
    except (OSError, ValueError):
        return ()
    owned = data.get(agent) if isinstance(data, dict) else None
    if not isinstance(owned, list):
        return ()
    return tuple(p for p in owned if isinstance(p, str))


def _inbox(args: argparse.Namespace) -> int:
    layout, log = _open(args)
    if not args.agent:
        raise UsageError("whose inbox? pass --agent ID (agents get $WAVE_AGENT_ID)")
    owner = InboxOwner(args.agent, _owns(layout, log.wave, args.agent))
    records = log.records()
    if args.json:
        emit_json([r.to_json() for r in inbox_items(owner, records)])
    else:
        print(inbox(owner, records))
    return 0
