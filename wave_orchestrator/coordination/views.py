"""Projections of the coordination log: the board a person reads, the shared summary every
agent is given, and one inbox per agent. Regenerated from the log, never edited.

Every text here comes from agents, so it is stripped of control characters before it is shown.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ..sanitize import one_line as clean  # `wave status` reads it without this room
from .log import PERSON, CoordRecord

SUMMARY_LIMIT = 4000
INBOX_LIMIT = 8000
ACTIVITY_LIMIT = 200  # items a board section lists, newest first; `wave coord show` has all
_NEWEST = operator.attrgetter("updated_at", "created_at")


def guidance_addressed(item: CoordRecord, records: Iterable[CoordRecord]) -> bool:
    """A person's guidance is addressed once the agent acks or resolves it."""
    if not item.is_open:
        return True
    return any(
        r.id != item.id and item.id in r.depends_on and (r.kind == "ack" or not r.is_open)
        for r in records
    )


def _line(item: CoordRecord, *, with_time: bool = False) -> str:
    to = f" -> {', '.join(item.targets)}" if item.targets else ""
    when = f"{item.updated_at[11:19]} " if with_time and len(item.updated_at) >= 19 else ""
    pri = f" ({item.priority})" if item.priority in ("high", "urgent") else ""
    head = f"- {when}[{item.id}] {item.kind}{pri} {item.status}"
    return f"{head} · {item.agent}{to}: {clean(item.summary)}"


def _section(title: str, items: Sequence[CoordRecord], *, with_time: bool = False) -> list[str]:
    """A board section: the newest ``ACTIVITY_LIMIT`` items, then how many more there are."""
    lines = [f"## {title}", ""]
    lines += [_line(i, with_time=with_time) for i in items[:ACTIVITY_LIMIT]] or ["(none)"]
    if len(items) > ACTIVITY_LIMIT:
        lines.append(f"... and {len(items) - ACTIVITY_LIMIT} older: `wave coord show`")
    return [*lines, ""]


def newest_first(records: Iterable[CoordRecord]) -> list[CoordRecord]:
    return sorted(records, key=_NEWEST, reverse=True)


# The filters below keep the order they are given: pass them items newest first.
def open_blockers(records: Iterable[CoordRecord]) -> list[CoordRecord]:
    return [r for r in records if r.kind == "blocker" and r.is_open]


def open_requests(records: Iterable[CoordRecord]) -> list[CoordRecord]:
    kinds = ("request", "clarification-request", "human-feedback", "handoff")
    return [r for r in records if r.kind in kinds and r.is_open]


Records = Mapping[str, CoordRecord] | Iterable[CoordRecord]


def _items(records: Records) -> list[CoordRecord]:
    """The items newest first: a mapping is sorted, a list is taken as already in order."""
    return newest_first(records.values()) if isinstance(records, Mapping) else list(records)


def board(lane: str, wave: int, records: Records, now: str) -> str:
    """The wave's message board: what is open, what was decided, what happened."""
    items = _items(records)
    guidance = [r for r in items if r.kind == "guidance"]
    lines = [
        f"# Coordination board: lane {lane}, wave {wave}",
        "",
        f"Updated {now}. Post with `wave coord post`; read your inbox with `wave coord inbox`.",
        "",
        *_section("Failed gates (from the launcher)", failed_gates(items)),
        *_section("Open blockers", open_blockers(items)),
        *_section("Open requests and questions", open_requests(items)),
        *_section("Decisions", [r for r in items if r.kind == "decision"]),
        "## Guidance from people",
        "",
    ]
    for g in guidance:
        state = "addressed" if guidance_addressed(g, items) else "pending"
        lines.append(
            f"- [{g.id}] {state} -> {', '.join(g.targets) or 'everyone'}: {clean(g.summary)}"
        )
    if not guidance:
        lines.append("(none)")
    lines += ["", *_section("Activity (newest first)", items, with_time=True)]
    return "\n".join(lines)


def _bounded(lines: list[str], limit: int) -> str:
    """Whole lines up to ``limit`` characters, with a note of what was left out."""
    out: list[str] = []
    used = 0
    for n, line in enumerate(lines):
        if used + len(line) + 1 > limit - 80:
            out.append(f"... {len(lines) - n} more line(s): see `wave coord show`")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


