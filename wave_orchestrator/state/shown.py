"""How an agent's state and the fleet governor's view read as text: one wording for `wave
status` and the dashboard (``limited until 09:40``, ``waiting for team until 09:40``,
``spend: $1.35 of $5.00``, ``tool: Bash · 12 turns · 31 tools · 48k tok · $0.42``). The
data is dashboard.json's and governor.json's, already checked field by field (``untrusted``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .events import short_clock
from .lifecycle import TERMINAL

# States in which no process of the agent runs now: what its stream said is history.
NOT_RUNNING = {s.value for s in TERMINAL} | {"reused", "pending", "limited", "launching", "queued"}


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


def live_stream(agent: dict[str, Any]) -> dict[str, Any] | None:
    """The event-stream state of an agent whose process runs now; None for a text-mode agent,
    or one that ended, waits or has no launcher to follow it (its activity would be stale)."""
    stream, state = agent.get("stream"), str(agent.get("state"))
    if not isinstance(stream, dict) or state in NOT_RUNNING or "no launcher" in state:
        return None
    return stream if state != "orphaned" else None


def stream_text(stream: dict[str, Any], figures: bool = True) -> str:
    """What an agent does and has done, as its CLI's events tell it: ``tool: Bash · 12 turns
    · 31 tools`` and, with ``figures``, ``· 48k tok · $0.42`` (what is not known is left out)."""
    activity, tool = stream.get("activity"), stream.get("tool")
    parts = [f"tool: {tool}" if activity == "tool" and tool else str(activity or "")]
    parts += [_counted(stream.get("turns"), "turn"), _counted(stream.get("tool_calls"), "tool")]
    if figures:
        tokens = [stream.get(k) for k in ("input_tokens", "output_tokens")]
        total = sum(t for t in tokens if isinstance(t, int))
        parts.append(f"{short_count(total)} tok" if total else "")
        cost = stream.get("cost_usd")
        parts.append(f"${cost:.2f}" if isinstance(cost, int | float) else "")
    return " · ".join(p for p in parts if p)


def _counted(value: Any, word: str) -> str:
    if not isinstance(value, int) or not value:
        return ""
    return f"{value} {word}" + ("s" if value != 1 else "")


def short_count(count: int) -> str:
    """A token count a glance reads: ``830``, ``4.2k``, ``48k``, ``1.3M``."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count // 1000}k"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)
