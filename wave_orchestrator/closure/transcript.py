"""An agent's log read as a transcript: which of its lines are the agent speaking.

The log holds more than the agent's words: the JSON events a CLI prints for tool calls and their
output, codex's echo of the prompt, the wrapper's ``[wave] ...`` lines. A marker that a tool
printed (a ``cat`` of docs/markers.md) or that the prompt quotes is not the agent's verdict, so
markers are read from the agent's own messages only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

_NOT_JSON = object()


def _json_value(line: str) -> object:
    """The JSON value a whole line holds, or ``_NOT_JSON`` (plain text, or a torn JSON line)."""
    stripped = line.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):  # nested deeper than the parser goes: text
            pass
    return _NOT_JSON


def agent_messages(event: object) -> Iterator[str]:
    """The agent's own words in one JSON event: codex ``item.completed`` of an ``agent_message``,
    claude ``assistant`` text blocks (not a subagent's: those carry a ``parent_tool_use_id``) and
    its ``result``, opencode ``text`` parts. Tool calls, tool output, reasoning, errors and
    bookkeeping events say nothing. A list (claude ``json --verbose``) is a list of events."""
    if isinstance(event, list):
        for item in event:
            yield from agent_messages(item)
        return
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    if kind == "item.completed":
        item = event.get("item")
        if isinstance(item, dict) and item.get("type") == "agent_message":
            yield from _strings(item.get("text"))
    elif kind == "assistant" and not event.get("parent_tool_use_id"):
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "text":
                yield from _strings(block.get("text"))
    elif kind == "result":
        yield from _strings(event.get("result"))
    elif kind == "text":
        part = event.get("part")
        if isinstance(part, dict):
            yield from _strings(part.get("text"))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value


# codex's human-readable transcript (`codex exec` without --json): a banner, then sections, each
# opened by a header line. `user` echoes the prompt, `exec` a command and its output, `file
# update` a patch; only `codex` sections (and the final message after `tokens used`) are the
# agent speaking. Older versions put a `[timestamp] ` before banner and headers.
_STAMP = r"(?:\[[^\]]*\]\s*)?"
CODEX_BANNER_RE = re.compile(_STAMP + r"OpenAI Codex v\d")
CODEX_HEADER_RE = re.compile(_STAMP + r"(user|thinking|exec|codex|tokens used|file update:?)")
CODEX_QUIET = frozenset({"user", "thinking", "exec", "file update", "file update:"})


class _CodexSections:
    """Follows a plain-text log line by line: False while inside a codex section that is not the
    agent speaking. Every line counts until a codex banner shows the log is codex's transcript."""

    def __init__(self) -> None:
        self.transcript = False
        self.quiet = False

    def counts(self, line: str) -> bool:
        text = ANSI_RE.sub("", line).strip()
        if CODEX_BANNER_RE.match(text):
            self.transcript, self.quiet = True, False
            return True
        header = CODEX_HEADER_RE.fullmatch(text) if self.transcript else None
        if header:
            self.quiet = header.group(1) in CODEX_QUIET
            return False
        return not self.quiet


def spoken_messages(text: str) -> Iterator[list[str]]:
    """The agent's messages in its log, each a list of lines: every agent message of a JSON event
    on its own, and each run of plain lines (what a text-mode CLI or a script printed) as one,
    less the parts of a codex transcript that are not the agent speaking."""
    sections = _CodexSections()
    run: list[str] = []
    for line in text.splitlines():
        event = _json_value(line)
        if event is _NOT_JSON:
            if sections.counts(line):
                run.append(line)
            continue
        if run:
            yield run
            run = []
        for message in agent_messages(event):
            yield message.splitlines()
    if run:
        yield run


def output_lines(text: str) -> Iterator[str]:
    """The lines the agent itself said: plain lines as printed, and of machine-readable output
    (codex --json, claude json or stream-json, opencode --format json) only its own messages."""
    for message in spoken_messages(text):
        yield from message


TEXT_KEYS = frozenset({"text", "result", "message"})


def _text_fields(value: object) -> Iterator[str]:
    """The prose in an event: strings under text/result/message keys, not ids or types."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TEXT_KEYS and isinstance(item, str):
                yield item
            else:
                yield from _text_fields(item)
    elif isinstance(value, list):
        for item in value:
            yield from _text_fields(item)


def _lines(text: str, strings: Callable[[object], Iterator[str]]) -> Iterator[str]:
    """Plain lines as they are; of a line holding one JSON event, the ``strings`` chosen from
    it, split into lines, in order. A torn JSON line is read as text."""
    for line in text.splitlines():
        event = _json_value(line)
        if event is _NOT_JSON:
            yield line
            continue
        for string in strings(event):
            yield from string.splitlines()


def readable_lines(text: str) -> Iterator[str]:
    """What a person would read of the output: plain lines as they are, and of each JSON
    event only its prose, tool output and errors included (so the last line of a claude or
    codex JSON log is words, not ids)."""
    return _lines(text, _text_fields)
