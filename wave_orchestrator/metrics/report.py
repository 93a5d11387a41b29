"""The `wave metrics` report: ``read_records``, ``aggregate`` and ``format_table``
turn the launcher's ``metrics.jsonl`` lines into one row per model and reasoning level."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..sanitize import strip_controls
from ..state.jsonl import read_jsonl

READ_LIMIT = 5000
BY_CHOICES = ("model", "model-role")
SORT_CHOICES = ("runs", "avg", "success", "cost")
NO_VALUE = "—"
UNKNOWN_MODEL = "unknown"

GROUP_KEYS = (
    "model",
    "reasoning",
    "roles",
    "runs",
    "successes",
    "judged",
    "accepted",
    "timeouts",
    "avg_ms",
    "p50_ms",
    "p90_ms",
    "avg_tries",
    "avg_tokens",
    "avg_turns",
    "avg_tools",
    "avg_cost",
    "avg_cost_reported",
    "total_cost",
    "tokens_per_second",
    "tokens_per_second_reported",
)

# Where wave's figure and the JavaScript launcher's differ, the table shows both and says so.
LEGEND = (
    "avg cost and tok/s: over all runs and all timed runs, as the JavaScript launcher computes "
    "them;\navg reported and tok/s reported: over the runs whose CLI reported a cost, or output "
    "tokens."
)


def read_records(paths: Iterable[Path], limit: int = READ_LIMIT) -> list[dict[str, Any]]:
    """The newest ``limit`` valid records of the files, oldest first.

    Newest means by ``started_at``, then by file order (the order of ``paths``, then of lines).
    A torn or invalid line, or an object that is not a record, is skipped.
    """
    records = [r for path in paths for r in read_jsonl(path) if _valid(r)]
    records.sort(key=lambda r: r["started_at"] if isinstance(r.get("started_at"), str) else "")
    return records[-limit:] if limit > 0 else []


Verdicts = dict[str, bool]  # record id -> whether the gates accepted that run's work


def read_verdicts(paths: Iterable[Path]) -> Verdicts:
    """Every judged run's record id, and whether its work was accepted (verdicts.jsonl)."""
    found: Verdicts = {}
    for path in paths:
        for r in read_jsonl(path):
            judged, accepted = r.get("judged"), r.get("accepted")
            if r.get("kind") != "verdict" or not isinstance(judged, list):
                continue
            accepted = accepted if isinstance(accepted, list) else []
            ids = {i for i in judged if isinstance(i, str)}  # a list or a mapping is no id
            kept = ids.intersection(i for i in accepted if isinstance(i, str))
            found.update({i: i in kept for i in ids})
    return found


def _verdict(record: dict[str, Any], verdicts: Verdicts) -> bool | None:
    """Whether a run's work was accepted (None: it was never judged, or is older than
    verdicts)."""
    return verdicts.get(record["id"]) if isinstance(record.get("id"), str) else None


def _valid(record: dict[str, Any]) -> bool:
    return isinstance(record.get("status"), str) and _number(record.get("duration_ms")) is not None


def display_model(model: Any) -> str:
    """The model without its provider prefix, cut at the first ``/`` as the JavaScript
    launcher does: ``openrouter/anthropic/claude-x`` -> ``anthropic/claude-x`` (a routed
    model keeps its vendor), ``anthropic/claude-x`` -> ``claude-x``."""
    name = model.split("/", 1)[-1].strip() if isinstance(model, str) else ""
    return name or UNKNOWN_MODEL


def _display(value: Any) -> str:
    return value if isinstance(value, str) and value.strip() else NO_VALUE


