"""A stand-in for the model providers, so that the real codex, claude and opencode CLIs can run
end to end in the tests with no network and no account: just enough of the OpenAI Responses API
(codex), the Anthropic Messages API (claude) and the OpenAI Chat Completions API (opencode),
streamed, on 127.0.0.1 only.

A request's mode is the first part of its path, ``/m/<mode>/...``; the rest is the provider's
own path. ``ok`` (and each fresh ``ok-<n>`` of ``ProviderMock.ok``) answers with a short text
and its token usage. A mode made with ``ProviderMock.shell`` first asks the CLI to run one
shell command (the first request that offers tools gets the tool call), then, once the
conversation holds the tool's result, answers with text: a test sees the CLI's tool really
ran. A mode made with ``ProviderMock.limited`` answers the agent's first turns with the
provider's own usage-limit response (Anthropic's unified rate-limit headers, OpenAI's
``usage_limit_reached``, OpenCode Go's ``GoUsageLimitError``), its reset a moment away, and
later ones as ``ok`` does: a test sees a CLI end on a usage limit, then continue. Every
request and every usage figure served is recorded per mode, so a test can compare
what the CLI reports with what it was given. Anything else (claude's probe of the base URL,
model lists) gets a 404, and the CLIs finish without it.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from provider_wire import (
    Answer,
    Refusal,
    anthropic_text,
    anthropic_tool_call,
    anthropic_usage_limit,
    chat_text,
    chat_tool_call,
    chat_usage_limit,
    responses_text,
    responses_tool_call,
    responses_usage_limit,
)

ANSWER = "Hello from the mock"
TOOL_ANSWER = "Done: the command ran."
# What an OpenCode Go limit ends on once opencode's retries are spent (its reset in seconds).
OPENCODE_LIMIT = "5-hour usage limit reached. It will reset in {} seconds."
Reply = tuple[int, str, bytes, dict[str, str]]  # status, content type, body, other headers


@dataclass(frozen=True)
class Request:
    """One request the mock got: its API (``responses``, ``anthropic``, ``chat`` or
    ``other``), method, mode, the path after the mode, and its JSON body (``{}`` if none)."""

    api: str
    method: str
    mode: str
    path: str
    body: dict[str, Any]

    def text(self) -> str:
        """The body as text, to look for what a tool reported back to the model."""
        return json.dumps(self.body)


@dataclass(frozen=True)
class Served:
    """The usage one answer reported: tokens in and out."""

    api: str
    input_tokens: int
    output_tokens: int


class ProviderMock:
    """The mock's address and what it has seen; made running by ``running_provider_mock``."""

    def __init__(self, root: str) -> None:
        self.root = root  # http://127.0.0.1:PORT
        self._lock = threading.Lock()
        self._commands: dict[str, str] = {}
        self._limits: dict[str, _Limit] = {}
        self._requests: list[Request] = []
        self._served: list[tuple[str, Served]] = []
        self._numbers = itertools.count(1)

    def url(self, mode: str) -> str:
        """The base URL of ``mode``: add ``/v1`` for codex and opencode, not for claude."""
        return f"{self.root}/m/{mode}"

    def ok(self) -> str:
        """A fresh ``ok`` mode: its requests and usage are counted apart from every other's."""
        return f"ok-{next(self._numbers)}"

    def shell(self, command: str) -> str:
        """A fresh mode whose first request with tools gets a call of the CLI's shell tool
        running ``command`` (bash, in the CLI's working folder)."""
        mode = f"sh-{next(self._numbers)}"
        with self._lock:
            self._commands[mode] = command
        return mode

    def limited(self, times: int = 1, reset_seconds: int = 1) -> str:
        """A fresh mode whose first ``times`` model requests that offer tools (the agent's
        turns, not a side request such as a title) get the provider's usage-limit answer,
        its reset ``reset_seconds`` after the request; every later request is answered as
        ``ok`` would be."""
        mode = f"lim-{next(self._numbers)}"
        with self._lock:
            self._limits[mode] = _Limit(times, reset_seconds)
        return mode

    def limits_served(self, mode: str) -> int:
        """How many usage-limit answers ``mode`` gave."""
        with self._lock:
            limit = self._limits.get(mode)
            return 0 if limit is None else limit.served

    def requests(self, mode: str) -> list[Request]:
        with self._lock:
            return [r for r in self._requests if r.mode == mode]

    def served(self, mode: str) -> list[Served]:
        with self._lock:
            return [s for m, s in self._served if m == mode]

    def tool_results(self, mode: str) -> list[str]:
        """The bodies of ``mode``'s requests that carry a tool's result back to the model."""
        return [r.text() for r in self.requests(mode) if _has_tool_result(r.api, r.body)]

    def answer(self, request: Request) -> Reply:
        """Status, content type, body and other headers for ``request``; records it and what
        it serves."""
        with self._lock:
            self._requests.append(request)
            command = self._commands.get(request.mode)
            limit = self._limits.get(request.mode)
        known = (
            request.mode == "ok"
            or request.mode.startswith("ok-")
            or command is not None
            or limit is not None
        )
        if request.api == "other" or request.method != "POST" or not known:
            return 404, "application/json", b'{"error": {"message": "not found"}}', {}
        if request.path.rstrip("/").endswith("/count_tokens"):
            return 200, "application/json", b'{"input_tokens": 10}', {}
        if limit is not None and (refusal := self._refusal(request, limit)) is not None:
            return (
                refusal.status,
                "application/json",
                json.dumps(refusal.body).encode(),
                dict(refusal.headers),
            )
        answer = self._compose(request, command)
        with self._lock:
            self._served.append(
                (request.mode, Served(request.api, answer.input_tokens, answer.output_tokens))
            )
        if answer.whole is not None:
            return 200, "application/json", json.dumps(answer.whole).encode(), {}
        out = []
        for name, data in answer.events:
            if name:
                out.append(f"event: {name}\n")
            out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
        return 200, "text/event-stream", "".join(out).encode(), {}

    def _refusal(self, request: Request, limit: _Limit) -> Refusal | None:
        """The usage-limit answer while ``limit`` has some left for an agent's turn, in
        ``request``'s API; None: answer as ``ok``."""
        with self._lock:
            if not request.body.get("tools") or limit.served >= limit.times:
                return None
            limit.served += 1
        reset_at = int(time.time()) + limit.reset_seconds
        if request.api == "anthropic":
            return anthropic_usage_limit(reset_at)
        if request.api == "responses":
            return responses_usage_limit(reset_at)
        return chat_usage_limit(limit.reset_seconds, OPENCODE_LIMIT.format(limit.reset_seconds))

    def _compose(self, request: Request, command: str | None) -> Answer:
        """The tool call when ``command`` is due (tools offered, no result of one yet), else
        the text answer, in ``request``'s API."""
        body, api = request.body, request.api
        model = str(body.get("model") or "mock-model")
        ident = f"{next(self._numbers)}"
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        if command is not None and tools and not _has_tool_result(api, body):
            if api == "responses":
                names = [t.get("name") for t in tools if isinstance(t, dict)]
                return responses_tool_call(model, f"call_{ident}", command, names)
            if api == "anthropic":
                return anthropic_tool_call(model, ident, command)
            return chat_tool_call(model, f"call_{ident}", command)
        text = ANSWER if command is None else TOOL_ANSWER
        streamed = bool(body.get("stream"))
        if api == "responses":
            return responses_text(model, text, ident)
        if api == "anthropic":
            return anthropic_text(model, text, ident, streamed)
        return chat_text(model, text, ident, streamed)


