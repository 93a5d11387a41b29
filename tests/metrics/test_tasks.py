"""Per-wave task stats: completed, abandoned, active and the agent time a task took."""

from __future__ import annotations

from typing import Any

from wave_orchestrator.metrics.tasks import format_waves, wave_stats


def rec(
    agent: str, status: str, ms: int, wave: int = 1, at: str = "2026-12-04T10:00:00.000Z"
) -> dict[str, Any]:
    return {
        "lane": "main",
        "wave": wave,
        "agent": agent,
        "status": status,
        "duration_ms": ms,
        "started_at": at,
    }


def test_a_task_counts_by_its_last_run_and_its_time_sums_every_run() -> None:
    records = [
        rec("A", "failed", 1000),
        rec("A", "success", 2000, at="2026-12-04T10:01:00.000Z"),  # retried, then done: 3 s
        rec("B", "timeout", 5000),  # given up on: abandoned
        rec("C", "failed", 500),  # failed once, running again now: active
        rec("D", "success", 1000, wave=2),
    ]
    rows = wave_stats(records, {("main", 1): {"C", "E"}})
    assert rows == [
        {
            "lane": "main",
            "wave": 1,
            "tasks": 4,
            "completed": 1,
            "abandoned": 1,
            "active": 2,
            "avg_complete_ms": 62000,  # from A's first launch to the end of its retry
            "avg_agent_ms": 3000,
            "cost_usd": None,
            "accepted": False,
        },
        {
            "lane": "main",
            "wave": 2,
            "tasks": 1,
            "completed": 1,
            "abandoned": 0,
            "active": 0,
            "avg_complete_ms": 1000,
            "avg_agent_ms": 1000,
            "cost_usd": None,
            "accepted": False,
        },
    ]
    lines = format_waves(rows).splitlines()
    assert lines[0].split() == [
        "lane",
        "wave",
        "tasks",
        "completed",
        "abandoned",
        "active",
        "time",
        "to",
        "complete",
        "agent",
        "time",
        "accepted",
        "cost",
    ]
    assert lines[1].split() == ["main", "1", "4", "1", "1", "2", "1m", "02s", "3s", "no", "—"]


def test_a_wave_costs_every_run_and_an_accepted_one_counts_per_accepted_wave() -> None:
    costly = [
        {**rec("A", "failed", 1000), "id": "a1", "cost_usd": 0.5},  # rejected, still paid for
        {**rec("A", "success", 1000), "id": "a2", "cost_usd": 1.25},
        {**rec("B", "success", 1000, wave=2), "id": "b1", "cost_usd": 3.0},  # its wave failed
        {**rec("C", "success", 1000, wave=3), "id": "c1"},  # its CLI reported no cost
    ]
    rows = wave_stats(costly, {}, {"a1": False, "a2": True, "b1": False, "c1": True})
    assert [(r["wave"], r["cost_usd"], r["accepted"]) for r in rows] == [
        (1, 1.75, True),
        (2, 3.0, False),
        (3, None, True),
    ]
    table = format_waves(rows).splitlines()
    assert table[1].split()[-2:] == ["yes", "$1.75"] and table[2].split()[-2:] == ["no", "$3.00"]
    assert table[4] == "cost per accepted wave: $1.75 (1 wave(s) whose gates passed)"
    assert table[5] == ""  # then what each time column means


def test_odd_records_are_left_out() -> None:
    assert wave_stats([{"lane": "main", "wave": "1", "agent": "A", "status": "success"}], {}) == []
