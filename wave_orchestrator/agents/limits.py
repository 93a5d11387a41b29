"""Whether a failed try ended on a usage limit, judged from the CLI's own error channel alone:
a usage limit parks an agent and holds every agent of its account, so what the
model wrote, what a tool printed or what a status file claims must never say there is one.
run.sh only guesses (a try's last lines matched, to end its tries); the launcher's verdict is
``read_usage_limit``.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..sanitize import strip_controls
from ..state.fsutil import open_read
from .usage import json_events

# The CLI's own error channel, per executor and output format (a model at work on limit
# handling quotes these texts all day: none of its words count):
# - claude json/stream-json: a ``result`` with ``is_error: true`` (its ``result``, ``errors``),
#   an ``assistant`` event carrying ``error`` (its text), ``system``/``api_retry``;
# - codex --json: ``error`` and ``turn.failed`` events; in text mode its ``ERROR:`` lines;
# - opencode --format json: ``error`` events; in its default format its ``Error:`` lines;
# - claude's text mode and ``local`` agents (a person's script, often wrapping a CLI) have no
#   channel of their own: their last lines are read (where a CLI prints the error it ends on).
# JSON string values are parsed, never grepped: a quote of ``"is_error": true`` inside one is
# text, not a field. Text-mode lines are read among the try's last TAIL_LINES lines only.

TAIL_LINES = 20  # the last lines of a try in which a text-mode CLI's error is looked for
TAIL_BYTES = 2 * 1024 * 1024  # of a bigger try, its end only: the error is the last thing said
CHANNEL_TEXT_CHARS = 4096  # of each error text: a limit message is one short line
DETAIL_CHARS = 200
TEXT_PREFIX = {"codex": "ERROR:", "opencode": "Error:"}  # the text modes' error lines
# The reset time when the message names one (governor/resets.py reads it back), in the
# order run.sh's wrapper tries them.
_RESETS = (
    r"resets? in [0-9a-z ]+",
    r"resets ([a-z]{3}[a-z]* [0-9]{1,2},? )?[0-9]{1,2}(:[0-9]{2})? ?[ap]m( \([a-z0-9_/+-]+\))?",
    r"try again at ([a-z]{3} [0-9]{1,2}(st|nd|rd|th)?,? ([0-9]{4},? )?)?[0-9]{1,2}:[0-9]{2} ?[ap]m",
    r"try again later",
)
RESET_PHRASES = tuple(re.compile(p, re.I) for p in _RESETS)
_DETAIL_DROP = re.compile(r"[^A-Za-z0-9 :.,()/+_'-]")  # what a detail may not hold (run.sh's)


def error_channel(executor: str, settings: Mapping[str, Any], lines: Iterable[str]) -> list[str]:
    """The texts the CLI gave as its own error in ``lines`` (a try's output), in order."""
    if executor == "codex" and settings.get("json") is True:
        found = _codex_errors(json_events(lines))
    elif executor == "claude" and settings.get("output_format") in ("json", "stream-json"):
        found = _claude_errors(json_events(lines))
    elif executor == "opencode" and settings.get("format") == "json":
        found = _opencode_errors(json_events(lines))
    else:
        tail = _last_lines(lines)
        prefix = TEXT_PREFIX.get(executor)
        found = (line for line in tail if prefix is None or line.startswith(prefix))
    return [text[:CHANNEL_TEXT_CHARS] for text in found if text]


def _last_lines(lines: Iterable[str]) -> list[str]:
    """The last TAIL_LINES lines that say something, control sequences removed (opencode
    colours its ``Error:``); the wrapper's own ``[wave]`` lines are not the agent's. Read
    from the end: a big try's other lines cost nothing."""
    tail: deque[str] = deque()
    for raw in reversed(lines if isinstance(lines, list) else list(lines)):
        line = strip_controls(raw[: 4 * CHANNEL_TEXT_CHARS]).strip()
        if line and not line.startswith("[wave]"):
            tail.appendleft(line)
            if len(tail) == TAIL_LINES:
                break
    return list(tail)


def _claude_errors(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    for event in events:
        kind = event.get("type")
        if kind == "result" and event.get("is_error") is True:
            yield from _strings(event.get("result"))
            yield from _strings(event.get("errors"))
        elif kind == "assistant" and isinstance(event.get("error"), str) and event["error"]:
            yield event["error"]
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else ():
                if isinstance(part, dict) and part.get("type") == "text":
                    yield from _strings(part.get("text"))
        elif kind == "system" and event.get("subtype") == "api_retry":
            yield from _strings(event.get("error"))


def _codex_errors(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    for event in events:
        kind = event.get("type")
        if kind == "error":
            yield from _strings(event.get("message"))
        elif kind == "turn.failed" and isinstance(error := event.get("error"), dict):
            yield from _strings(error.get("message"))


def _opencode_errors(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    for event in events:
        if event.get("type") != "error" or not isinstance(error := event.get("error"), dict):
            continue
        data = error.get("data")
        yield from _strings(data.get("message") if isinstance(data, dict) else None)
        yield from _strings(error.get("message"))


def _strings(value: Any) -> Iterator[str]:
    """``value`` if it is text, the texts of a list of them; nothing else."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        yield from (item for item in value if isinstance(item, str))


def usage_limit_detail(texts: Iterable[str], patterns: Iterable[str]) -> str | None:
    """``usage limit, <when it resets>`` (else ``, <the words that matched>``) when one of the
    CLI's error ``texts`` matches a usage-limit pattern; None: it is no usage limit."""
    compiled = _compile(tuple(patterns))
    for text in texts:
        matched = next((m for p in compiled if (m := p.search(text))), None)
        if matched is None:
            continue
        said = _leftmost(RESET_PHRASES, text) or matched.group()
        said = _DETAIL_DROP.sub("", said)[:DETAIL_CHARS].strip()
        return f"usage limit, {said}" if said else "usage limit"
    return None


def _leftmost(phrases: Iterable[re.Pattern[str]], text: str) -> str | None:
    """The first line of ``text`` where a phrase is found, and in it the leftmost (then the
    longest) match: what ``grep -o -m1 -e ... -e ...`` prints first."""
    for line in text.splitlines():
        found = [m for p in phrases if (m := p.search(line))]
        if found:
            return min(found, key=lambda m: (m.start(), -len(m.group()))).group()
    return None


@functools.lru_cache(maxsize=32)
def _compile(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """The lane's patterns (extended regexes, checked when the lane was read) as Python
    regexes, case-insensitive, ``^`` and ``$`` at each line; one Python cannot read is left
    out (run.sh's grep still reads it)."""
    out = []
    for pattern in patterns:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # `[[:alpha:]]` warns of a nested set
                out.append(re.compile(pattern, re.I | re.M))
        except re.error:
            continue
    return tuple(out)


def read_usage_limit(
    executor: str,
    settings: Mapping[str, Any],
    patterns: Iterable[str],
    path: Path,
    offset: int = 0,
) -> str | None:
    """The usage limit a failed try ended on, read from its output (the log from ``offset``,
    where the try began; of a big try its last TAIL_BYTES only), as ``usage_limit_detail``
    says it; None when the CLI's own error names none."""
    try:
        with open_read(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            begin = offset if 0 <= offset <= size else 0
            start = max(begin, size - TAIL_BYTES)
            fh.seek(start)
            data = fh.read(size - start)  # not what a process left behind writes meanwhile
    except OSError:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    if start > begin:
        lines = lines[1:]  # begin at a line: half a line says nothing
    return usage_limit_detail(error_channel(executor, settings, lines), patterns)