def aggregate(
    records: Iterable[dict[str, Any]],
    by: str = "model",
    sort: str = "runs",
    filter_text: str | None = None,
    verdicts: Verdicts | None = None,
) -> list[dict[str, Any]]:
    """Group the records per model and reasoning (and role with ``model-role``), sorted;
    ``verdicts`` (``read_verdicts``) say which runs' work the gates accepted."""
    if by not in BY_CHOICES:
        raise ValueError(f"--by must be one of {', '.join(BY_CHOICES)}, not {by!r}")
    if sort not in SORT_CHOICES:
        raise ValueError(f"--sort must be one of {', '.join(SORT_CHOICES)}, not {sort!r}")
    needle = (filter_text or "").casefold()
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for record in records:
        if needle and not _matches(record, needle):
            continue
        key: tuple[str, ...] = (
            display_model(record.get("model")),
            _display(record.get("reasoning")),
        )
        if by == "model-role":
            key = (*key, _display(record.get("role")))
        groups.setdefault(key, []).append(record)
    result = [_summary(key, members, verdicts or {}) for key, members in groups.items()]
    result.sort(
        key=lambda g: (
            g["model"].casefold(),
            g["model"],
            g["reasoning"] or NO_VALUE,
            g.get("role") or NO_VALUE,
        )
    )
    result.sort(key=_SORT_KEYS[sort])  # stable: ties keep the model-name order
    return result


def _matches(record: dict[str, Any], needle: str) -> bool:
    fields = [record.get(k) for k in ("agent", "model", "reasoning", "role", "status")]
    fields += [display_model(record.get("model")), _display(record.get("reasoning"))]
    return any(isinstance(f, str) and needle in f.casefold() for f in fields)


def _summary(
    key: tuple[str, ...],
    records: Sequence[dict[str, Any]],
    verdicts: Verdicts,
) -> dict[str, Any]:
    runs = len(records)
    judged = [
        v
        for r in records
        if r.get("status") == "success"
        if (v := _verdict(r, verdicts)) is not None
    ]
    timed = [
        (r, ms)
        for r in records
        if r.get("status") != "cancelled" and (ms := _milliseconds(r.get("duration_ms"))) > 0
    ]
    durations = sorted(ms for _, ms in timed)
    tokens = [t for r in records if (t := record_tokens(r)) is not None]
    # a run with no turn or no tool call says nothing of how many a run takes: left out
    turns = [t for r in records if (t := _count(r.get("turns")))]
    tools = [t for r in records if (t := _count(r.get("tool_calls")))]
    costs = [c for r in records if (c := record_cost(r)) is not None]
    rate_pairs = [
        (out, ms) for r, ms in timed if (out := _count(r.get("output_tokens"))) is not None
    ]
    rate_ms = sum(ms for _, ms in rate_pairs)
    output = sum(out for out, _ in rate_pairs)
    roles = Counter(r["role"] for r in records if isinstance(r.get("role"), str) and r["role"])
    group: dict[str, Any] = {
        "model": key[0],
        "reasoning": None if key[1] == NO_VALUE else key[1],  # JSON: null, not a dash
        "roles": [name for name, _ in sorted(roles.items(), key=lambda kv: (-kv[1], kv[0]))],
        "runs": runs,
        "successes": sum(1 for r in records if r.get("status") == "success"),
        "judged": len(judged),  # successful runs whose attempt the gates judged
        "accepted": sum(judged),  # ... and whose work they accepted
        "timeouts": sum(
            1 for r in records if r.get("status") == "timeout" or r.get("stalled") is True
        ),
        "avg_ms": _round_half_up(sum(durations) / len(durations)) if durations else 0,
        "p50_ms": percentile(durations, 0.5),
        "p90_ms": percentile(durations, 0.9),
        "avg_tries": round(sum(_tries(r) for r in records) / runs, 3),
        "avg_tokens": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "avg_turns": round(sum(turns) / len(turns), 1) if turns else None,
        "avg_tools": round(sum(tools) / len(tools), 1) if tools else None,
        # over all runs, a run that reported no cost counting as none (the JavaScript
        # launcher's), and over the runs that reported one (wave's: what a reporting run costs)
        "avg_cost": round(sum(costs) / runs, 6) if costs else None,
        "avg_cost_reported": round(sum(costs) / len(costs), 6) if costs else None,
        "total_cost": round(sum(costs), 6) if costs else None,
        # output tokens over the time of every timed run (the JavaScript launcher's), and over
        # the time of the timed runs that reported output tokens (wave's: the model's speed)
        "tokens_per_second": (round(output / (sum(durations) / 1000), 2) if rate_pairs else None),
        "tokens_per_second_reported": round(output / (rate_ms / 1000), 2) if rate_ms else None,
    }
    if len(key) > 2:
        group["role"] = None if key[2] == NO_VALUE else key[2]
    return group