@dataclass
class _Limit:
    """A limited mode: how many usage-limit answers it gives, and has given."""

    times: int
    reset_seconds: int
    served: int = 0


def _api(path: str) -> str:
    if "/messages" in path:
        return "anthropic"
    if path.rstrip("/").endswith("/responses"):
        return "responses"
    if path.rstrip("/").endswith("/chat/completions"):
        return "chat"
    return "other"


def _has_tool_result(api: str, body: dict[str, Any]) -> bool:
    """Whether the conversation sent already holds a tool's result (the call was made)."""
    if api == "responses":
        items = body.get("input")
        return isinstance(items, list) and any(
            isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output") for i in items
        )
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    if api == "chat":
        return any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    return any(
        isinstance(m, dict)
        and isinstance(m.get("content"), list)
        and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in m["content"])
        for m in messages
    )


def _handler(mock: ProviderMock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30  # seconds a silent connection is kept

        def _serve(self) -> None:
            raw = self._body()
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            path = self.path.split("?", 1)[0]
            mode = ""
            if path.startswith("/m/"):
                mode, _, rest = path[3:].partition("/")
                path = "/" + rest
            request = Request(
                _api(path), self.command, mode, path, body if isinstance(body, dict) else {}
            )
            status, kind, payload, headers = mock.answer(request)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")  # no idle connection outlives the test
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            self.close_connection = True

        def _body(self) -> bytes:
            if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
            while self.rfile.readline().strip():  # trailers, up to the blank line
                pass
            return b"".join(chunks)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

        def log_message(self, *args: object) -> None:
            return None

    return Handler


@contextmanager
def running_provider_mock() -> Iterator[ProviderMock]:
    """The mock serving on a free port of 127.0.0.1 until the block ends; then stopped, its
    socket closed and its thread joined."""
    mock = ProviderMock("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mock))
    # Every connection's thread is joined when the server closes (its socket times out).
    server.daemon_threads = False
    server.block_on_close = True
    mock.root = f"http://127.0.0.1:{server.server_address[1]}"
    serve = functools.partial(server.serve_forever, poll_interval=0.05)  # a quick stop
    thread = threading.Thread(target=serve, name="provider-mock", daemon=True)
    thread.start()
    try:
        yield mock
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
