"""What a lane lets its fleet use (docs/lanes.md, "Limits, accounts and spend"): waiting out a
usage limit, the accounts its agents log in with, how many run at once per executor, account
and model, and how much they may spend. The governor (``governor/``) enforces them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...sanitize import redact_value
from ..model import (
    EXECUTOR_IDS,
    NUMBER_RANGES,
    WEBHOOK_FORMATS,
    AccountDef,
    Caps,
    Governance,
    UsageLimitPolicy,
)
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

USAGE_LIMIT_KEYS = ("wait", "max_wait_minutes", "margin_seconds", "max_parks")
ACCOUNT_KEYS = ("executor", "env")
CAP_SCOPES = ("account", "model")  # max_running: {account: {...}, model: {...}}
MAX_WAIT_MINUTES = 7 * 24 * 60
MAX_SPEND_USD = 1_000_000
MAX_PARKS = 1000  # more than a reset an hour for six weeks: a typo


def check_usage_limit(ck: Checker, value: Any) -> UsageLimitPolicy:
    p: FieldPath = ("usage_limit",)
    raw = ck.mapping(value, p, USAGE_LIMIT_KEYS) or {}
    base = UsageLimitPolicy()
    wait = base.wait if "wait" in raw else True
    if "wait" in raw:
        wait = bool(ck.boolean(raw["wait"], (*p, "wait")))
    minutes = base.max_wait_minutes
    if "max_wait_minutes" in raw:
        got = ck.number(
            raw["max_wait_minutes"],
            (*p, "max_wait_minutes"),
            positive=True,
            limits=(0, MAX_WAIT_MINUTES),
        )
        minutes = minutes if got is None else float(got)
    margin = base.margin_seconds
    if "margin_seconds" in raw:
        got = ck.number(raw["margin_seconds"], (*p, "margin_seconds"), limits=(0, 3600))
        margin = margin if got is None else float(got)
    parks = base.max_parks
    if "max_parks" in raw:
        got = ck.number(raw["max_parks"], (*p, "max_parks"), integer=True, limits=(1, MAX_PARKS))
        parks = parks if got is None else int(got)
    return UsageLimitPolicy(wait, minutes, margin, parks)


def check_accounts(ck: Checker, value: Any) -> dict[str, AccountDef]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        ck.wrong_type(("accounts",), value, "a mapping of account name to {executor, env}")
        return {}
    from .executor_settings import check_env  # executor_settings imports this module

    out: dict[str, AccountDef] = {}
    for name, body in value.items():
        p: FieldPath = ("accounts", name)
        if not isinstance(name, str) or not name.replace("-", "_").replace("_", "a").isalnum():
            ck.error(p, f"invalid account name {name!r}", "letters, digits, - and _", key=True)
            continue
        raw = ck.mapping(body, p, ACCOUNT_KEYS) or {}
        if "executor" not in raw:
            ck.error(p, "names no executor", "executor: one of " + ", ".join(EXECUTOR_IDS[:3]))
            continue
        executor = ck.string(
            raw["executor"], (*p, "executor"), choices=EXECUTOR_IDS, noun="executor"
        )
        env = check_env(ck, raw["env"], (*p, "env")) if "env" in raw else {}
        if executor is not None:
            out[name] = AccountDef(name, executor, env)
    return out


def check_caps(
    ck: Checker, value: Any, p: FieldPath, accounts: Mapping[str, AccountDef] | None = None
) -> Caps | None:
    """``max_running`` as a mapping (an integer is the lane-wide cap, read by the caller):
    ``{total: 20, codex: 3, account: {work: 4}, model: {gpt-5.5: 2}}``."""
    if not isinstance(value, dict):
        ck.wrong_type(p, value, "a positive integer, or a mapping such as {codex: 3}")
        return None
    allowed = ("total", *EXECUTOR_IDS, *CAP_SCOPES)
    raw = ck.mapping(value, p, allowed) or {}

    def count(v: Any, where: FieldPath) -> int | None:
        got = ck.number(v, where, integer=True, positive=True, limits=NUMBER_RANGES["max_running"])
        return None if got is None else int(got)

    executor = {
        ex: n for ex in EXECUTOR_IDS if ex in raw if (n := count(raw[ex], (*p, ex))) is not None
    }
    scoped: dict[str, dict[str, int]] = {"account": {}, "model": {}}
    for scope in CAP_SCOPES:
        if scope not in raw:
            continue
        if not isinstance(raw[scope], dict):
            ck.wrong_type((*p, scope), raw[scope], f"a mapping of {scope} name to a count")
            continue
        for name, v in raw[scope].items():
            where = (*p, scope, name)
            if scope == "account" and accounts is not None and name not in accounts:
                ck.error(
                    where,
                    f"unknown account {name!r}",
                    "one of lane.yaml's accounts: " + (", ".join(accounts) or "none"),
                    key=True,
                )
            elif (n := count(v, where)) is not None:
                scoped[scope][str(name)] = n
    total = count(raw["total"], (*p, "total")) if "total" in raw else None
    return Caps(total, executor, scoped["account"], scoped["model"])


def check_spend(ck: Checker, raw: Mapping[str, Any]) -> tuple[float | None, bool]:
    """``spend_limit_usd`` (and the lane's ``spend_limit: {hard: true}``)."""
    usd = None
    if "spend_limit_usd" in raw:
        got = ck.number(
            raw["spend_limit_usd"], ("spend_limit_usd",), positive=True, limits=(0, MAX_SPEND_USD)
        )
        usd = None if got is None else float(got)
    hard = False
    if "spend_limit" in raw:
        block = ck.mapping(raw["spend_limit"], ("spend_limit",), ("hard",)) or {}
        hard = bool(ck.boolean(block.get("hard", False), ("spend_limit", "hard")))
    return usd, hard


def check_governance(ck: Checker, raw: Mapping[str, Any], defaults: Any) -> Governance:
    """The lane's governance keys; ``defaults`` is ``defaults:`` as written (max_running)."""
    accounts = check_accounts(ck, raw.get("accounts"))
    caps = Caps()
    given = defaults.get("max_running") if isinstance(defaults, dict) else None
    if isinstance(given, dict):
        caps = check_caps(ck, given, ("defaults", "max_running"), accounts) or caps
    usd, hard = check_spend(ck, raw)
    return Governance(check_usage_limit(ck, raw.get("usage_limit")), accounts, caps, usd, hard)


def check_wave_governance(
    ck: Checker, raw: Mapping[str, Any], accounts: Mapping[str, AccountDef]
) -> tuple[Caps | None, float | None]:
    """A wave file's ``max_running`` (a number: its lane-wide cap) and ``spend_limit_usd``."""
    caps = None
    if "max_running" in raw:
        value, p = raw["max_running"], ("max_running",)
        if isinstance(value, int) and not isinstance(value, bool):
            got = ck.number(
                value, p, integer=True, positive=True, limits=NUMBER_RANGES["max_running"]
            )
            caps = None if got is None else Caps(total=int(got))
        else:
            caps = check_caps(ck, value, p, accounts)
    return caps, check_spend(ck, {k: v for k, v in raw.items() if k == "spend_limit_usd"})[0]


def check_webhook(ck: Checker, value: Any) -> tuple[str | None, str]:
    """``notify.webhook``: ``{url, format}``; an http(s) URL with a host, no spaces."""
    if value is None:
        return None, "json"
    p: FieldPath = ("notify", "webhook")
    raw = ck.mapping(value, p, ("url", "format")) or {}
    url = ck.string(raw.get("url"), (*p, "url")) if "url" in raw else None
    if "url" not in raw:
        ck.error(p, "names no url", "url: https://ntfy.sh/my-topic")
    elif url is not None:
        scheme, _, rest = url.partition("://")
        host = rest.split("/", 1)[0]
        if scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
            shown = redact_value(url)  # the error is printed: a password in it is not
            ck.error((*p, "url"), f"not an http(s) URL: {shown!r}", "https://host/path")
            url = None
    form = "json"
    if "format" in raw:
        form = (
            ck.string(raw["format"], (*p, "format"), choices=WEBHOOK_FORMATS, noun="format")
            or "json"
        )
    return url, form
