"""Per-wave task stats (as bot-lobby shows them): of each wave's agents (its
tasks), how many completed, how many were abandoned (their last run did not succeed and
nothing runs them now), how many are active, and how long a completed task took: from its
first launch to its completion, as the JavaScript launcher counts it, and the agent time of
all its recorded runs, retries and earlier runs of the wave included."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .report import NO_VALUE, format_duration

LEGEND = (
    "time to complete: from a task's first launch to the end of its last run, as the "
    "JavaScript launcher counts it (creation to completion);\nagent time: the durations of "
    "its runs summed (wave's)."
)


def wave_stats(
    records: Iterable[dict[str, Any]],
    active: Mapping[tuple[str, int], set[str]],
    verdicts: Mapping[str, bool] | None = None,
) -> list[dict[str, Any]]:
    """One row per (lane, wave) with records or active agents, in lane and wave order;
    ``active``: the agents each running wave runs now (from its launcher's dashboard);
    ``verdicts``: record id -> accepted (a wave whose gates passed kept some run)."""
    verdicts = verdicts or {}
    runs: dict[tuple[str, int], dict[str, list[dict[str, Any]]]] = {}
    for record in records:
        lane, wave, agent = record.get("lane"), record.get("wave"), record.get("agent")
        if isinstance(lane, str) and isinstance(wave, int) and isinstance(agent, str):
            runs.setdefault((lane, wave), {}).setdefault(agent, []).append(record)
    rows = []
    for key in sorted({*runs, *active}):
        by_agent, now = runs.get(key, {}), active.get(key, set())
        completed = {a for a, rs in by_agent.items() if rs[-1].get("status") == "success"}
        abandoned = set(by_agent) - completed - now
        # a task that took no time (or whose times are unreadable) is left out of the means
        spans = [s for a in completed if (s := _time_to_complete(by_agent[a]))]
        spent = [s for a in completed if (s := _agent_time(by_agent[a]))]
        every = [r for rs in by_agent.values() for r in rs]
        costs = [c for r in every if isinstance(c := r.get("cost_usd"), int | float)]
        rows.append(
            {
                "lane": key[0],
                "wave": key[1],
                "tasks": len(set(by_agent) | now),
                "completed": len(completed - now),
                "abandoned": len(abandoned),
                "active": len(now),
                "avg_complete_ms": round(sum(spans) / len(spans)) if spans else None,
                "avg_agent_ms": round(sum(spent) / len(spent)) if spent else None,
                # every run of the wave, retries and rejected ones included: what it cost
                "cost_usd": round(sum(costs), 4) if costs else None,
                "accepted": any(verdicts.get(str(r.get("id"))) for r in every),
            }
        )
    return rows


def _time_to_complete(records: Sequence[dict[str, Any]]) -> int | None:
    """From the task's creation (its first run's launch) to its completion (the end of its
    last run), in ms: waits between its runs included."""
    starts = [_moment(r.get("started_at")) for r in records]
    last = records[-1].get("duration_ms")
    if None in starts or not isinstance(last, int) or isinstance(last, bool):
        return None
    known = [s for s in starts if s is not None]
    return max(0, round((known[-1] - min(known)) * 1000) + last)


def _agent_time(records: Sequence[dict[str, Any]]) -> int | None:
    """The agent time a task took: every recorded run's duration, in ms."""
    spent = [
        r["duration_ms"]
        for r in records
        if isinstance(r.get("duration_ms"), int) and not isinstance(r["duration_ms"], bool)
    ]
    return max(0, sum(spent)) if spent else None


def _moment(value: Any) -> float | None:
    """An ISO 8601 time (``2026-12-04T10:00:00.000Z``) in seconds, or None: the text is the
    record's, read as hostile."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


def format_waves(rows: Sequence[dict[str, Any]]) -> str:
    """The per-wave rows as an aligned text table (no trailing newline)."""
    header = [
        "lane",
        "wave",
        "tasks",
        "completed",
        "abandoned",
        "active",
        "time to complete",
        "agent time",
        "accepted",
        "cost",
    ]
    table = [header] + [
        [
            str(r["lane"]),
            str(r["wave"]),
            str(r["tasks"]),
            str(r["completed"]),
            str(r["abandoned"]),
            str(r["active"]),
            format_duration(r["avg_complete_ms"]) if r["avg_complete_ms"] is not None else NO_VALUE,
            format_duration(r["avg_agent_ms"]) if r["avg_agent_ms"] is not None else NO_VALUE,
            "yes" if r["accepted"] else "no",
            f"${r['cost_usd']:.2f}" if r["cost_usd"] is not None else NO_VALUE,
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    accepted = [r["cost_usd"] for r in rows if r["accepted"] and r["cost_usd"] is not None]
    footer = (
        f"\ncost per accepted wave: ${sum(accepted) / len(accepted):.2f} "
        f"({len(accepted)} wave(s) whose gates passed)"
        if accepted
        else ""
    )
    text = "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    )
    return text + footer + "\n\n" + LEGEND
