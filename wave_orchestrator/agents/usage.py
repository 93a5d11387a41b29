"""What an agent's CLI reports about itself in its output log: tokens, cost and the model it
used, for metrics; and the retries it announces while it runs.
(Whether a failed try ended on a usage limit is ``limits``' judgement, on the same events.)

Only machine-readable output is parsed: codex ``--json``, claude ``json``/``stream-json`` and
opencode ``--format json``. The log also holds stderr lines, the wrapper's ``[wave] ...`` lines
and the output of every try, so anything that is not JSON is skipped, and a figure the output
does not report stays ``None``.

A log is read line by line, never whole: an agent may print hundreds of megabytes, and the
launcher's memory must not grow with it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ..state.status import new_log_lines

_DECODER = json.JSONDecoder()
MAX_VALUE_CHARS = 4 * 1024 * 1024  # a longer line or value is not a usage report: skipped
READ_CHUNK = 1024 * 1024
N = TypeVar("N", int, float)


class Usage(NamedTuple):
    """Tokens in (cached ones included) and out, cost in USD, and the model the CLI says it
    used (``claude-sonnet-5`` where the agent asked for ``sonnet``); ``None`` when not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    turns: int | None = None  # model turns (claude num_turns, codex turns, opencode steps)
    tool_calls: int | None = None  # tool uses the CLI reported (commands, edits, searches)


NO_USAGE = Usage()


def read_usage(executor: str, settings: Mapping[str, Any], text: str) -> Usage:
    """The usage ``executor``'s output ``text`` reports, given the settings it ran with."""
    parser = _parser(executor, settings)
    return parser(json_events(text.splitlines())) if parser else NO_USAGE


def read_usage_file(executor: str, settings: Mapping[str, Any], path: Path) -> Usage:
    """The usage an output log reports, read line by line (memory stays flat however big)."""
    parser = _parser(executor, settings)
    if parser is None:
        return NO_USAGE
    try:
        with path.open("rb") as fh:
            return parser(json_events(log_lines(fh)))
    except OSError:
        return NO_USAGE


def _parser(
    executor: str, settings: Mapping[str, Any]
) -> Callable[[Iterable[dict[str, Any]]], Usage] | None:
    if executor == "codex" and settings.get("json") is True:
        return _codex
    if executor == "claude" and settings.get("output_format") in ("json", "stream-json"):
        return _claude
    if executor == "opencode" and settings.get("format") == "json":
        return _opencode
    return None


def log_lines(fh: Any, max_chars: int = MAX_VALUE_CHARS) -> Iterator[str]:
    """The lines of a binary file, decoded, in bounded memory: a line longer than
    ``max_chars`` is skipped (yielded as an empty line) rather than held whole."""
    pending = b""
    skipping = False
    while chunk := fh.read(READ_CHUNK):
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            piece, start = chunk[start:newline], newline + 1
            yield "" if skipping else (pending + piece).decode("utf-8", "replace")
            pending, skipping = b"", False
        if not skipping:
            pending += chunk[start:]
            if len(pending) > max_chars:
                pending, skipping = b"", True
    if pending and not skipping:
        yield pending.decode("utf-8", "replace")


CODEX_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def _codex(events: Iterable[dict[str, Any]]) -> Usage:
    """Sum ``turn.completed`` usage (codex's ``input_tokens`` already counts the cached ones);
    turns are those events, tool calls the completed command, edit, MCP and search items."""
    total_in: int | None = None
    total_out: int | None = None
    turns = tools = 0
    for event in events:
        kind = event.get("type")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            tools += item.get("type") in CODEX_TOOL_ITEMS
        if kind != "turn.completed":
            continue
        turns += 1
        usage = event.get("usage")
        if not isinstance(usage, dict):
            continue
        total_in = _add(total_in, _count(usage.get("input_tokens")))
        total_out = _add(total_out, _count(usage.get("output_tokens")))
    return Usage(
        total_in, total_out, None, turns=turns or None, tool_calls=tools if turns else None
    )


