"""The orders the console's agent table can be sorted in (`o` cycles them): the wave file's
first, then what a person scanning a big fleet asks for — who needs them, who has run longest,
who costs most, who was retried, an id to find."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SORTS = ("wave order", "state", "elapsed", "cost", "attempts", "id")
Usage = dict[str, tuple[int | None, float | None]]  # agent id -> tokens, cost

# Lower first: an agent a person must look at, then one waiting on a limit, then the working,
# the not yet started, and last the finished.
STATE_RANKS = {
    **dict.fromkeys(
        (
            "waiting-human",
            "failed",
            "timeout",
            "stalled",
            "session-missing",
            "usage-limit",
            "status-unreadable",
        ),
        0,
    ),
    **dict.fromkeys(("limited", "rate-limited"), 1),
    **dict.fromkeys(("launching", "running", "coding", "validating", "deploying", "finalizing"), 2),
    **dict.fromkeys(("pending", "queued"), 3),
    **dict.fromkeys(("completed", "reused", "cancelled"), 4),
}


def next_sort(current: str) -> str:
    """The order after ``current``, back to the wave file's after the last."""
    at = SORTS.index(current) if current in SORTS else 0
    return SORTS[(at + 1) % len(SORTS)]


def sort_agents(agents: list[dict[str, Any]], by: str, usage: Usage) -> list[dict[str, Any]]:
    """``agents`` in the order ``by`` names; ties keep the wave file's order (a stable sort)."""
    keys: dict[str, Callable[[dict[str, Any]], Any]] = {
        "state": lambda a: STATE_RANKS.get(str(a.get("state")), 2),
        "elapsed": lambda a: -_number(a.get("elapsed_ms")),
        "cost": lambda a: -_number(usage.get(str(a.get("id")), (None, None))[1], missing=-1.0),
        "attempts": lambda a: -_number(a.get("attempt")),
        "id": lambda a: str(a.get("id")),
    }
    key = keys.get(by)
    return sorted(agents, key=key) if key else list(agents)


def _number(value: object, missing: float = 0.0) -> float:
    """A state file's number, or ``missing`` for anything else an agent may have put there."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return missing
    return float(value) if value == value else missing  # NaN sorts as missing
