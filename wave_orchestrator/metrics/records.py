"""One run-metrics record per finished agent attempt: the line the launcher appends
to ``metrics.jsonl``. Reading and reporting them is ``report``'s job."""

from __future__ import annotations

import os
from typing import Any

from ..agents.usage import Usage


def random_id() -> str:
    """What ``uuid.uuid4().hex`` gives (122 random bits, the version and variant bits set),
    without loading ``uuid``, which brings ``platform`` into every launch (~2 ms)."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()


# The agent's final state word (as its ``agent_finished`` event says it) -> the record's status.
_STATUS_OF_STATE = {
    "success": "success",
    "completed": "success",  # AgentState.COMPLETED's own value
    "failed": "failed",
    "timeout": "timeout",
    "stalled": "failed",
    "session-missing": "failed",
    "usage-limit": "failed",
    "status-unreadable": "failed",
    "cancelled": "cancelled",
}


def metrics_record(
    *,
    lane: str,
    wave: int,
    agent: str,
    role: str | None,
    executor: str,
    model: str | None,
    reasoning: str | None,
    state: str,
    started_at: str,
    duration_ms: int,
    tries: int,
    rate_limited: int,
    usage: Usage,
    record_id: str | None = None,
    attempt: int | None = None,
) -> dict[str, Any]:
    """The metrics record of one finished attempt; unknown tokens, cost and ``stalled`` left out.
    A ``record_id`` derived from the launch lets a resumed launcher see what is recorded."""
    word = str(state)
    if word not in _STATUS_OF_STATE:
        raise ValueError(f"not a final agent state: {word!r}")
    record: dict[str, Any] = {
        "id": record_id or random_id(),
        "lane": lane,
        "wave": wave,
        "agent": agent,
        "role": role,
        "executor": executor,
        "model": model,
        "reasoning": reasoning,
        "status": _STATUS_OF_STATE[word],
        "started_at": started_at,
        "duration_ms": max(0, int(duration_ms)),
        "tries": tries,
        "rate_limited": rate_limited,
    }
    if attempt is not None:  # the wave attempt: its gates' verdict is recorded apart
        record["attempt"] = attempt
    if usage.input_tokens is not None:
        record["input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        record["output_tokens"] = usage.output_tokens
    if usage.cost_usd is not None:
        record["cost_usd"] = usage.cost_usd
    if usage.turns is not None:
        record["turns"] = usage.turns
    if usage.tool_calls is not None:
        record["tool_calls"] = usage.tool_calls
    if word == "stalled":
        record["stalled"] = True
    return record
