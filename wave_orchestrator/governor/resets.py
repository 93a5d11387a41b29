"""When a usage limit resets, read from the words a CLI ended with (docs/launcher.md, "Usage
limits"). The wrapper keeps the phrase in the status file's ``detail``; this turns it into a
time, or None when the CLI named none ("try again later") or the phrase is not one we know.

The forms are those of ../shared/agent-clis.md:
- codex: ``try again at 9:39 AM`` (the machine's local time), or ``try again at Dec 5th, 2026
  9:39 AM`` when the reset is on a later day;
- claude: ``resets 9:40am (UTC)`` (the zone in brackets), ``resets in 2h 30m``;
- opencode: ``It will reset in 2 hours 10 minutes``.

A clock time names a minute, and the reset lies somewhere in it (codex prints 12:01 AM for a
reset at 00:01:58; claude 12am for one at 00:00:58): the limit is over at the minute's end,
which is the time returned. A minute already over is that minute tomorrow (the CLI said the
next one).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"\breset(?:s)? in ((?:\s*\d+\s*[a-z]+\.?,?(?:\s+and)?)+)", re.I)
_PART = re.compile(
    r"(\d+)\s*(d|day|days|h|hr|hrs|hour|hours|m|min|mins|minute|minutes|"
    r"s|sec|secs|second|seconds)\b",
    re.I,
)
_CLOCK = re.compile(
    r"\b(?:resets|try again at)\s+"
    r"(?:(?P<month>[a-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(?:(?P<year>\d{4}),?\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]m)"
    r"(?:\s*\((?P<zone>[A-Za-z_/+\-0-9]+)\))?",
    re.I,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def reset_time(text: str, now: datetime) -> datetime | None:
    """The time ``text`` says the limit resets, as an aware datetime; ``now`` is aware and is
    when the CLI said it. None: no time named, or one that cannot be a reset (nonsense, or
    past what a date can hold: ``resets in 999999999d``). Total: the words may be an
    agent's, and the launcher must not fall over them."""
    try:
        return _reset_time(text, now)
    except (OverflowError, ValueError):
        return None


def _reset_time(text: str, now: datetime) -> datetime | None:
    if (found := _DURATION.search(text)) is not None:
        seconds = sum(int(n) * _UNITS[u[0].lower()] for n, u in _PART.findall(found.group(1)))
        return now + timedelta(seconds=seconds) if seconds else None
    if (clock := _CLOCK.search(text)) is None:
        return None
    hour, minute = int(clock["hour"]), int(clock["minute"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if clock["ampm"].lower() == "pm" else 0)
    zone = _zone(clock["zone"], now)
    local_now = now.astimezone(zone)
    day = _day(clock, local_now.date())
    if day is None:
        return None
    at = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone) + timedelta(minutes=1)
    if clock["month"] is None and at <= local_now:
        at += timedelta(days=1)  # a minute already over: tomorrow's
    return at.astimezone(now.tzinfo)


def _zone(name: str | None, now: datetime) -> tzinfo:
    """The zone a clock time is in: the one it names, else the machine's (as codex prints)."""
    if name:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # (and sysconfig): for a named zone

        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return now.astimezone().tzinfo or now.tzinfo  # type: ignore[return-value]


def _day(clock: re.Match[str], today: date) -> date | None:
    if clock["month"] is None:
        return today
    month = clock["month"][:3].lower()
    if month not in _MONTHS:
        return None
    year = int(clock["year"]) if clock["year"] else today.year
    try:
        day = date(year, _MONTHS.index(month) + 1, int(clock["day"]))
    except ValueError:
        return None
    if clock["year"] is None and day < today:
        day = day.replace(year=year + 1)  # "Jan 2" said on Dec 31st
    return day