def shared_summary(records: Records) -> str:
    """What every agent of the wave should know, at most 4000 characters; '' when nothing."""
    items = _items(records)
    if not items:
        return ""
    decided = [r for r in items if r.kind == "decision"]
    progress = [r for r in items if r.kind in ("evidence", "handoff", "claim")]
    lines: list[str] = []
    for title, chosen in (
        ("Failed gates", failed_gates(items)),
        ("Open blockers", open_blockers(items)),
        ("Open requests", open_requests(items)),
        ("Decisions", decided),
        ("Progress", progress),
    ):
        if chosen:  # no more than could fit in the limit is formatted
            lines += [f"{title}:", *(_line(r) for r in chosen[: SUMMARY_LIMIT // 25])]
    return _bounded(lines, SUMMARY_LIMIT)


class InboxOwner(NamedTuple):
    """Whose inbox: an agent id and the paths it owns (items touching them reach it)."""

    agent: str
    owns: tuple[str, ...] = ()


def _touches(artifacts: Iterable[str], owns: Iterable[str]) -> bool:
    owned = [o.rstrip("/") for o in owns if o]
    return any(a == o or a.startswith(o + "/") for a in artifacts for o in owned)


def for_everyone(item: CoordRecord) -> bool:
    """A person's guidance naming no agent, or the launcher's word that a gate failed: for
    every agent of the wave."""
    if item.kind == "gate-blocked":
        return item.source == "launcher"
    return item.kind == "guidance" and item.source == PERSON and not item.targets


def failed_gates(records: Iterable[CoordRecord]) -> list[CoordRecord]:
    return [r for r in records if r.kind == "gate-blocked" and r.is_open]


def inbox_items(owner: InboxOwner, records: Mapping[str, CoordRecord]) -> list[CoordRecord]:
    """Items targeted at the agent (a person's wave-wide guidance too), its own open items,
    and items touching its owned paths."""
    chosen = []
    for r in newest_first(records.values()):
        mine = r.agent == owner.agent
        if (
            owner.agent in r.targets
            or for_everyone(r)
            or (mine and r.is_open)
            or (not mine and _touches(r.artifacts, owner.owns))
        ):
            chosen.append(r)
    return chosen


def inbox(owner: InboxOwner, records: Mapping[str, CoordRecord]) -> str:
    """The agent's inbox as text, at most 8000 characters, open items first."""
    items = inbox_items(owner, records)
    if not items:
        return f"Inbox of {owner.agent}: empty."
    ordered = [r for r in items if r.is_open] + [r for r in items if not r.is_open]
    lines = [f"Inbox of {owner.agent} ({len(items)} item(s), open first):"]
    for r in ordered[: INBOX_LIMIT // 25]:  # no more than could fit in the limit
        lines.append(_line(r))
        if r.detail:
            lines.append("    " + clean(r.detail)[:600])
        if r.kind == "guidance" and r.source == PERSON:
            lines.append(
                "    (from a person: when done, run "
                f'`wave coord post --kind ack --depends-on {r.id} --summary "..."`)'
            )
    return _bounded(lines, INBOX_LIMIT)


BARRIER_PRIORITIES = ("high", "urgent")


def integration_barrier(records: Iterable[CoordRecord]) -> list[tuple[str, str, str]]:
    """What in the coordination log holds the integration gate, as (status
    code, detail, agent): open high/urgent requests, claims two agents hold on the same
    artifact, and any other claim still open. Pass records newest first."""
    items = list(records)
    found: list[tuple[str, str, str]] = []
    for r in open_requests(items):
        if r.priority in BARRIER_PRIORITIES:
            said = f"{r.id} ({r.kind}, {r.priority}, from {r.agent}) is open: {r.summary}"
            found.append(("integration-open-request", said, r.agent))
    claims = [r for r in items if r.kind == "claim" and r.is_open]
    clashing: set[str] = set()
    for i, first in enumerate(claims):
        for other in claims[i + 1 :]:
            shared = sorted(set(first.artifacts) & set(other.artifacts))
            if other.agent != first.agent and shared:
                pair = f"{first.agent} ({first.id}) and {other.agent} ({other.id})"
                said = f"{pair} both claim {', '.join(shared)}"
                found.append(("integration-claim-conflict", said, first.agent))
                clashing |= {first.id, other.id}
    for r in claims:
        if r.id not in clashing:
            said = f"{r.id} from {r.agent} is unresolved: {r.summary}"
            found.append(("integration-unresolved-claim", said, r.agent))
    return found


def desk_waits(records: Iterable[CoordRecord], path: str, waiter: str) -> list[str]:
    """The open requests ``waiter`` posted when it queued for ``path`` on the desk (the holder
    was told who waits): resolved once the file is handed to it."""
    return [
        r.id
        for r in records
        if r.kind == "request" and r.is_open and r.agent == waiter and path in r.artifacts
    ]