def percentile(durations: Sequence[int], fraction: float) -> int:
    """Nearest rank on sorted ``durations``: index ``min(n-1, max(0, ceil(f*n) - 1))``."""
    if not durations:
        return 0
    n = len(durations)
    return durations[min(n - 1, max(0, math.ceil(fraction * n) - 1))]


def _success_rate(group: dict[str, Any]) -> float:
    return float(group["successes"]) / group["runs"] if group["runs"] else 0.0


_SORT_KEYS: dict[str, Any] = {
    "runs": lambda g: -g["runs"],
    "avg": lambda g: g["avg_ms"],
    "success": lambda g: -_success_rate(g),
    # an unknown total cost sorts after every known one, zero included
    "cost": lambda g: (g["total_cost"] is None, -(g["total_cost"] or 0.0)),
}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else _round_half_up(number)


def _milliseconds(value: Any) -> int:
    return _count(value) or 0


def record_cost(record: dict[str, Any]) -> float | None:
    """The record's cost in USD, or None when it reports none (or nonsense)."""
    return _number(record.get("cost_usd"))


def record_tokens(record: dict[str, Any]) -> int | None:
    """Input plus output tokens, or None when the record reports neither."""
    parts = [_count(record.get("input_tokens")), _count(record.get("output_tokens"))]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _tries(record: dict[str, Any]) -> int:
    """A record's tries; every attempt made at least one, so a missing count reads as 1."""
    return _count(record.get("tries")) or 1


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def format_duration(ms: float) -> str:
    """``45s``, ``3m``, ``2m 05s``: whole seconds, rounded half up."""
    seconds = _round_half_up(max(0.0, float(ms)) / 1000)
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    return f"{minutes}m" if rest == 0 else f"{minutes}m {rest:02d}s"


def format_table(groups: Sequence[dict[str, Any]], by: str = "model") -> str:
    """A plain, aligned text table of ``aggregate``'s groups (no trailing newline)."""
    header = ["model", "reasoning"]
    if by == "model-role":
        header.append("role")
    header += ["runs", "success", "accepted", "timeouts", "avg", "p50", "p90", "tries", "tokens"]
    header += ["turns", "tools"]
    header += ["avg cost", "avg reported", "total cost", "tok/s", "tok/s reported"]
    numeric_from = 3 if by == "model-role" else 2
    rows = [header]
    for g in groups:
        timed = g["avg_ms"] > 0
        # the model is the one the CLI reported: text from the agent's output, shown inert
        row = [strip_controls(str(g["model"])), strip_controls(str(g["reasoning"] or NO_VALUE))]
        if by == "model-role":
            row.append(strip_controls(str(g.get("role") or NO_VALUE)))
        row += [
            str(g["runs"]),
            f"{_round_half_up(100 * _success_rate(g))}%",
            f"{g['accepted']}/{g['judged']}" if g["judged"] else NO_VALUE,
            str(g["timeouts"]),
            format_duration(g["avg_ms"]) if timed else NO_VALUE,
            format_duration(g["p50_ms"]) if timed else NO_VALUE,
            format_duration(g["p90_ms"]) if timed else NO_VALUE,
            f"{g['avg_tries']:.2f}",
            NO_VALUE if g["avg_tokens"] is None else str(_round_half_up(g["avg_tokens"])),
            NO_VALUE if g["avg_turns"] is None else f"{g['avg_turns']:.1f}",
            NO_VALUE if g["avg_tools"] is None else f"{g['avg_tools']:.1f}",
            _money(g["avg_cost"]),
            _money(g["avg_cost_reported"]),
            _money(g["total_cost"]),
            _speed(g["tokens_per_second"]),
            _speed(g["tokens_per_second_reported"]),
        ]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i >= numeric_from else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    figures = ("avg_cost", "tokens_per_second_reported")
    if any(g[key] is not None for g in groups for key in figures):
        lines += ["", LEGEND]
    return "\n".join(lines)


def _money(value: float | None) -> str:
    return NO_VALUE if value is None else f"${value:.4f}"


def _speed(value: float | None) -> str:
    return f"{value:.1f}" if value else NO_VALUE
