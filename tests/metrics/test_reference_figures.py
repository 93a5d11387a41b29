"""`wave metrics` computes the JavaScript launcher's figures, and keeps wave's own beside them
where they say more, each named for what it is."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.cli import metrics as metrics_cli
from wave_orchestrator.metrics.report import GROUP_KEYS, aggregate, display_model, format_table
from wave_orchestrator.metrics.tasks import format_waves, wave_stats
from wave_orchestrator.state.jsonl import append_jsonl

SECOND = 1000


def rec(**fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "x",
        "lane": "main",
        "wave": 1,
        "agent": "A1",
        "role": "implementation",
        "executor": "opencode",
        "model": "claude-sonnet-5",
        "reasoning": "high",
        "status": "success",
        "started_at": "2026-03-02T09:00:00Z",
        "duration_ms": 10 * SECOND,
        "tries": 1,
        "rate_limited": 0,
    }
    record.update(fields)
    return record


def one(groups: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(groups) == 1, groups
    return groups[0]


# ---- the model -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        ("openrouter/anthropic/claude-x", "anthropic/claude-x"),
        ("anthropic/claude-x", "claude-x"),
        ("claude-x", "claude-x"),
        ("a/b/c/d", "b/c/d"),
        ("openrouter/", "unknown"),
        (None, "unknown"),
    ],
)
def test_a_provider_prefix_is_cut_at_the_first_slash(model: Any, shown: str) -> None:
    assert display_model(model) == shown


def test_a_routed_model_keeps_its_vendor_and_groups_apart() -> None:
    groups = aggregate(
        [
            rec(model="openrouter/anthropic/claude-x"),
            rec(model="openrouter/anthropic/claude-x"),
            rec(model="anthropic/claude-x"),
        ]
    )
    assert [(g["model"], g["runs"]) for g in groups] == [
        ("anthropic/claude-x", 2),
        ("claude-x", 1),
    ]


# ---- cost and speed ------------------------------------------------------------------------


def test_average_cost_is_over_all_runs_and_the_reported_one_beside_it() -> None:
    group = one(
        aggregate(
            [
                rec(cost_usd=0.5),
                rec(cost_usd=0.25),
                rec(),  # no cost reported: a run all the same
                rec(status="failed"),
            ]
        )
    )
    assert group["total_cost"] == 0.75
    assert group["avg_cost"] == 0.1875  # 0.75 / 4 runs, as the JavaScript launcher
    assert group["avg_cost_reported"] == 0.375  # 0.75 / the 2 runs that reported a cost


def test_no_cost_reported_is_null_not_zero() -> None:
    group = one(aggregate([rec(), rec()]))
    assert group["avg_cost"] is None and group["avg_cost_reported"] is None


def test_tokens_per_second_is_over_all_timed_runs_and_the_reported_one_beside_it() -> None:
    group = one(
        aggregate(
            [
                rec(output_tokens=400, duration_ms=4 * SECOND),
                rec(duration_ms=6 * SECOND),  # timed, no tokens reported
                rec(status="cancelled", output_tokens=900, duration_ms=60 * SECOND),  # untimed
                rec(output_tokens=50, duration_ms=0),  # untimed
            ]
        )
    )
    assert group["tokens_per_second"] == 40.0  # 400 tokens / (4 + 6) s
    assert group["tokens_per_second_reported"] == 100.0  # 400 tokens / 4 s


def test_no_output_tokens_reported_is_null() -> None:
    group = one(aggregate([rec(), rec(input_tokens=10)]))
    assert group["tokens_per_second"] is None and group["tokens_per_second_reported"] is None


def test_zero_turns_and_tool_calls_are_left_out_of_their_averages() -> None:
    group = one(
        aggregate(
            [
                rec(turns=0, tool_calls=0),  # the CLI failed before its first turn
                rec(turns=4, tool_calls=0),
                rec(turns=6, tool_calls=9),
                rec(),
            ]
        )
    )
    assert group["avg_turns"] == 5.0 and group["avg_tools"] == 9.0
    only_zero = one(aggregate([rec(turns=0, tool_calls=0)]))
    assert only_zero["avg_turns"] is None and only_zero["avg_tools"] is None


def test_the_json_keys_name_both_figures() -> None:
    group = one(aggregate([rec()]))
    assert list(group) == list(GROUP_KEYS)
    for key in ("avg_cost", "avg_cost_reported", "tokens_per_second", "tokens_per_second_reported"):
        assert key in group


def test_the_table_shows_both_and_says_which_is_which() -> None:
    groups = aggregate(
        [
            rec(cost_usd=1.0, output_tokens=400, duration_ms=4 * SECOND),
            rec(duration_ms=6 * SECOND),
        ]
    )
    lines = format_table(groups).splitlines()
    header = lines[0]
    for column in ("avg cost", "avg reported", "total cost", "tok/s", "tok/s reported"):
        assert column in header, header
    row = dict(zip(_columns(header), _cells(lines[0], lines[1]), strict=True))
    assert row["avg cost"] == "$0.5000" and row["avg reported"] == "$1.0000"
    assert row["tok/s"] == "40.0" and row["tok/s reported"] == "100.0"
    legend = "\n".join(lines[2:])
    assert "avg cost and tok/s: over all runs and all timed runs" in legend
    assert "avg reported and tok/s reported: over the runs whose CLI reported" in legend


def test_a_table_without_cost_or_tokens_has_no_legend() -> None:
    assert len(format_table(aggregate([rec(), rec(model="other")])).splitlines()) == 3


def _columns(header: str) -> list[str]:
    """The header's column names (split on two spaces or more: names hold single spaces)."""
    return [c.strip() for c in header.split("  ") if c.strip()]


