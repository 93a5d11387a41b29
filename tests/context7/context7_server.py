"""A stand-in for the Context7 API on 127.0.0.1, in a thread of the test: it answers each
path from a script (status, headers, body, in order; the last answer repeats) and records
every request it saw, so tests drive wave's fetches without the internet."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, str], bytes]
SEARCH = "/api/v2/libs/search"
CONTEXT = "/api/v2/context"


class Context7Stub:
    def __init__(self) -> None:
        self.script: dict[str, list[Answer]] = {
            SEARCH: [(200, {}, b'{"results": [{"id": "/acme/widgets", "title": "Widgets"}]}')],
            CONTEXT: [(200, {}, b"widgets.make(n) makes n widgets\n")],
        }
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.url = ""

    def answer(self, path: str, *answers: Answer) -> None:
        self.script[path] = list(answers)

    def requests(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.seen if r["path"] == path]

    def _next(self, path: str) -> Answer:
        with self.lock:
            answers = self.script.get(path) or [(404, {}, b"no such path")]
            return answers.pop(0) if len(answers) > 1 else answers[0]


@contextmanager
def context7_stub() -> Iterator[Context7Stub]:
    stub = Context7Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            with stub.lock:
                stub.seen.append(
                    {
                        "path": url.path,
                        "query": dict(urllib.parse.parse_qsl(url.query)),
                        "authorization": self.headers.get("Authorization"),
                    }
                )
            status, headers, body = stub._next(url.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
