"""Reset times read from the usage-limit texts of ../shared/agent-clis.md."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from wave_orchestrator.governor.resets import reset_time

NOW = datetime(2026, 12, 4, 9, 20, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (
            "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
            "https://chatgpt.com/settings/usage to purchase more credits or try again at 9:39 AM.",
            datetime(2026, 12, 4, 9, 40, tzinfo=UTC),
        ),
        (
            "You’ve hit your usage limit. Try again at Dec 5th, 2026 9:39 AM.",
            datetime(2026, 12, 5, 9, 40, tzinfo=UTC),
        ),
        (
            "You've hit your session limit · resets 9:40am (UTC)",
            datetime(2026, 12, 4, 9, 41, tzinfo=UTC),
        ),
        (
            "You've hit your session limit · resets 12am (UTC)",
            datetime(2026, 12, 5, 0, 1, tzinfo=UTC),
        ),
        (
            "You've hit your weekly limit · resets 4:40am (America/New_York)",
            datetime(2026, 12, 4, 9, 41, tzinfo=UTC),
        ),
        (
            "Fast limit reached and temporarily disabled · resets in 2h 30m",
            NOW + timedelta(hours=2, minutes=30),
        ),
        (
            "Fast limit reached and temporarily disabled · resets in 45s",
            NOW + timedelta(seconds=45),
        ),
        (
            "Sonnet usage limit reached. It will reset in 2 hours 10 minutes. To continue using this "
            "model now, enable usage",
            NOW + timedelta(hours=2, minutes=10),
        ),
        ("usage limit, resets 9:20am (UTC)", datetime(2026, 12, 4, 9, 21, tzinfo=UTC)),
        ("usage limit, resets 9:19am (UTC)", datetime(2026, 12, 5, 9, 20, tzinfo=UTC)),
        ("try again at 12:05 AM", datetime(2026, 12, 5, 0, 6, tzinfo=UTC)),
        ("try again at 12:05 PM", datetime(2026, 12, 4, 12, 6, tzinfo=UTC)),
    ],
)
def test_each_cli_s_words_give_the_reset(text: str, expect: datetime) -> None:
    assert reset_time(text, NOW) == expect


@pytest.mark.parametrize(
    "text",
    [
        "You’ve hit your usage limit. Try again later.",
        "resets 13:00pm (UTC)",
        "try again at Feb 30th, 2027 9:00 AM",
        "resets in 0 minutes",
        "usage limit reached",
        "",
    ],
)
def test_no_reset_or_nonsense_gives_none(text: str) -> None:
    assert reset_time(text, NOW) is None


def test_a_clock_time_without_a_zone_is_the_machine_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # 09:20 UTC is 18:20 there
    time.tzset()
    try:
        got = reset_time("try again at 9:39 PM", NOW)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert got == datetime(2026, 12, 4, 12, 40, tzinfo=UTC)


def test_a_date_without_a_year_past_today_is_next_year_s() -> None:
    got = reset_time("try again at Jan 2nd 9:00 AM", datetime(2026, 12, 31, 23, 0, tzinfo=UTC))
    assert got is not None and got.year == 2027
