"""Run metrics: the record, reading, aggregation, formatting and `wave metrics`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.agents.usage import Usage
from wave_orchestrator.cli import metrics as metrics_cli
from wave_orchestrator.errors import UsageError
from wave_orchestrator.metrics.records import metrics_record
from wave_orchestrator.metrics.report import (
    GROUP_KEYS,
    LEGEND,
    aggregate,
    format_duration,
    format_table,
    percentile,
    read_records,
)
from wave_orchestrator.state.jsonl import append_jsonl

SECOND = 1000


def rec(**fields: Any) -> dict[str, Any]:
    """A record as the launcher writes it, with defaults for whatever a test does not care about."""
    record: dict[str, Any] = {
        "id": "x",
        "lane": "main",
        "wave": 1,
        "agent": "A1",
        "role": "implementation",
        "executor": "claude",
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


# ---- the documented examples --------------------------------------------------------------


def test_spec_example_durations_1_to_10_seconds() -> None:
    group = one(aggregate([rec(duration_ms=s * SECOND) for s in range(1, 11)]))
    assert (group["avg_ms"], group["p50_ms"], group["p90_ms"]) == (5500, 5000, 9000)


def test_spec_example_two_durations() -> None:
    group = one(aggregate([rec(duration_ms=3 * SECOND), rec(duration_ms=1 * SECOND)]))
    assert (group["p50_ms"], group["p90_ms"]) == (1000, 3000)


def test_spec_example_success_cancelled_failed() -> None:
    group = one(
        aggregate(
            [
                rec(status="success", duration_ms=60 * SECOND),
                rec(status="cancelled", duration_ms=5 * SECOND),
                rec(status="failed", duration_ms=120 * SECOND),
            ]
        )
    )
    assert group["runs"] == 3 and group["successes"] == 1
    assert (group["avg_ms"], group["p50_ms"], group["p90_ms"]) == (90000, 60000, 120000)


def test_spec_example_provider_prefix_is_one_group() -> None:
    group = one(
        aggregate(
            [rec(model="anthropic/claude-sonnet-5"), rec(model="claude-sonnet-5", reasoning="high")]
        )
    )
    assert group["model"] == "claude-sonnet-5" and group["runs"] == 2


# ---- percentiles, timing, timeouts --------------------------------------------------------


def test_percentile_nearest_rank() -> None:
    assert percentile([], 0.5) == 0 and percentile([], 0.9) == 0
    assert percentile([7], 0.5) == 7 and percentile([7], 0.9) == 7
    assert percentile(list(range(1, 11)), 0.5) == 5
    assert percentile(list(range(1, 11)), 0.9) == 9
    assert percentile([1, 3], 0.5) == 1 and percentile([1, 3], 0.9) == 3


def test_cancelled_and_zero_duration_runs_count_as_runs_but_not_in_timing() -> None:
    group = one(
        aggregate(
            [
                rec(status="success", duration_ms=4 * SECOND, output_tokens=400),
                rec(status="cancelled", duration_ms=600 * SECOND, output_tokens=9000),
                rec(status="failed", duration_ms=0, output_tokens=50),
            ]
        )
    )
    assert group["runs"] == 3
    assert (group["avg_ms"], group["p50_ms"], group["p90_ms"]) == (4000, 4000, 4000)
    assert group["tokens_per_second"] == 100  # 400 tokens / 4 s: the untimed runs left out


def test_a_group_with_only_cancelled_runs_has_zero_timings() -> None:
    group = one(aggregate([rec(status="cancelled", duration_ms=30 * SECOND, output_tokens=5)]))
    assert (group["avg_ms"], group["p50_ms"], group["p90_ms"]) == (0, 0, 0)
    assert group["tokens_per_second"] is None  # JSON null, not 0


def test_stalled_counts_once_as_a_timeout() -> None:
    group = one(
        aggregate(
            [
                rec(status="failed", stalled=True),
                rec(status="timeout"),
                rec(status="timeout", stalled=True),  # both marks: still one timeout
                rec(status="failed"),
                rec(status="failed", stalled=False),
            ]
        )
    )
    assert group["timeouts"] == 3 and group["runs"] == 5 and group["successes"] == 0


def test_averages_of_tries_tokens_and_cost() -> None:
    group = one(
        aggregate(
            [
                rec(tries=1, input_tokens=100, output_tokens=20, cost_usd=0.5),
                rec(tries=3, input_tokens=300, output_tokens=60, cost_usd=0.25),
                rec(tries=2),  # no tokens, no cost: out of those averages, in avg tries
                rec(tries=2, output_tokens=40, duration_ms=20 * SECOND),
            ]
        )
    )
    assert group["avg_tries"] == 2.0
    assert group["avg_tokens"] == pytest.approx((120 + 360 + 40) / 3, abs=0.05)
    assert group["avg_cost"] == 0.1875 and group["total_cost"] == 0.75  # over all 4 runs
    assert group["avg_cost_reported"] == 0.375  # over the 2 that reported a cost
    # output tokens / timed seconds of the records with output tokens: 120 / (10 + 10 + 20)
    assert group["tokens_per_second_reported"] == 3.0
    assert group["tokens_per_second"] == 2.4  # ... of every timed record: 120 / 50


def test_unknown_tokens_and_cost_are_null() -> None:
    group = one(aggregate([rec()]))
    assert group["avg_tokens"] is None and group["avg_cost"] is None
    assert group["total_cost"] is None and group["tokens_per_second"] is None


def test_group_keys_and_display_of_missing_model_and_reasoning() -> None:
    groups = aggregate([rec(model=None, reasoning=None), rec(model="", reasoning="")])
    group = one(groups)
    assert list(group) == list(GROUP_KEYS)
    assert (
        group["model"] == "unknown" and group["reasoning"] is None
    )  # JSON null; the table shows —
    assert one(aggregate([{k: v for k, v in rec().items() if k != "model"}]))["model"] == "unknown"


def test_same_model_at_different_reasoning_levels_is_two_groups() -> None:
    groups = aggregate([rec(reasoning="high"), rec(reasoning="low"), rec(model="openai/gpt-x")])
    assert sorted((g["model"], g["reasoning"]) for g in groups) == [
        ("claude-sonnet-5", "high"),
        ("claude-sonnet-5", "low"),
        ("gpt-x", "high"),
    ]


def test_roles_most_frequent_first() -> None:
    group = one(
        aggregate(
            [rec(role="review"), rec(role="implementation"), rec(role="review"), rec(role=None)]
        )
    )
    assert group["roles"] == ["review", "implementation"]


def test_split_by_model_and_role() -> None:
    records = [rec(role="review"), rec(role="implementation"), rec(role="review"), rec(role=None)]
    groups = aggregate(records, by="model-role")
    assert [(g["role"], g["runs"], g["roles"]) for g in groups] == [
        ("review", 2, ["review"]),
        ("implementation", 1, ["implementation"]),
        (None, 1, []),
    ]
    assert all(list(g) == [*GROUP_KEYS, "role"] for g in groups)
    assert "role" not in one(aggregate(records))


# ---- sorting ------------------------------------------------------------------------------


def test_sort_by_runs_descending_ties_by_model_name_case_insensitive() -> None:
    records = [rec(model="zeta")] * 3 + [rec(model="Beta"), rec(model="alpha"), rec(model="Gamma")]
    assert [g["model"] for g in aggregate(records, sort="runs")] == [
        "zeta",
        "alpha",
        "Beta",
        "Gamma",
    ]


def test_sort_by_avg_ascending_and_no_timed_runs_first() -> None:
    records = [
        rec(model="slow", duration_ms=90 * SECOND),
        rec(model="fast", duration_ms=5 * SECOND),
        rec(model="never-timed", status="cancelled", duration_ms=1 * SECOND),
        rec(model="Also-fast", duration_ms=5 * SECOND),
    ]
    assert [g["model"] for g in aggregate(records, sort="avg")] == [
        "never-timed",
        "Also-fast",
        "fast",
        "slow",
    ]


def test_sort_by_success_rate_descending() -> None:
    records = [
        rec(model="half"),
        rec(model="half", status="failed"),
        rec(model="all"),
        rec(model="none", status="timeout"),
        rec(model="Also-all"),
        rec(model="Also-all"),
    ]
    assert [g["model"] for g in aggregate(records, sort="success")] == [
        "all",
        "Also-all",
        "half",
        "none",
    ]


def test_sort_by_total_cost_descending_unknown_cost_last() -> None:
    records = [
        rec(model="cheap", cost_usd=0.1),
        rec(model="cheap", cost_usd=0.1),
        rec(model="dear", cost_usd=1.5),
        rec(model="free", cost_usd=0),
        rec(model="unpriced"),
        rec(model="Another", cost_usd=0.2),
    ]
    assert [g["model"] for g in aggregate(records, sort="cost")] == [
        "dear",
        "Another",
        "cheap",
        "free",
        "unpriced",
    ]


def test_unknown_by_or_sort_is_refused() -> None:
    with pytest.raises(ValueError):
        aggregate([], by="role")
    with pytest.raises(ValueError):
        aggregate([], sort="p90")


# ---- filter -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "agents"),
    [
        ("rev", ["R1"]),  # role
        ("IMPL", ["A1", "A2"]),  # role, case-insensitive
        ("a2", ["A2"]),  # agent
        ("OPENAI/", ["A2"]),  # the model as recorded, with its provider
        ("gpt", ["A2"]),  # model
        ("low", ["R1"]),  # reasoning
        ("timeout", ["A2"]),  # status
        ("unknown", ["X9"]),  # the model as shown when missing
        ("nothing-matches", []),
    ],
)
def test_filter_is_a_case_insensitive_substring(text: str, agents: list[str]) -> None:
    records = [
        rec(agent="A1", role="implementation"),
        rec(agent="A2", role="implementation", model="openai/gpt-x", status="timeout"),
        rec(agent="R1", role="review", reasoning="low"),
        rec(agent="X9", role="ops", model=None),
    ]
    groups = aggregate(records, filter_text=text)
    assert sum(g["runs"] for g in groups) == len(agents)
    matched = sorted(r["agent"] for r in records if aggregate([r], filter_text=text))
    assert matched == agents


def test_filter_applies_before_grouping() -> None:
    records = [rec(agent="A1"), rec(agent="B1", status="failed"), rec(agent="A2")]
    group = one(aggregate(records, filter_text="SUCCESS"))
    assert group["runs"] == 2 and group["successes"] == 2  # the failed run is gone, not counted


# ---- the record ---------------------------------------------------------------------------


def record(state: str, usage: Usage | None = None) -> dict[str, Any]:
    return metrics_record(
        lane="main",
        wave=2,
        agent="A1",
        role="implementation",
        executor="claude",
        model="anthropic/claude-sonnet-5",
        reasoning="high",
        state=state,
        started_at="2026-03-02T09:00:00Z",
        duration_ms=61_250,
        tries=2,
        rate_limited=1,
        usage=usage or Usage(),
    )


BASE_KEYS = [
    "id",
    "lane",
    "wave",
    "agent",
    "role",
    "executor",
    "model",
    "reasoning",
    "status",
    "started_at",
    "duration_ms",
    "tries",
    "rate_limited",
]


@pytest.mark.parametrize(
    ("state", "status", "stalled"),
    [
        ("success", "success", False),
        ("completed", "success", False),
        ("failed", "failed", False),
        ("timeout", "timeout", False),
        ("stalled", "failed", True),
        ("session-missing", "failed", False),
        ("usage-limit", "failed", False),
        ("status-unreadable", "failed", False),
        ("cancelled", "cancelled", False),
    ],
)
def test_record_status_mapping(state: str, status: str, stalled: bool) -> None:
    data = record(state)
    assert data["status"] == status
    assert data.get("stalled", False) is stalled
    assert list(data) == BASE_KEYS + (["stalled"] if stalled else [])


def test_record_fields_and_usage() -> None:
    data = record("success", Usage(input_tokens=1200, output_tokens=80, cost_usd=0.02))
    assert data["input_tokens"] == 1200 and data["output_tokens"] == 80
    assert data["cost_usd"] == 0.02
    assert list(data) == [*BASE_KEYS, "input_tokens", "output_tokens", "cost_usd"]
    assert data["model"] == "anthropic/claude-sonnet-5"  # recorded as given, shown without it
    assert (data["wave"], data["duration_ms"], data["tries"], data["rate_limited"]) == (
        2,
        61250,
        2,
        1,
    )
    assert "input_tokens" not in record("success", Usage(output_tokens=3))
    assert "cost_usd" not in record("success", Usage(input_tokens=3, output_tokens=3))
    assert json.loads(json.dumps(data)) == data


def test_record_ids_are_unique() -> None:
    assert len({record("success")["id"] for _ in range(200)}) == 200


def test_record_refuses_a_state_that_is_not_final() -> None:
    with pytest.raises(ValueError):
        record("running")


def test_a_written_record_reads_back_and_aggregates(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, record("stalled", Usage(100, 10, 0.5)))
    group = one(aggregate(read_records([path])))
    assert group["model"] == "claude-sonnet-5" and group["timeouts"] == 1
    assert group["avg_ms"] == 61250 and group["total_cost"] == 0.5


# ---- reading ------------------------------------------------------------------------------


def test_torn_and_invalid_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, rec(agent="A1"))
    with path.open("a") as fh:
        fh.write('{"id": "torn", "status": "succ\n')
        fh.write("not json\n[1, 2]\n")
        fh.write('{"id": "no-status", "duration_ms": 5}\n')
        fh.write('{"id": "bad-duration", "status": "success", "duration_ms": "5"}\n')
    append_jsonl(path, rec(agent="A2"))
    with path.open("a") as fh:
        fh.write('{"id": "torn at the end", "lane": "ma')
    assert [r["agent"] for r in read_records([path])] == ["A1", "A2"]
    assert read_records([tmp_path / "missing.jsonl"]) == []


def test_only_the_newest_5000_records_are_read(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    lines = [
        json.dumps(rec(id=str(i), started_at=f"2026-01-01T00:00:00.{i:06d}Z")) for i in range(5003)
    ]
    # written out of order: the newest are chosen by started_at, not by position
    path.write_text("\n".join(lines[3:] + lines[:3]) + "\n")
    records = read_records([path])
    assert len(records) == 5000
    assert [r["id"] for r in records[:2]] == ["3", "4"] and records[-1]["id"] == "5002"
    assert one(aggregate(records))["runs"] == 5000
    assert [r["id"] for r in read_records([path], limit=2)] == ["5001", "5002"]


def test_newest_ties_broken_by_file_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    same = "2026-03-02T09:00:00Z"
    for name in ("a1", "a2"):
        append_jsonl(first, rec(id=name, started_at=same))
    append_jsonl(second, rec(id="b-old", started_at="2026-03-01T09:00:00Z"))
    append_jsonl(second, rec(id="b1", started_at=same))
    assert [r["id"] for r in read_records([first, second], limit=3)] == ["a1", "a2", "b1"]
    assert [r["id"] for r in read_records([first, second], limit=2)] == ["a2", "b1"]
    assert [r["id"] for r in read_records([second, first], limit=2)] == ["a1", "a2"]


# ---- formatting ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (499, "0s"),
        (500, "1s"),
        (1499, "1s"),
        (1500, "2s"),
        (45_000, "45s"),
        (59_499, "59s"),
        (59_500, "1m"),
        (60_000, "1m"),
        (125_000, "2m 05s"),
        (124_500, "2m 05s"),
        (180_000, "3m"),
        (3_725_000, "62m 05s"),
    ],
)
def test_format_duration_rounds_seconds_half_up(ms: int, text: str) -> None:
    assert format_duration(ms) == text


def test_format_table() -> None:
    groups = aggregate(
        [
            rec(model="anthropic/claude-sonnet-5", duration_ms=125_000, cost_usd=0.25),
            rec(
                duration_ms=45_000,
                status="failed",
                input_tokens=900,
                output_tokens=100,
                turns=4,
                tool_calls=9,
            ),
            rec(model="gpt-x", reasoning=None, status="cancelled"),
        ]
    )
    lines = format_table(groups, "model").splitlines()
    assert lines[0].split() == [
        "model",
        "reasoning",
        "runs",
        "success",
        "accepted",
        "timeouts",
        "avg",
        "p50",
        "p90",
        "tries",
        "tokens",
        "turns",
        "tools",
        "avg",
        "cost",
        "avg",
        "reported",
        "total",
        "cost",
        "tok/s",
        "tok/s",
        "reported",
    ]
    assert lines[1].split() == [
        "claude-sonnet-5",
        "high",
        "2",
        "50%",
        "—",
        "0",
        "1m",
        "25s",
        "45s",
        "2m",
        "05s",
        "1.00",
        "1000",
        "4.0",
        "9.0",
        "$0.1250",
        "$0.2500",
        "$0.2500",
        "0.6",
        "2.2",
    ]
    assert (
        lines[2].split() == ["gpt-x", "—", "1", "0%", "—", "0", "—", "—", "—", "1.00"] + ["—"] * 8
    )
    assert lines[3:] == ["", *LEGEND.splitlines()]
    assert len({len(line) for line in lines[:2]}) == 1  # aligned columns
    assert lines[0].index("runs") < lines[0].index("success")


def test_format_table_by_role() -> None:
    groups = aggregate([rec(role="review"), rec(role="implementation")], by="model-role")
    lines = format_table(groups, "model-role").splitlines()
    assert lines[0].split()[:4] == ["model", "reasoning", "role", "runs"]
    assert [line.split()[2] for line in lines[1:]] == ["implementation", "review"]


# ---- wave metrics -------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("WAVE_STATE_DIR", raising=False)
    monkeypatch.delenv("WAVE_REPO", raising=False)
    root = tmp_path / "repo"
    for lane in ("main", "docs"):
        (root / "lanes" / lane).mkdir(parents=True)
        (root / "lanes" / lane / "lane.yaml").write_text("closure: {required_roles: []}\n")
    return root


def write(repo: Path, lane: str, *records: dict[str, Any]) -> None:
    for r in records:
        append_jsonl(repo / ".wave" / lane / "metrics.jsonl", r)


def args(repo: Path, **flags: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "repo": str(repo),
        "lane": None,
        "by": "model",
        "sort": "runs",
        "filter": None,
        "json": False,
    }
    values.update(flags)
    return argparse.Namespace(**values)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="wave")
    metrics_cli.register(top.add_subparsers(dest="command"))
    return top


def test_cli_parser_defaults_and_choices(repo: Path) -> None:
    parsed = parser().parse_args(["metrics", "--repo", str(repo)])
    assert (parsed.lane, parsed.by, parsed.sort, parsed.filter, parsed.json) == (
        None,
        "model",
        "runs",
        None,
        False,
    )
    assert parsed.handler is metrics_cli.run
    parsed = parser().parse_args(
        ["metrics", "--lane", "main", "--by", "model-role", "--sort", "avg", "--filter", "x"]
    )
    assert (parsed.lane, parsed.by, parsed.sort, parsed.filter) == (
        "main",
        "model-role",
        "avg",
        "x",
    )
    for bad in (["--by", "role"], ["--sort", "p90"]):
        with pytest.raises(SystemExit):
            parser().parse_args(["metrics", *bad])


def test_cli_with_no_runs(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert metrics_cli.run(args(repo)) == 0
    assert capsys.readouterr().out == "no runs recorded yet\n"
    assert metrics_cli.run(args(repo, json=True, lane="main")) == 0
    assert json.loads(capsys.readouterr().out) == {"groups": []}


def test_cli_json_reads_every_lane_or_one(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        repo, "main", rec(duration_ms=60 * SECOND), rec(status="failed", duration_ms=120 * SECOND)
    )
    write(repo, "docs", rec(model="anthropic/claude-sonnet-5", status="cancelled"))
    write(repo, "docs", rec(model="gpt-x", reasoning=None, cost_usd=0.5, role="review"))
    with (repo / ".wave" / "main" / "metrics.jsonl").open("a") as fh:
        fh.write('{"torn')
    assert metrics_cli.run(args(repo, json=True)) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(g["model"], g["reasoning"], g["runs"]) for g in out["groups"]] == [
        ("claude-sonnet-5", "high", 3),
        ("gpt-x", None, 1),
    ]
    first = out["groups"][0]
    assert (first["successes"], first["avg_ms"], first["p50_ms"], first["p90_ms"]) == (
        1,
        90000,
        60000,
        120000,
    )
    assert list(first) == list(GROUP_KEYS)
    assert metrics_cli.run(args(repo, json=True, lane="main")) == 0
    assert [g["runs"] for g in json.loads(capsys.readouterr().out)["groups"]] == [2]


def test_cli_json_sort_filter_and_role_split(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        repo,
        "main",
        rec(model="a-model", cost_usd=0.1),
        rec(model="a-model", cost_usd=0.1),
        rec(model="b-model", cost_usd=2.0, role="review"),
    )
    assert metrics_cli.run(args(repo, json=True, sort="cost")) == 0
    assert [g["model"] for g in json.loads(capsys.readouterr().out)["groups"]] == [
        "b-model",
        "a-model",
    ]
    assert metrics_cli.run(args(repo, json=True, filter="REVIEW")) == 0
    assert [g["model"] for g in json.loads(capsys.readouterr().out)["groups"]] == ["b-model"]
    assert metrics_cli.run(args(repo, json=True, by="model-role", lane="main")) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert [(g["model"], g["role"]) for g in groups] == [
        ("a-model", "implementation"),
        ("b-model", "review"),
    ]


def test_cli_human_table(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo, "main", rec(duration_ms=125_000), rec(duration_ms=45_000, status="timeout"))
    assert metrics_cli.run(args(repo, lane="main")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["model", "reasoning", "runs"]
    assert lines[1].split()[:9] == [
        "claude-sonnet-5",
        "high",
        "2",
        "50%",
        "—",
        "1",
        "1m",
        "25s",
        "45s",
    ]
    assert len(lines) == 2
    assert metrics_cli.run(args(repo, by="model-role")) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[2] == "implementation"
    assert metrics_cli.run(args(repo, filter="nothing")) == 0
    assert capsys.readouterr().out == "no runs match --filter 'nothing'\n"


def test_cli_through_the_parser(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo, "docs", rec(model="openai/gpt-x"))
    parsed = parser().parse_args(["metrics", "--repo", str(repo), "--lane", "docs", "--json"])
    assert parsed.handler(parsed) == 0
    assert json.loads(capsys.readouterr().out)["groups"][0]["model"] == "gpt-x"


def test_cli_follows_the_lanes_state_dir(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "lanes" / "docs" / "lane.yaml").write_text("state_dir: state/docs\n")
    append_jsonl(repo / "state" / "docs" / "metrics.jsonl", rec(model="moved"))
    write(repo, "docs", rec(model="ignored"))  # the default dir is not this lane's any more
    assert metrics_cli.run(args(repo, json=True, lane="docs")) == 0
    assert [g["model"] for g in json.loads(capsys.readouterr().out)["groups"]] == ["moved"]


def test_cli_reads_a_shared_state_dir_once(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = repo / "shared-state"
    append_jsonl(shared / "metrics.jsonl", rec())
    monkeypatch.setenv("WAVE_STATE_DIR", str(shared))
    assert metrics_cli.run(args(repo, json=True)) == 0
    assert json.loads(capsys.readouterr().out)["groups"][0]["runs"] == 1


def test_cli_unknown_lane_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError):
        metrics_cli.run(args(repo, lane="nope"))
    (repo / "lanes" / "draft").mkdir()  # no lane.yaml: not a lane
    with pytest.raises(UsageError):
        metrics_cli.run(args(repo, lane="draft"))


def test_accepted_counts_the_successes_whose_work_the_gates_kept(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 is not the work accepted: a wave whose gate failed once and passed on a retry
    of A1 has two successful runs of A1, the second one's work accepted; a run no verdict
    names was never judged."""
    write(repo, "main", rec(id="r1"), rec(id="r2"), rec(id="r3", status="failed"), rec(id="r4"))
    append_jsonl(
        repo / ".wave" / "main" / "verdicts.jsonl",
        {
            "kind": "verdict",
            "lane": "main",
            "wave": 1,
            "judged": ["r1", "r2", "r3"],
            "accepted": ["r2"],
        },
    )
    assert metrics_cli.run(args(repo, lane="main", json=True)) == 0
    group = one(json.loads(capsys.readouterr().out)["groups"])
    assert (group["runs"], group["successes"], group["judged"], group["accepted"]) == (4, 3, 2, 1)
    assert metrics_cli.run(args(repo, lane="main")) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[3:5] == ["75%", "1/2"]


def test_a_hostile_verdicts_line_is_read_as_what_it_holds(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verdicts.jsonl lies under .wave/: ids that are lists or mappings are no ids, and
    `wave metrics` reads past them rather than printing a traceback."""
    write(repo, "main", rec(id="r1"), rec(id="r2"))
    path = repo / ".wave" / "main" / "verdicts.jsonl"
    append_jsonl(path, {"kind": "verdict", "judged": ["r1", ["x"]], "accepted": [{}, "r1"]})
    append_jsonl(path, {"kind": "verdict", "judged": [{"a": 1}, "r2"], "accepted": {"r2": 1}})
    assert metrics_cli.run(args(repo, lane="main", json=True)) == 0
    group = one(json.loads(capsys.readouterr().out)["groups"])
    assert (group["judged"], group["accepted"]) == (2, 1)
