"""What an agent is doing now, read from its CLI's own event stream (claude ``stream-json``,
codex ``exec --json``, opencode ``run --format json``): thinking, a tool and its name, or
writing; its turns, tool calls, tokens and cost so far; its last line of text; and the
conversation id the CLI reported, to continue it later.

The stream is the one authority for what the agent does; whether it is alive is the
process's, and how it ended is the exit's and the CLI's error channel's. The log is hostile
(an agent writes it): it is read a bounded slice at a time, each line parsed strictly, every
value checked, and every text shown stripped of escapes and credentials. A text-mode agent's
log holds no event, and its state stays empty.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..sanitize import one_line, redact_value
from ..state.fsutil import open_read, parse_json
from ..state.logs import Logger
from .conversations import valid_id
from .usage import CODEX_TOOL_ITEMS, Usage, event_usage

log = Logger(__name__)

READ_CHUNK = 256 * 1024  # read per update(): a log that grew more is caught up over calls
MAX_LINE = 1024 * 1024  # a longer line is dropped, never held whole
TOOL_CHARS = 64
LINE_CHARS = 200
MAX_TOKENS = 10**15  # sums stay far below any reader's overflow, whatever a line claims
MAX_COUNT = 1_000_000
MAX_COST = 1e9
MAX_BLOCKS = 1000  # content blocks read from one claude message
STREAMING_EXECUTORS = ("claude", "codex", "opencode")


class StreamState:
    """An agent's live state as its stream tells it; ``""``, 0 or None until it says."""

    def __init__(self) -> None:
        self.activity = ""  # thinking | tool | writing | idle | "" (unknown)
        self.tool = ""  # the tool's name while activity is "tool"
        self.turns = 0
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = None
        self.last_line = ""  # the last line of text the agent wrote, cleaned
        self.conversation = ""  # the CLI's session or thread id, to continue it
        self.events = 0

    @property
    def active(self) -> bool:
        """Whether the log holds any event of the stream (False for a text-mode agent)."""
        return self.events > 0

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON for dashboard.json, ``wave status --json`` and the summary."""
        return dict(vars(self))  # the fields __init__ sets, in its order


def streams_events(executor: str, argv: Sequence[str]) -> bool:
    """Whether ``executor`` run with ``argv`` prints an event stream a follower can read."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    if executor == "claude":
        return _option(args, "--output-format") == "stream-json"
    if executor == "codex":
        return "--json" in args
    if executor == "opencode":
        return _option(args, "--format") == "json"
    return False


