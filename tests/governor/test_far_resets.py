"""A reset the words put far away, or none named: the agent ends, and its account is
held no longer than the lane's maximum wait, on a fake clock. The words may be an agent's: a
date in 2030 or a number of days no date can hold must not stop honest agents for the run, nor
the launcher."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from wave_orchestrator.definitions.model import Governance, UsageLimitPolicy
from wave_orchestrator.governor.governor import Governor
from wave_orchestrator.governor.resets import reset_time

T0 = 1_800_000_000.0  # 2027-01-15, a fixed "now"
MAX_WAIT = 360 * 60


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def governor(**rules: Any) -> tuple[Governor, Clock]:
    clock = Clock()
    return Governor(Governance(**rules), None, now=clock), clock


@pytest.mark.parametrize(
    "detail",
    [
        "usage limit, resets in 7h",  # past max_wait_minutes (6 h)
        "usage limit, Try again at Dec 5th, 2030 9:39 AM",
        "usage limit, try again later",  # none named
        "usage limit, resets in 999999999d",  # past what a date can hold
        "usage limit, try again at Dec 31st, 9999 11:59 PM",
    ],
)
def test_a_far_reset_ends_the_agent_and_holds_its_account_for_the_maximum_wait_only(
    detail: str,
) -> None:
    gov, clock = governor()
    assert gov.park_until("team", detail, T0) is None  # it ends (or runs on its fallback)
    gone = gov.out_of_quota("team")
    assert gone is not None and gone.startswith("not started: team hit its usage limit")
    held = gov.hold(("claude", "team", None), Counter())
    assert held is not None and held.startswith("waiting for team until ")
    assert gov.limited["team"].until == T0 + MAX_WAIT  # the margin is not added past it
    clock.t = T0 + MAX_WAIT - 1
    assert gov.out_of_quota("team") is not None
    clock.t = T0 + MAX_WAIT
    assert gov.out_of_quota("team") is None  # honest agents of it start again
    assert gov.hold(("claude", "team", None), Counter()) is None
    assert gov.limited == {} and gov.view()["limited"] == []


def test_with_waiting_off_a_near_reset_holds_the_account_until_it_and_no_longer() -> None:
    gov, clock = governor(usage_limit=UsageLimitPolicy(wait=False, margin_seconds=30))
    assert gov.park_until("team", "usage limit, resets in 10m", T0) is None
    assert gov.out_of_quota("team") is not None  # its pending agents end, as before
    clock.t = T0 + 600 + 30
    assert gov.out_of_quota("team") is None and gov.waiting("team") is None


def test_a_far_reset_does_not_shorten_a_longer_wait_of_the_account() -> None:
    gov, _ = governor(usage_limit=UsageLimitPolicy(max_wait_minutes=360, margin_seconds=3600))
    assert gov.park_until("team", "resets in 5h 30m", T0) == T0 + 5.5 * 3600 + 3600
    assert gov.park_until("team", "resets in 100h", T0 + 10) is None
    assert gov.limited["team"].until == T0 + 5.5 * 3600 + 3600


@pytest.mark.parametrize(
    "text",
    [
        "resets in 99999999999999999999d",
        "resets in 999999999d",
        "resets in " + "9" * 5000 + "d",
        "try again at Dec 31st, 9999 11:59 PM",
        "resets Dec 31, 9999 11:59pm (Etc/GMT+12)",
    ],
)
def test_a_reset_past_what_a_date_can_hold_is_none_not_a_crash(text: str) -> None:
    assert reset_time(text, datetime(2026, 12, 4, 9, 20, tzinfo=UTC)) is None