def _claude(events: Iterable[dict[str, Any]]) -> Usage:
    """The last ``result`` event: ``total_cost_usd``, and tokens from ``modelUsage`` summed over
    its models when it has any (the same requests the cost covers), else from ``usage``; cache
    tokens count as input. The model is the one that cost the most in ``modelUsage``, else the
    one the last ``init`` event names."""
    result: dict[str, Any] | None = None
    init_model: str | None = None
    tools: int | None = None  # only stream-json shows each tool use
    for event in events:
        if event.get("type") == "result":
            result = event
        elif event.get("type") == "system" and event.get("subtype") == "init":
            model = event.get("model")
            init_model = model if isinstance(model, str) and model else init_model
        elif event.get("type") == "assistant":
            tools = (tools or 0) + _claude_tool_uses(event)
    if result is None:
        return Usage(model=init_model, tool_calls=tools)
    return _claude_result(result, init_model)._replace(
        turns=_count(result.get("num_turns")), tool_calls=tools
    )


def _claude_tool_uses(event: dict[str, Any]) -> int:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return 0
    return sum(1 for c in content if isinstance(c, dict) and c.get("type") == "tool_use")


def _claude_result(result: dict[str, Any], init_model: str | None) -> Usage:
    """Cost, tokens and model of claude's ``result`` event."""
    cost = _amount(result.get("total_cost_usd"))
    by_model = _claude_model_usage(result.get("modelUsage"))
    if by_model:
        tokens_in = tokens_out = None
        for _, step_in, step_out, _ in by_model:
            tokens_in, tokens_out = _add(tokens_in, step_in), _add(tokens_out, step_out)
        if cost is None:
            for *_, model_cost in by_model:
                cost = _add(cost, model_cost)
        main = max(by_model, key=lambda m: (m[3] or 0.0, m[2] or 0))[0]
        if tokens_in is not None or tokens_out is not None:
            return Usage(tokens_in, tokens_out, cost, main)
        init_model = main
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return Usage(None, None, cost, init_model)
    tokens_in = None
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        tokens_in = _add(tokens_in, _count(usage.get(key)))
    return Usage(tokens_in, _count(usage.get("output_tokens")), cost, init_model)


def event_usage(executor: str, event: dict[str, Any]) -> Usage:
    """What one event reports on its own, by the rules a whole log is read by: for a live view
    that adds the figures up as the events come (``agents.stream_state``)."""
    parser = {"codex": _codex, "claude": _claude, "opencode": _opencode}.get(executor)
    return parser([event]) if parser else NO_USAGE


def _claude_model_usage(
    value: Any,
) -> list[tuple[str, int | None, int | None, float | None]]:
    """``modelUsage`` as (model, tokens in with cache, tokens out, cost) per model."""
    if not isinstance(value, dict):
        return []
    out = []
    for model, figures in value.items():
        if not isinstance(figures, dict) or not model:
            continue
        tokens_in = None
        for key in ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens"):
            tokens_in = _add(tokens_in, _count(figures.get(key)))
        out.append(
            (
                str(model),
                tokens_in,
                _count(figures.get("outputTokens")),
                _amount(figures.get("costUSD")),
            )
        )
    return out


def _opencode(events: Iterable[dict[str, Any]]) -> Usage:
    """Sum ``part.tokens`` and ``part.cost`` over every ``step_finish`` event.

    opencode's ``tokens.input`` leaves out cache reads and writes (kept in ``tokens.cache``);
    they are added, so that input means the same for every executor.
    """
    total_in: int | None = None
    total_out: int | None = None
    total_cost: float | None = None
    steps = tools = 0
    for event in events:
        tools += event.get("type") == "tool_use"
        if event.get("type") != "step_finish":
            continue
        steps += 1
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
    return Usage(
        total_in, total_out, total_cost, turns=steps or None, tool_calls=tools if steps else None
    )