def _option(args: list[str], name: str) -> str | None:
    """The last value given to ``name``, as ``name value`` or ``name=value``."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1 :]
    return value


class _Tally:
    """Turns, tokens and cost of one try, or of the tries before it."""

    __slots__ = ("cost", "tokens_in", "tokens_out", "turns")

    def __init__(self) -> None:
        self.turns = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.cost: float | None = None

    def add(self, figures: Usage) -> None:
        self.turns += figures.turns or 0
        self.tokens_in += figures.input_tokens or 0
        self.tokens_out += figures.output_tokens or 0
        if figures.cost_usd is not None:
            self.cost = (self.cost or 0.0) + figures.cost_usd

    def figures(self) -> Usage:
        return Usage(self.tokens_in, self.tokens_out, self.cost, turns=self.turns)


class StreamParser:
    """Applies one CLI's events to a ``StreamState``, keeping what the sums need between
    events. claude's ``result`` gives its try's totals, which replace the running sums of
    that try's messages; a new ``init`` starts a try, the earlier tries' figures kept."""

    def __init__(self, executor: str) -> None:
        self.executor = executor
        self.state = StreamState()
        self._done = _Tally()  # tries that ended (claude: before the last init)
        self._try = _Tally()
        self._message: str | None = None  # claude: the message whose usage is held below
        self._message_tokens = (0, 0)
        self._failed = False

    def feed_line(self, line: str) -> bool:
        """Apply one line of the log; True when it was an event of the stream."""
        text = line.strip()
        if not text.startswith("{"):
            return False
        try:
            event = parse_json(text)
        except ValueError:
            return False
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return False
        self.feed(event)
        return True

    def feed(self, event: dict[str, Any]) -> None:
        """Apply one event. Whatever its fields hold, the state stays valid and nothing raises."""
        kind = event.get("type")
        if self.executor not in STREAMING_EXECUTORS or not isinstance(kind, str):
            return
        handler = getattr(self, f"_{self.executor}")
        self.state.events = min(self.state.events + 1, 2**62)
        try:
            handler(kind, event)
        except Exception as exc:  # a bug here must not stop the launcher's loop
            if not self._failed:
                log.warning("stream event not understood", executor=self.executor, error=repr(exc))
            self._failed = True
        self._publish()

    # -- claude stream-json ------------------------------------------------------------------

    def _claude(self, kind: str, event: dict[str, Any]) -> None:
        self._conversation(event.get("session_id"))
        if kind == "system" and event.get("subtype") == "init":
            self._new_try()
            self._doing("thinking")
        elif kind == "assistant":
            message = event.get("message")
            if isinstance(message, dict):
                self._claude_message(message, top=event.get("parent_tool_use_id") is None)
        elif kind == "user":
            self._doing("thinking")  # a tool's result goes back to the model
        elif kind == "result":
            self._claude_result(event)

    def _claude_message(self, message: dict[str, Any], *, top: bool) -> None:
        """One ``assistant`` event: claude sends each content block of a message as its own
        event, all with the message's id and usage, so a message counts once."""
        ident = message.get("id")
        ident = ident if isinstance(ident, str) else None
        if ident is None or ident != self._message:
            self._close_message()
            self._message = ident
            self._try.turns += top
        # A message's usage has the shape of a result's, and is read by the same rule.
        tokens = event_usage("claude", {"type": "result", "usage": message.get("usage")})
        if tokens.input_tokens is not None or tokens.output_tokens is not None:
            self._message_tokens = (tokens.input_tokens or 0, tokens.output_tokens or 0)
        content = message.get("content")
        if isinstance(content, str):
            self._writing(content)
            return
        if not isinstance(content, list):
            return
        for block in content[:MAX_BLOCKS]:
            if not isinstance(block, dict):
                continue
            self._claude_block(block)
            if block.get("type") == "tool_use":
                self.state.tool_calls += 1

    def _claude_block(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking"):
            self._doing("thinking")
        elif kind in ("tool_use", "server_tool_use"):
            self._using(block.get("name"))
        elif kind == "text":
            self._writing(block.get("text"))

    def _claude_result(self, event: dict[str, Any]) -> None:
        figures = event_usage("claude", event)
        self._close_message()
        if figures.input_tokens is not None or figures.output_tokens is not None:
            self._try.tokens_in = figures.input_tokens or 0
            self._try.tokens_out = figures.output_tokens or 0
        if figures.cost_usd is not None:
            self._try.cost = figures.cost_usd
        if figures.turns is not None:
            self._try.turns = figures.turns
        self._doing("idle")

    def _close_message(self) -> None:
        self._try.tokens_in += self._message_tokens[0]
        self._try.tokens_out += self._message_tokens[1]
        self._message, self._message_tokens = None, (0, 0)

    def _new_try(self) -> None:
        self._close_message()
        self._done.add(self._try.figures())
        self._try = _Tally()

    # -- codex exec --json -------------------------------------------------------------------

    def _codex(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "thread.started":
            self._conversation(event.get("thread_id"))
            self._doing("thinking")
        elif kind == "turn.started":
            self._doing("thinking")
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                self._codex_item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            self._try.add(event_usage("codex", event))
            self._doing("idle")
        elif kind == "turn.failed":
            self._doing("idle")

    def _codex_item(self, item: dict[str, Any], *, done: bool) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            self._doing("thinking")
        elif kind == "agent_message":
            self._writing(item.get("text"))
        elif kind in CODEX_TOOL_ITEMS:
            if done:  # counted as usage counts them; the model now reads the result
                self.state.tool_calls += 1
                self._doing("thinking")
            else:
                self._using(_codex_tool_name(item))

    # -- opencode run --format json ----------------------------------------------------------

    def _opencode(self, kind: str, event: dict[str, Any]) -> None:
        part = event.get("part")
        part = part if isinstance(part, dict) else {}
        self._conversation(event.get("sessionID", part.get("sessionID")))
        if kind in ("step_start", "reasoning"):
            self._doing("thinking")
        elif kind == "tool_use":  # sent when the tool has run: the one sign of it
            self.state.tool_calls += 1
            self._using(part.get("tool"))
        elif kind == "text":
            self._writing(part.get("text"))
        elif kind == "step_finish":
            self._try.add(event_usage("opencode", event))
            self._doing("idle" if part.get("reason") == "stop" else "thinking")

    # -- the state ---------------------------------------------------------------------------

    def _doing(self, activity: str) -> None:
        self.state.activity, self.state.tool = activity, ""

    def _using(self, name: Any) -> None:
        self.state.activity = "tool"
        self.state.tool = (
            one_line(name[: TOOL_CHARS * 4])[:TOOL_CHARS] if isinstance(name, str) else ""
        )

    def _writing(self, text: Any) -> None:
        if not isinstance(text, str) or not text.strip():
            return
        self._doing("writing")
        for line in reversed(text[-8192:].splitlines()):
            shown = redact_value(one_line(line[:1000]))
            if shown:
                self.state.last_line = shown[:LINE_CHARS]
                return

    def _conversation(self, value: Any) -> None:
        found = valid_id(self.executor, value)  # the shape its CLI gives, or nothing
        if found is not None:
            self.state.conversation = found

    def _publish(self) -> None:
        done, now, state = self._done, self._try, self.state
        state.turns = min(done.turns + now.turns, MAX_COUNT)
        state.tool_calls = min(state.tool_calls, MAX_COUNT)
        state.input_tokens = min(
            done.tokens_in + now.tokens_in + self._message_tokens[0], MAX_TOKENS
        )
        state.output_tokens = min(
            done.tokens_out + now.tokens_out + self._message_tokens[1], MAX_TOKENS
        )
        if done.cost is None and now.cost is None:
            state.cost_usd = None
        else:
            cost = (done.cost or 0.0) + (now.cost or 0.0)
            state.cost_usd = min(cost, MAX_COST) if math.isfinite(cost) else MAX_COST


def _codex_tool_name(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "mcp_tool_call":
        server, tool = item.get("server"), item.get("tool")
        if isinstance(server, str) and isinstance(tool, str):
            return f"{server}.{tool}"
        return "mcp"
    return {"command_execution": "command", "file_change": "edit", "web_search": "web search"}.get(
        str(kind), "tool"
    )


class StreamFollower:
    """Follows one agent's output.log: each ``update()`` reads only what is new, from where
    the last one stopped, and applies its events to ``state``."""

    def __init__(self, executor: str, log_path: Path) -> None:
        self.executor = executor
        self.log_path = log_path
        self.parser = StreamParser(executor)
        self.offset = 0
        self.behind = False  # the log held more than one read: call update() again soon
        self._inode: int | None = None
        self._partial = b""  # the line still being written
        self._skipping = False  # inside a line too long to keep, until its end

    @property
    def state(self) -> StreamState:
        return self.parser.state

    def update(self) -> bool:
        """Read what the log gained (at most ``READ_CHUNK``); True when the state changed.
        A log that shrank or was replaced is a new stream: the state starts again."""
        if self.executor not in STREAMING_EXECUTORS:
            return False
        before = self.state.to_dict()
        try:
            with open_read(self.log_path) as fh:
                info = os.fstat(fh.fileno())
                if self._inode is not None and (
                    info.st_ino != self._inode or info.st_size < self.offset
                ):
                    self._restart()
                self._inode = info.st_ino
                if info.st_size <= self.offset:
                    self.behind = False
                    return self.state.to_dict() != before
                fh.seek(self.offset)
                data = fh.read(READ_CHUNK)
        except OSError:
            return False
        self.offset += len(data)
        self.behind = self.offset < info.st_size
        for line in self._lines(data):
            if line.lstrip()[:1] == b"{":
                self.parser.feed_line(line.decode("utf-8", "replace"))
        return self.state.to_dict() != before

    def _restart(self) -> None:
        self.parser = StreamParser(self.executor)
        self.offset, self._partial, self._skipping = 0, b"", False

    def _lines(self, data: bytes) -> list[bytes]:
        """The complete lines of ``data`` after what the last read left; a line over
        ``MAX_LINE`` is dropped, and its bytes are not kept while it goes on."""
        pieces = data.split(b"\n")
        lines = []
        for piece in pieces[:-1]:
            line, self._partial = self._partial + piece, b""
            if self._skipping or len(line) > MAX_LINE:
                self._skipping = False
                continue
            lines.append(line)
        if not self._skipping:
            self._partial += pieces[-1]
            if len(self._partial) > MAX_LINE:
                self._partial, self._skipping = b"", True
        return lines
