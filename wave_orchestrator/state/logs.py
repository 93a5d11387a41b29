"""structlog set-up: JSON lines in ``launcher.log``, short human lines on stderr."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import json
import os
import sys
import types
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ..sanitize import redact_value, strip_controls
from .events import utc_now
from .fsutil import ensure_dir
from .jsonl import append_line

_FILE: Path | None = None


def _stamp(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event_dict.setdefault("at", utc_now())
    return event_dict


def _redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Credentials hidden by their value in every text of a log line (an error quoting a URL
    with its password, a token an agent printed into a gate's detail), in launcher.log and on
    the terminal alike: both are pasted into bug reports."""
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = redact_value(value)
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
        f"{k}={v}" for k, v in event_dict.items() if k not in ("lane", "logger") and v is not None
    )
    # details quote agents' words (gate details, markers): shown on a terminal, never obeyed
    return strip_controls(f"{prefix}{event}" + (f" ({tail})" if tail else ""))


# Optional modules structlog's import would load: the renderers it probes for (its
# ConsoleRenderer's colours and exception formatting; wave renders its own lines, ``_human``,
# and importing rich alone costs a launch ~40 ms), and ``ssl``, which asyncio (structlog.stdlib
# imports it) loads for TLS transports: the launcher runs no event loop (~6 ms; a webhook's
# urllib imports ssl for itself later). docs/performance.md.
STRUCTLOG_EXTRAS = ("rich", "better_exceptions", "colorama", "ssl")
# Imported by structlog for what wave never calls (its async methods; threadlocal's deprecated
# wrap_dict): structlog gets stand-ins that import the real module on first use (asyncio with
# its sockets ~15 ms of CPU a launch, uuid with platform ~2 ms).
STRUCTLOG_UNUSED = ("asyncio", "uuid")


class _ImportedOnUse(types.ModuleType):
    """A stand-in for a module: its first attribute read imports the real one."""

    def __getattr__(self, attr: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


def _structlog() -> Any:
    """structlog, imported without the optional renderers it would probe for."""
    if "structlog" in sys.modules:
        return sys.modules["structlog"]
    hidden = [name for name in STRUCTLOG_EXTRAS if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` fails, as absent
    deferred = [name for name in STRUCTLOG_UNUSED if name not in sys.modules]
    for name in deferred:
        sys.modules[name] = _ImportedOnUse(name)
    try:
        import structlog
    finally:
        for name in hidden:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]  # importable again by whoever wants it
        for name in deferred:
            if isinstance(sys.modules.get(name), _ImportedOnUse):
                del sys.modules[name]  # the real module for whoever imports it later
    return structlog


def _skip_empty_factory(stream: Any) -> Any:
    """structlog (loaded here, on first use: dry runs and read-only commands skip it) with a
    logger that prints human lines; a debug event renders to "" and is left out of stderr."""
    _structlog()
    import structlog  # already loaded, as _structlog wants it

    class SkipEmptyLogger(structlog.PrintLogger):
        def msg(self, message: str) -> None:
            if message:
                super().msg(message)

        log = debug = info = warn = warning = msg
        err = error = critical = exception = failure = fatal = msg

    return lambda *args: SkipEmptyLogger(stream)


def configure_logging(log_file: Path | None = None, quiet: bool = False) -> None:
    """Send every log event to ``log_file`` as JSON and, unless quiet, to stderr for people."""
    global _FILE
    _FILE = log_file
    if log_file is not None:
        ensure_dir(log_file.parent)
    structlog = _structlog()

    stream = open(os.devnull, "w") if quiet else sys.stderr  # noqa: SIM115 - lives for the process
    structlog.contextvars.clear_contextvars()
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, _stamp, _redact, _tee_json, _human],
        logger_factory=_skip_empty_factory(stream),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: Any) -> Any:
    structlog = _structlog()

    return structlog.get_logger().bind(**bound)


class Logger:
    """A module's logger: ``log = Logger(__name__)`` at the top of a module, then
    ``log.info("agent launched", agent=run.id)``.

    structlog is loaded at the first line logged, not at import, so read-only commands that
    import a module for one function pay nothing for it. Each line is sent through structlog's
    current configuration, so the context bound through contextvars (the lane, the wave) and a
    test's ``structlog.testing.capture_logs`` apply to it; the module's name goes to the JSON
    log, never to the person's terminal.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name.removeprefix("wave_orchestrator.")

    def _emit(self, level: str, event: str, fields: dict[str, Any]) -> None:
        getattr(_structlog().get_logger(), level)(event, logger=self.name, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, fields)

    def at(self, level: str, event: str, **fields: Any) -> None:
        """A line at a level chosen at run time ("info" for a success, "warning" otherwise)."""
        if level not in ("debug", "info", "warning", "error"):
            raise ValueError(f"unknown log level {level!r}")
        self._emit(level, event, fields)


P = ParamSpec("P")
R = TypeVar("R")


def in_context(work: Callable[P, R]) -> Callable[P, R]:
    """``work``, to run on a worker thread with this thread's log context (the lane, the
    wave): a new thread starts with none of it, and its lines would name neither. Each call
    takes its own copy, since one context cannot be entered by two threads at once."""
    return functools.partial(contextvars.copy_context().run, work)


def bind_wave(number: int) -> None:
    """Every later log line of this thread names the wave."""
    structlog = _structlog()

    structlog.contextvars.bind_contextvars(wave=number)