def json_events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Every JSON object in the lines, in order; an array's objects are yielded one by one.

    A value starts at the beginning of a line (after blanks) and may span lines (claude's
    ``json --verbose`` array, pretty-printed): it is gathered until a line that starts at the
    first column closes it. A line where no JSON value starts is skipped.
    """
    held: list[str] = []  # the lines of a value spread over lines, so far
    size = 0
    for line in lines:
        if held:
            if line[:1] in ("]", "}"):
                held.append(line)
                try:
                    value, _ = _DECODER.raw_decode("\n".join(held))
                except (ValueError, RecursionError):
                    continue
                held, size = [], 0
                yield from _objects(value)
                continue
            if line[:1] in (" ", "\t", "") and size + len(line) <= MAX_VALUE_CHARS:
                held.append(line)
                size += len(line)
                continue
            held, size = [], 0  # not the rest of that value: read this line on its own
        text = line.lstrip(" \t").rstrip("\r")
        if text[:1] not in ("{", "["):
            continue
        try:
            value, _ = _DECODER.raw_decode(text)
        except RecursionError:
            continue
        except json.JSONDecodeError as exc:
            if exc.pos >= len(text.rstrip()):  # cut short at the line's end: it goes on
                held, size = [text], len(text)
            continue
        yield from _objects(value)


def _objects(value: object) -> Iterator[dict[str, Any]]:
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


class CliRetry(NamedTuple):
    """A retry the CLI announced while it runs: claude ``stream-json``'s ``api_retry`` event,
    ``{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,
    "retry_delay_ms":1000,"error_status":429,"error":"rate_limit",...}``."""

    attempt: int
    max_retries: int | None
    delay_ms: int
    rate_limit: bool  # a rate limit or an overload; not an authentication or server error

    def describe(self) -> str:
        of = f"/{self.max_retries}" if self.max_retries else ""
        return f"CLI retrying {self.attempt}{of}"

    def fields(self) -> dict[str, Any]:
        """For the ``agent_rate_limited`` event (``by: cli`` tells it from the wrapper's)."""
        return {
            "by": "cli",
            "retry": self.attempt,
            "max_retries": self.max_retries,
            "delay_ms": self.delay_ms,
        }


def follow_cli_retry(
    executor: str, lines: Iterable[str], current: CliRetry | None
) -> CliRetry | None:
    """The CLI's retry state after ``lines`` (new complete lines of its output): the latest
    ``api_retry`` event, until another event, or the wrapper's next ``[wave]`` line, shows that
    the CLI has moved on. Stderr noise between two retries changes nothing."""
    if executor != "claude":
        return None
    for raw in lines:
        line = raw.strip()
        if line.startswith("[wave]"):
            current = None
            continue
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "system" and event.get("subtype") == "api_retry":
            attempt = _count(event.get("attempt"))
            if attempt is None:
                continue
            delay = _amount(event.get("retry_delay_ms"))
            error = event.get("error")
            status = event.get("error_status")
            current = CliRetry(
                attempt=attempt,
                max_retries=_count(event.get("max_retries")),
                delay_ms=int(delay) if delay is not None else 0,
                rate_limit=error in ("rate_limit", "overloaded") or status in (429, 529),
            )
        else:
            current = None
    return current


class CliRetryFollower:
    """Reads the lines an agent's log gains, for the retries its CLI announces (claude only)."""

    def __init__(self, executor: str, log: Path) -> None:
        self.executor = executor
        self.log = log
        self.offset = 0
        self.current: CliRetry | None = None
        self.announced: list[CliRetry] = []  # the retries the last poll saw announced
        self.wait_until = 0.0  # when the announced wait ends (wall clock): no silence before

    def poll(self) -> bool:
        """Read what is new; True when the retry state changed."""
        if self.executor != "claude":
            return False
        lines, self.offset = new_log_lines(self.log, self.offset)
        before, self.announced = self.current, []
        for line in lines:
            previous, self.current = self.current, follow_cli_retry("claude", [line], self.current)
            if self.current is not None and self.current != previous:
                self.announced.append(self.current)
                self.wait_until = time.time() + self.current.delay_ms / 1000
        return self.current != before or bool(self.announced)
