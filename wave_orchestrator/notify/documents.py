"""The event documents a person is told (one JSON object per event: its kind, lane, wave,
agent, reason, the command to act, an ISO time) and their shapes for a webhook: JSON as is,
Slack's ``{"text"}``, ntfy's plain message with a title."""

from __future__ import annotations

import json
from typing import Any

from ..sanitize import clean_tree
from ..state.events import utc_now

TEXT_LIMIT = 500  # of a reason or a question in a document: a notification, not a log


def document(
    kind: str,
    lane: str,
    *,
    wave: int | None = None,
    agent: str | None = None,
    reason: str | None = None,
    command: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One event for the sinks; ``command`` is what a person runs to act on it."""
    doc = {
        "kind": kind,
        "lane": lane,
        "wave": wave,
        "agent": agent,
        "reason": reason[:TEXT_LIMIT] if isinstance(reason, str) else reason,
        "command": command,
        "at": utc_now(),
    }
    return {**doc, **{k: v for k, v in extra.items() if v is not None}}


def summary(doc: dict[str, Any]) -> str:
    """One line a person reads first: ``lane main, wave 2: A1 asks: which schema?``."""
    clean = clean_tree(doc)  # what an agent wrote (a question, a reason) reaches a terminal
    where = f"lane {clean.get('lane')}" + (f", wave {clean['wave']}" if clean.get("wave") else "")
    kind, agent, reason = clean.get("kind"), clean.get("agent"), clean.get("reason") or ""
    if kind == "question":
        said = f"{agent} asks: {clean.get('question') or reason}"
    elif agent:
        said = f"{kind} ({agent}): {reason}" if reason else f"{kind} ({agent})"
    else:
        said = f"{kind}: {reason}" if reason else str(kind)
    return f"{where}: {said}"[:TEXT_LIMIT]


def shaped(docs: list[dict[str, Any]], form: str, dropped: int = 0) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one POST for ``docs`` (events of the same second): ``json``
    sends the document itself, or ``{"events": [...], "dropped": n}`` for several."""
    if form == "slack":
        lines = [summary(d) + (f"\n`{d['command']}`" if d.get("command") else "") for d in docs]
        lines += [f"... and {dropped} more"] if dropped else []
        return _json({"text": "\n".join(lines)}), {"Content-Type": "application/json"}
    if form == "ntfy":  # a plain message; the title is a header (ASCII: the kind or a count)
        lines = [summary(d) for d in docs] + ([f"... and {dropped} more"] if dropped else [])
        if len(docs) == 1 and docs[0].get("command"):
            lines.append(str(docs[0]["command"]))
        title = "wave: " + (str(docs[0].get("kind")) if len(docs) == 1 else f"{len(docs)} events")
        headers = {"Content-Type": "text/plain; charset=utf-8", "Title": title}
        return "\n".join(lines).encode("utf-8", "replace"), headers
    body: Any = docs[0] if len(docs) == 1 and not dropped else {"events": docs, "dropped": dropped}
    return _json(body), {"Content-Type": "application/json"}


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8", "replace")
