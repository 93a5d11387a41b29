"""lane.yaml's ``notify:`` (where a person is told of questions, waves ending, limits and
spend) and ``feedback:`` (how long a question may wait for an answer)."""

from __future__ import annotations

from typing import Any

from ..model import NOTIFY_KINDS, LaneDef, NotifySettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from .governance import check_webhook

NOTIFY_KEYS = ("command", "desktop", "webhook", "bell", "on")
FEEDBACK_KEYS = ("timeout_minutes",)
MAX_FEEDBACK_MINUTES = 7 * 24 * 60
DEFAULT_FEEDBACK_TIMEOUT: float = LaneDef._field_defaults["feedback_timeout_minutes"]


def check_notify(ck: Checker, value: Any) -> NotifySettings:
    """``notify``: where a person is told of questions, waves ending, limits and spend."""
    raw = ck.mapping(value, ("notify",), NOTIFY_KEYS) or {}
    command = ck.string_list(raw.get("command"), ("notify", "command")) or []
    if "command" in raw and not command:
        ck.error(("notify", "command"), "is empty", "a command line as a list, e.g. [notify-send]")
    flags = {k: bool(ck.boolean(raw[k], ("notify", k))) for k in ("desktop", "bell") if k in raw}
    url, form = check_webhook(ck, raw.get("webhook"))
    on: tuple[str, ...] = NOTIFY_KINDS
    if "on" in raw:
        on = tuple(
            ck.string_list(raw["on"], ("notify", "on"), choices=NOTIFY_KINDS, noun="event") or ()
        )
    return NotifySettings(
        tuple(command), flags.get("desktop", False), url, form, flags.get("bell", False), on
    )


def check_feedback_minutes(ck: Checker, value: Any) -> float:
    """How long a wave with nothing else to wait for waits on a question (then: blocked)."""
    raw = ck.mapping(value, ("feedback",), FEEDBACK_KEYS) or {}
    if "timeout_minutes" not in raw:
        return DEFAULT_FEEDBACK_TIMEOUT
    path: FieldPath = ("feedback", "timeout_minutes")
    got = ck.number(raw["timeout_minutes"], path, positive=True)
    if got is not None and got > MAX_FEEDBACK_MINUTES:
        ck.error(path, f"must be at most {MAX_FEEDBACK_MINUTES} (a week), got {got}")
        return DEFAULT_FEEDBACK_TIMEOUT
    return DEFAULT_FEEDBACK_TIMEOUT if got is None else got
