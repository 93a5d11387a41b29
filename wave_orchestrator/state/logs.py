"""structlog set-up: JSON lines in ``launcher.log``, short human lines on stderr (SPEC 3.9)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog

from ..sanitize import strip_controls
from .events import utc_now
from .fsutil import append_line, ensure_dir

_FILE: Path | None = None


def _stamp(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event_dict.setdefault("at", utc_now())
    return event_dict


def _tee_json(
    _: Any, method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    if _FILE is not None:
        record = {"level": method, **event_dict}
        with contextlib.suppress(OSError):  # best effort: a full disk must not stop a launcher
            append_line(_FILE, json.dumps(record, default=str, ensure_ascii=False) + "\n")
    return event_dict


def _human(_: Any, method: str, event_dict: MutableMapping[str, Any]) -> str:
    if method == "debug":
        return ""
    event_dict.pop("at", None)
    event = event_dict.pop("event", "")
    prefix = "wave: " if method in ("info", "debug") else f"wave: {method}: "
    tail = " ".join(
        f"{k}={v}" for k, v in event_dict.items() if k not in ("lane",) and v is not None
    )
    # details quote agents' words (gate details, markers): shown on a terminal, never obeyed
    return strip_controls(f"{prefix}{event}" + (f" ({tail})" if tail else ""))


class _SkipEmptyLogger(structlog.PrintLogger):
    """Prints human lines; a debug event renders to "" and is left out of stderr."""

    def msg(self, message: str) -> None:
        if message:
            super().msg(message)

    log = debug = info = warn = warning = msg
    err = error = critical = exception = failure = fatal = msg


class _SkipEmptyFactory:
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __call__(self, *args: Any) -> _SkipEmptyLogger:
        return _SkipEmptyLogger(self.stream)


def configure_logging(log_file: Path | None = None, quiet: bool = False) -> None:
    """Send every log event to ``log_file`` as JSON and, unless quiet, to stderr for people."""
    global _FILE
    _FILE = log_file
    if log_file is not None:
        ensure_dir(log_file.parent)
    stream = open(os.devnull, "w") if quiet else sys.stderr  # noqa: SIM115 - lives for the process
    structlog.contextvars.clear_contextvars()
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, _stamp, _tee_json, _human],
        logger_factory=_SkipEmptyFactory(stream),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: Any) -> Any:
    return structlog.get_logger().bind(**bound)
