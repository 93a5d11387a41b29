"""Asking the Context7 API for one library's docs, over plain HTTP (the standard library's
urllib: loaded only when a launch fetches docs).

Every answer is hostile: bodies are read to a bound, JSON is parsed by the bounded reader,
redirects are refused (the API key would follow them to another host), and a busy service
(202, 429, 500, 503) is tried three times, waiting max(Retry-After, 1 s·2^n), never longer
than ``MAX_WAIT`` nor past the caller's deadline.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from ..state.logs import Logger

log = Logger(__name__)

BUSY = frozenset({202, 429, 500, 503})
TRIES = 3
MAX_WAIT = 30.0  # the longest wait between tries, whatever Retry-After says
REQUEST_TIMEOUT = 15.0
MAX_BODY = 1 << 20  # the docs of one library are tens of KB; more is cut
MAX_QUERY = 400
LIBRARY_ID_RE = re.compile(r"/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){1,4}")  # as a bundle names one


class FetchFailed(Exception):
    """A library's docs could not be had: ``mode`` is ``unavailable`` (the service did not
    answer, or stayed busy) or ``error`` (it refused, or answered nonsense)."""

    def __init__(self, mode: str, detail: str) -> None:
        super().__init__(detail)
        self.mode = mode
        self.detail = detail


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx surfaces as an HTTPError: refused, never followed


class Client:
    """One API base URL and key; ``sleep`` and ``base_delay`` are a test's to shorten."""

    def __init__(
        self,
        base_url: str,
        key: str,
        deadline: float,
        sleep: Callable[[float], None] = time.sleep,
        base_delay: float = 1.0,
    ) -> None:
        self.base = base_url.rstrip("/")
        self.key = key
        self.deadline = deadline  # time.monotonic() past which nothing more is tried
        self.sleep = sleep
        self.base_delay = base_delay
        self.opener = urllib.request.build_opener(_NoRedirect())

    def library_docs(self, library_id: str, name: str, query: str) -> tuple[str, str]:
        """(the library's id, its docs text); "" for either when the service has none."""
        query = query[:MAX_QUERY]
        if not library_id:
            library_id = self.search(name, query)
            if not library_id:
                return "", ""
        body = self.get("/api/v2/context", {"libraryId": library_id, "query": query, "type": "txt"})
        return library_id, body.decode("utf-8", errors="replace")

    def search(self, name: str, query: str) -> str:
        """The id of the best library for ``name`` ("" when none matched)."""
        body = self.get("/api/v2/libs/search", {"libraryName": name, "query": query})
        try:
            data = json.loads(body.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            raise FetchFailed("error", "the library search answered something not JSON") from None
        found = data.get("results") if isinstance(data, dict) else None
        for item in found if isinstance(found, list) else []:
            lid = item.get("id") if isinstance(item, dict) else None
            if isinstance(lid, str) and LIBRARY_ID_RE.fullmatch(lid):
                return lid
        return ""

    def get(self, path: str, params: dict[str, str]) -> bytes:
        """GET ``path`` with the key; tried again while the service says it is busy."""
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(
            url,
            headers={"Authorization": f"Bearer {self.key}", "User-Agent": "wave-orchestrator"},
        )
        for n in range(TRIES):
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise FetchFailed("unavailable", "no answer before the deadline")
            try:
                with self.opener.open(request, timeout=min(REQUEST_TIMEOUT, left)) as resp:
                    status, retry_after = resp.status, resp.headers.get("Retry-After")
                    body: bytes = resp.read(MAX_BODY)
            except urllib.error.HTTPError as exc:
                status, retry_after, body = exc.code, exc.headers.get("Retry-After"), b""
                exc.close()
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                raise FetchFailed("unavailable", f"no answer: {type(reason).__name__}") from None
            if status == 200:
                return body
            if status not in BUSY:
                raise FetchFailed("error", f"HTTP {status} from {path}")
            if n + 1 < TRIES:
                wait = min(max(retry_seconds(retry_after), self.base_delay * 2**n), MAX_WAIT)
                if time.monotonic() + wait >= self.deadline:
                    break
                log.info("context7 busy: trying again", status=status, wait=wait)
                self.sleep(wait)
        raise FetchFailed("unavailable", f"still busy after {TRIES} tries (HTTP {status})")


def retry_seconds(value: str | None) -> float:
    """Retry-After in seconds (a number or an HTTP date); 0 when absent or nonsense."""
    if not value:
        return 0.0
    text = value.strip()[:64]
    if text.isdigit():
        return float(min(int(text), 86_400))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return 0.0
    return max(0.0, min(when.timestamp() - time.time(), 86_400.0))
