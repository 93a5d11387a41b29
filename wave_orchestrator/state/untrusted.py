"""Field checks for JSON that wave reads but others can write (an agent, a person, a
repository): ``launch.json``, ``dashboard.json`` (by its schema, ``snapshot_schema``),
``backoff.json``. Each reader returns only
fields of the expected type and range, so no caller ever meets ``"attempts": "x"``, ``1e400``
or a list where a name belongs. ``status.json`` and ``run-state.json`` use these checks in
their own modules; every file is read by ``fsutil.read_json`` (strict: no NaN, no Infinity).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, NamedTuple

from ..names import AGENT_ID_RE
from .fsutil import READ_LIMIT, parse_json, read_text
from .snapshot_schema import GOVERNOR, SNAPSHOT, check_fields

HEX_DIGEST_RE = re.compile(r"[0-9a-f]{64}")  # a sha256, as runtime.reuse writes it
MAX_COUNT = 1_000_000  # attempts, tries, retries: far beyond any real run, far below overflow
TEXT_LIMIT = 2000  # a detail or a last line longer than this is cut, not shown whole


def count(value: Any, minimum: int = 0, maximum: int = MAX_COUNT) -> int | None:
    """``value`` when it is an int (not a bool) in [minimum, maximum], else None."""
    if isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= maximum:
        return value
    return None


def text(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def epoch(value: Any) -> float | None:
    """Seconds since the epoch: a finite, positive number (not a bool), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and 0 < number < 1e11:
            return number
    return None


def epoch_ms(value: Any) -> float | None:
    """Milliseconds since the epoch, as seconds by ``epoch``'s rule, checked after the
    division: a number too small to be a time (``5e-324``) is no time, not the epoch."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return epoch(float(value) / 1000)
        except OverflowError:  # an integer past any float
            return None
    return None


def read_object(path: Path, limit: int = READ_LIMIT) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is absent, unreadable (a link, a FIFO, over
    ``limit`` bytes) or not an object."""
    try:
        data = parse_json(read_text(path, limit))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class LaunchRecord(NamedTuple):
    """``launch.json``: which attempt and executor were launched, and when. (A NamedTuple:
    `wave status` reads it without loading `dataclasses`, as ``state.layout`` says.)"""

    attempt: int | None
    executor: str | None
    session: str | None
    launched_at: float | None
    fingerprint: str | None = None  # what shaped the attempt's work (runtime.reuse)
    reused: bool = False  # copied from an earlier run of the wave, not launched in this one
    conversation: str | None = None  # its CLI's conversation id (checked by its CLI's shape)


def read_launch_record(path: Path) -> LaunchRecord:
    data = read_object(path) or {}
    executor = text(data.get("executor"), 64)
    digest = text(data.get("fingerprint"), 64)
    return LaunchRecord(
        attempt=count(data.get("attempt"), minimum=1),
        executor=executor if executor and AGENT_ID_RE.fullmatch(executor) else None,
        session=text(data.get("session"), 64),
        launched_at=epoch(data.get("launched_at")),
        fingerprint=digest if digest and HEX_DIGEST_RE.fullmatch(digest) else None,
        reused=data.get("reused") is True,
        conversation=text(data.get("conversation"), 128),
    )


class Backoff(NamedTuple):
    """``backoff.json``, written by the wrapper while it sleeps on a rate limit."""

    try_number: int  # the try that hit the limit
    tries: int | None  # how many tries the wrapper allows
    delay_ms: int | None
    until: float | None  # when the sleep ends, seconds since the epoch
    account_wait: bool = False  # it waits out its account's backoff: its own try met no limit


def read_backoff(path: Path) -> Backoff | None:
    data = read_object(path)
    if data is None:
        return None
    return Backoff(
        try_number=count(data.get("try")) or 0,
        tries=count(data.get("tries")),
        delay_ms=count(data.get("delay_ms"), maximum=2**62),
        until=epoch_ms(data.get("until_ms")),
        account_wait=data.get("account_wait") == 1,
    )


def clean_snapshot(data: Any) -> dict[str, Any]:
    """A ``dashboard.json`` checked field by field against the one schema the launcher writes
    by (``snapshot_schema.SNAPSHOT``; {} for a non-object): agent rows without a valid id are
    dropped, odd values become None, and the lists are always there."""
    if not isinstance(data, dict):
        return {}
    out = check_fields(SNAPSHOT, data)
    for key in ("agents", "events", "waiting_on", "stages"):
        out.setdefault(key, [])
    return out


def read_snapshot(path: Path) -> dict[str, Any] | None:
    """A wave's ``dashboard.json``, checked field by field; None when absent or unreadable."""
    data = read_object(path)
    return None if data is None else clean_snapshot(data)


def read_governor(path: Path) -> dict[str, Any] | None:
    """``governor.json`` (spend, limited accounts) as the views show it, every field checked."""
    data = read_object(path)
    return None if data is None else check_fields(GOVERNOR, data)


def deploy_line(agents: list[dict[str, Any]]) -> str:
    """Each agent's last deploy signal, as `wave status` and the dashboard show them:
    ``api healthy (deployer), web failed (web)``; "" when none printed one."""
    return ", ".join(
        f"{a['deploy']} ({a.get('id')})"
        for a in agents
        if isinstance(a, dict) and isinstance(a.get("deploy"), str) and a["deploy"]
    )
