"""lane.yaml's ``defaults:``: the executor, time limits, retries, launch pacing, the lane-wide
cap on running agents, the rate-limit policy and the sandbox every wave starts from."""

from __future__ import annotations

from typing import Any

from ..model import EXECUTOR_IDS, NUMBER_RANGES, LaneDefaults, RateLimitPolicy, SandboxSettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from .sandbox import check_sandbox

ON_TIMEOUT = ("restart", "continue")  # a budget kill or a stall: a new conversation, or not
DEFAULTS_KEYS = (
    "executor",
    "timeout_minutes",
    "max_retries_per_wave",
    "launch_stagger_ms",
    "stall_minutes",
    "on_timeout",
    "max_running",
    "rate_limit",
    "sandbox",
)
RATE_LIMIT_KEYS = (
    "retries",
    "base_delay_seconds",
    "max_delay_seconds",
    "jitter_seconds",
    "patterns",
    "usage_limit_patterns",
)


def check_defaults(ck: Checker, value: Any) -> LaneDefaults:
    raw = ck.mapping(value, ("defaults",), DEFAULTS_KEYS) or {}
    base = LaneDefaults()
    p: FieldPath = ("defaults",)
    executor = base.executor
    if "executor" in raw:
        executor = (
            ck.string(raw["executor"], (*p, "executor"), choices=EXECUTOR_IDS, noun="executor")
            or executor
        )

    def num(key: str, default: float, **kw: Any) -> float:
        if key not in raw:
            return default
        got = ck.number(raw[key], (*p, key), limits=NUMBER_RANGES[key], **kw)
        return default if got is None else got

    return LaneDefaults(
        executor=executor,
        timeout_minutes=num("timeout_minutes", base.timeout_minutes, positive=True),
        max_retries_per_wave=int(
            num("max_retries_per_wave", base.max_retries_per_wave, integer=True)
        ),
        launch_stagger_ms=num("launch_stagger_ms", base.launch_stagger_ms),
        stall_minutes=num("stall_minutes", base.stall_minutes),
        on_timeout=_choice(ck, raw, "on_timeout", ON_TIMEOUT, base.on_timeout),
        max_running=_max_running(raw, num),
        rate_limit=_rate_limit(ck, raw.get("rate_limit")),
        sandbox=check_sandbox(ck, raw.get("sandbox"), SandboxSettings(), p),
    )


def _choice(
    ck: Checker, raw: dict[str, Any], key: str, choices: tuple[str, ...], default: str
) -> str:
    if key not in raw:
        return default
    return ck.string(raw[key], ("defaults", key), choices=choices) or default


def _max_running(raw: dict[str, Any], num: Any) -> int:
    """The lane-wide cap: the number given, or the mapping's ``total`` (checked with the
    rest of the mapping by ``governance``)."""
    value, base = raw.get("max_running"), LaneDefaults().max_running
    if isinstance(value, dict):
        total = value.get("total")
        return total if isinstance(total, int) and not isinstance(total, bool) else base
    return int(num("max_running", base, integer=True, positive=True))


def _rate_limit(ck: Checker, value: Any) -> RateLimitPolicy:
    p: FieldPath = ("defaults", "rate_limit")
    raw = ck.mapping(value, p, RATE_LIMIT_KEYS) or {}
    base = RateLimitPolicy()
    values: dict[str, Any] = {}
    for key, integer in (
        ("retries", True),
        ("base_delay_seconds", False),
        ("max_delay_seconds", False),
        ("jitter_seconds", False),
    ):
        if key in raw:
            got = ck.number(raw[key], (*p, key), integer=integer, limits=NUMBER_RANGES[key])
            if got is not None:
                values[key] = int(got) if integer else got
    for key in ("patterns", "usage_limit_patterns"):
        if key in raw:
            got_list = ck.regex_list(raw[key], (*p, key))
            if got_list is not None:
                values[key] = tuple(got_list)
    policy = base._replace(**values)
    if policy.max_delay_seconds < policy.base_delay_seconds:
        ck.error(
            (*p, "max_delay_seconds"),
            f"max_delay_seconds ({policy.max_delay_seconds}) is less than base_delay_seconds "
            f"({policy.base_delay_seconds})",
            "max_delay_seconds >= base_delay_seconds",
        )
    return policy