def _cells(header: str, line: str) -> list[str]:
    """A row's cells, cut where the header's right-aligned columns end."""
    names = _columns(header)
    ends, at = [], 0
    for name in names:
        at = header.index(name, at) + len(name)
        ends.append(at)
    starts = [0] + [e + 2 for e in ends[:-1]]
    return [line[s:e].strip() for s, e in zip(starts, ends, strict=True)]


# ---- time to complete ----------------------------------------------------------------------


def task(agent: str, status: str, at: str, ms: int, wave: int = 1) -> dict[str, Any]:
    return rec(agent=agent, status=status, started_at=at, duration_ms=ms, wave=wave)


def test_time_to_complete_runs_from_creation_to_completion_beside_agent_time() -> None:
    records = [
        task("A", "failed", "2026-12-04T10:00:00.000Z", 1 * SECOND),
        task("A", "success", "2026-12-04T10:01:00.000Z", 2 * SECOND),  # done at 10:01:02
        task("B", "success", "2026-12-04T10:00:00.500Z", 4 * SECOND),
        task("C", "success", "2026-12-04T10:00:00Z", 0),  # zero: left out of both means
        task("D", "failed", "2026-12-04T10:00:00Z", 9 * SECOND),  # abandoned: not complete
    ]
    (row,) = wave_stats(records, {})
    assert row["completed"] == 3
    assert row["avg_complete_ms"] == (62 * SECOND + 4 * SECOND) / 2  # first launch -> done
    assert row["avg_agent_ms"] == (3 * SECOND + 4 * SECOND) / 2  # the runs' durations summed
    table = format_waves([row]).splitlines()
    assert "time to complete" in table[0] and "agent time" in table[0]
    assert table[1].split()[6:8] == ["33s", "4s"]
    assert "time to complete: from a task's first launch" in "\n".join(table[2:])


def test_a_task_with_an_unreadable_start_is_left_out_of_time_to_complete() -> None:
    records = [task("A", "success", "yesterday", 2 * SECOND)]
    (row,) = wave_stats(records, {})
    assert row["avg_complete_ms"] is None and row["avg_agent_ms"] == 2 * SECOND


# ---- the command ---------------------------------------------------------------------------


def test_wave_metrics_json_and_text_carry_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WAVE_STATE_DIR", raising=False)
    monkeypatch.delenv("WAVE_LANE", raising=False)
    root = tmp_path / "repo"
    (root / "lanes" / "main").mkdir(parents=True)
    (root / "lanes" / "main" / "lane.yaml").write_text("closure: {required_roles: []}\n")
    for r in (
        rec(model="openrouter/anthropic/claude-x", cost_usd=0.3, output_tokens=80),
        rec(model="openrouter/anthropic/claude-x", started_at="2026-03-02T09:01:00Z"),
    ):
        append_jsonl(root / ".wave" / "main" / "metrics.jsonl", r)
    flags = {"repo": str(root), "lane": None, "by": "model", "sort": "runs", "filter": None}
    assert metrics_cli.run(argparse.Namespace(**flags, json=True)) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["model"] == "anthropic/claude-x"
    assert (group["avg_cost"], group["avg_cost_reported"]) == (0.15, 0.3)
    assert (group["tokens_per_second"], group["tokens_per_second_reported"]) == (4.0, 8.0)
    assert metrics_cli.run(argparse.Namespace(**flags, json=False)) == 0
    text = capsys.readouterr().out
    assert "anthropic/claude-x" in text and "over all runs and all timed runs" in text
    assert metrics_cli.run(argparse.Namespace(**{**flags, "by": "wave"}, json=True)) == 0
    (row,) = json.loads(capsys.readouterr().out)["waves"]
    assert row["avg_complete_ms"] == 70 * SECOND and row["avg_agent_ms"] == 20 * SECOND
