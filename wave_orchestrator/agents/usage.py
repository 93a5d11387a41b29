"""Tokens and cost read from an agent's output log (SPEC 4, "Usage and cost"), for metrics.

Only machine-readable output is parsed: codex ``--json``, claude ``json``/``stream-json`` and
opencode ``--format json``. The log also holds stderr lines, the wrapper's ``[wave] ...`` lines
and the output of every try, so anything that is not JSON is skipped, and a figure the output
does not report stays ``None``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_DECODER = json.JSONDecoder()
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Usage:
    """Tokens in (cached ones included) and out, and cost in USD; ``None`` when not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


NO_USAGE = Usage()


def read_usage(executor: str, settings: Mapping[str, Any], text: str) -> Usage:
    """The usage ``executor``'s output ``text`` reports, given the settings it ran with."""
    if executor == "codex" and settings.get("json") is True:
        return _codex(text)
    if executor == "claude" and settings.get("output_format") in ("json", "stream-json"):
        return _claude(text)
    if executor == "opencode" and settings.get("format") == "json":
        return _opencode(text)
    return NO_USAGE


def _codex(text: str) -> Usage:
    """Sum ``turn.completed`` usage; codex's ``input_tokens`` already counts the cached ones."""
    total_in: int | None = None
    total_out: int | None = None
    for event in _events(text):
        if event.get("type") != "turn.completed":
            continue
        usage = event.get("usage")
        if not isinstance(usage, dict):
            continue
        total_in = _add(total_in, _count(usage.get("input_tokens")))
        total_out = _add(total_out, _count(usage.get("output_tokens")))
    return Usage(total_in, total_out, None)


def _claude(text: str) -> Usage:
    """The last ``result`` event: ``total_cost_usd`` and ``usage`` with cache tokens as input."""
    result: dict[str, Any] | None = None
    for event in _events(text):
        if event.get("type") == "result":
            result = event
    if result is None:
        return NO_USAGE
    cost = _amount(result.get("total_cost_usd"))
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return Usage(None, None, cost)
    tokens_in: int | None = None
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        tokens_in = _add(tokens_in, _count(usage.get(key)))
    return Usage(tokens_in, _count(usage.get("output_tokens")), cost)


def _opencode(text: str) -> Usage:
    """Sum ``part.tokens`` and ``part.cost`` over every ``step_finish`` event.

    opencode's ``tokens.input`` leaves out cache reads and writes (kept in ``tokens.cache``);
    they are added, so that input means the same for every executor.
    """
    total_in: int | None = None
    total_out: int | None = None
    total_cost: float | None = None
    for event in _events(text):
        if event.get("type") != "step_finish":
            continue
        part = event.get("part")
        if not isinstance(part, dict):
            continue
        total_cost = _add(total_cost, _amount(part.get("cost")))
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            continue
        step_in = _count(tokens.get("input"))
        cache = tokens.get("cache")
        if step_in is not None and isinstance(cache, dict):
            for key in ("read", "write"):
                step_in = _add(step_in, _count(cache.get(key)))
        total_in = _add(total_in, step_in)
        total_out = _add(total_out, _count(tokens.get("output")))
    return Usage(total_in, total_out, total_cost)


def _events(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text``, in order; an array's objects are yielded one by one.

    A value starts at the beginning of a line (after blanks) and may span lines (claude's
    ``json --verbose`` array); a line where no JSON value starts is skipped.
    """
    pos = 0
    end = len(text)
    while pos < end:
        newline = text.find("\n", pos)
        line_end = end if newline < 0 else newline
        start = pos
        while start < line_end and text[start] in " \t\r":
            start += 1
        pos = line_end + 1
        if start >= line_end or text[start] not in "{[":
            continue
        try:
            value, stop = _DECODER.raw_decode(text, start)
        except ValueError:
            continue
        if stop > line_end:  # a value spanning lines: go on after it
            following = text.find("\n", stop)
            pos = end if following < 0 else following + 1
        if isinstance(value, dict):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, dict))


def _count(value: Any) -> int | None:
    """A token count: a non-negative integer (an integral float is accepted), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _amount(value: Any) -> float | None:
    """A cost: a finite non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _add(total: N | None, value: N | None) -> N | None:
    if value is None:
        return total
    return value if total is None else total + value
