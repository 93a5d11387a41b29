"""How an agent's state and the fleet governor's view read as text: one wording for `wave
status` and the dashboard (``limited until 09:40``, ``waiting for team until 09:40``,
``spend: $1.35 of $5.00``). The data is dashboard.json's and governor.json's, already checked
field by field (``untrusted``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .events import short_clock


def state_text(agent: dict[str, Any]) -> str:
    """An agent's state with what it waits on: the CLI's own retries, its account's reset,
    the governor (a pending agent's reason replaces the bare word)."""
    state, note = agent.get("state", "?"), agent.get("state_note")
    if state == "limited" and isinstance(agent.get("limited_until"), str):
        return f"limited until {clock_of(agent['limited_until'])}"
    if state == "pending" and isinstance(note, str) and note:
        return note  # "waiting for team until 09:40", "queued (cap codex=8)"
    return f"{state} ({note})" if state == "rate-limited" and note else str(state)


def clock_of(stamp: str) -> str:
    """``09:40`` on this machine's clock of an ISO time (the stamp itself when odd)."""
    try:
        return short_clock(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return stamp


def governor_lines(gov: dict[str, Any]) -> list[str]:
    """Spend against its limits, and each account that waits for a usage limit's reset."""
    lines = []
    spent, limit = gov.get("spent_usd"), gov.get("spend_limit_usd")
    wave_spent, wave_limit = gov.get("wave_spent_usd"), gov.get("wave_spend_limit_usd")
    if isinstance(spent, int | float) and (spent or limit or wave_limit):
        text = f"spend: ${spent:.2f}" + (f" of ${limit:.2f}" if limit else "")
        if wave_limit and isinstance(wave_spent, int | float):
            text += f" (this wave ${wave_spent:.2f} of ${wave_limit:.2f})"
        if gov.get("costs_partial"):
            text += "; costs partial: some agents' CLIs reported none"
        lines.append(text)
    for item in gov.get("limited") or []:
        if isinstance(item, dict):
            detail = f" ({item['detail']})" if item.get("detail") else ""
            until = clock_of(str(item.get("until")))
            lines.append(f"limited: {item.get('account')} until {until}{detail}")
    return lines
