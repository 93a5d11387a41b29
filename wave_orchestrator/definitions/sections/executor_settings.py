"""Executor settings in lane files: per-executor blocks, profiles, agent `executor` blocks,
and their merge (built-ins → lane `executors` → profile → the agent's own block)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..model import EMPTY, EXECUTOR_IDS, NUMBER_RANGES, AccountDef, ExecutorSpec
from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from .executor_options import (
    BUILTIN_SETTINGS,
    SETTING_KINDS,
    merge_settings,
    reasoning_problem,
)

COMMON_EXECUTOR_KEYS = (
    "model",
    "reasoning",
    "budget",
    "fallbacks",
    "env",
    "account",
    *EXECUTOR_IDS,
)
AGENT_EXECUTOR_KEYS = ("id", *COMMON_EXECUTOR_KEYS)
PROFILE_KEYS = ("executor", *COMMON_EXECUTOR_KEYS)


class SettingsLayer(dict[str, Any]):
    """One layer of executor settings (a profile or an agent's block), before merging."""


class LaneSettings(NamedTuple):
    """What an agent's executor resolution needs from its lane."""

    default_executor: str
    executors: Mapping[str, dict[str, Any]] = EMPTY
    profiles: Mapping[str, SettingsLayer] = EMPTY
    accounts: Mapping[str, AccountDef] = EMPTY


def check_settings_block(
    ck: Checker, value: Any, path: FieldPath, executor_id: str
) -> dict[str, Any] | None:
    kinds = SETTING_KINDS[executor_id]
    raw = ck.mapping(value, path, kinds)
    if raw is None:
        return None
    out: dict[str, Any] = {}
    for key, val in raw.items():
        kind = kinds.get(key)
        where = (*path, key)
        if kind is None:
            continue
        if kind == "list":
            got: Any = ck.string_list(val, where)
        elif kind == "bool":
            got = ck.boolean(val, where)
        elif kind == "str":
            got = ck.string(val, where)
        elif kind == "str?":
            got = None if val is None else ck.string(val, where)
        elif kind == "int?":
            got = (
                None
                if val is None
                else ck.number(
                    val, where, integer=True, positive=True, limits=NUMBER_RANGES.get(key)
                )
            )
        elif kind == "command":
            got = _check_local_command(ck, val, where)
        else:  # a tuple of choices
            got = (
                val
                if val is None and None in kind
                else ck.string(val, where, choices=[c for c in kind if c])
            )
        if got is not None or val is None:
            out[key] = got
        if (
            key == "reasoning"
            and isinstance(got, str)
            and (problem := reasoning_problem(executor_id, got))
        ):
            ck.error(where, problem)
    return out


def _check_local_command(ck: Checker, value: Any, path: FieldPath) -> Any:
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    if isinstance(value, list) and value:
        return ck.string_list(value, path)
    ck.error(path, "empty or invalid command", "an argv list or one command string")
    return None


def check_lane_executors(ck: Checker, value: Any) -> dict[str, dict[str, Any]]:
    raw = ck.mapping(value, ("executors",), EXECUTOR_IDS) or {}
    settings = copy.deepcopy(BUILTIN_SETTINGS)
    for ex, block in raw.items():
        if ex in EXECUTOR_IDS:
            got = check_settings_block(ck, block, ("executors", ex), ex)
            if got:
                settings[ex] = merge_settings(settings[ex], got)
    return settings


def check_layer(ck: Checker, raw: Mapping[str, Any], path: FieldPath, id_key: str) -> SettingsLayer:
    """Check an agent's `executor` block or a profile; both share every key but the id's."""
    layer = SettingsLayer()
    if id_key in raw:
        layer["id"] = ck.string(raw[id_key], (*path, id_key), choices=EXECUTOR_IDS, noun="executor")
    for key in ("model", "reasoning", "account"):
        if key in raw and raw[key] is not None:
            layer[key] = ck.string(raw[key], (*path, key))
    if "budget" in raw:
        budget = ck.mapping(raw["budget"], (*path, "budget"), ("minutes", "turns")) or {}
        if "minutes" in budget:
            layer["budget_minutes"] = ck.number(
                budget["minutes"],
                (*path, "budget", "minutes"),
                positive=True,
                limits=NUMBER_RANGES["budget_minutes"],
            )
        if "turns" in budget:
            layer["budget_turns"] = ck.number(
                budget["turns"],
                (*path, "budget", "turns"),
                integer=True,
                positive=True,
                limits=NUMBER_RANGES["budget_turns"],
            )
    if "fallbacks" in raw:
        layer["fallbacks"] = ck.string_list(
            raw["fallbacks"], (*path, "fallbacks"), choices=EXECUTOR_IDS, noun="executor"
        )
    if "env" in raw:
        layer["env"] = check_env(ck, raw["env"], (*path, "env"))
    layer["settings"] = {}
    for ex in EXECUTOR_IDS:
        if ex in raw:
            block = check_settings_block(ck, raw[ex], (*path, ex), ex)
            if block:
                layer["settings"][ex] = block
    return layer


def check_env(ck: Checker, value: Any, path: FieldPath) -> dict[str, str]:
    if not isinstance(value, dict):
        ck.wrong_type(path, value, "a mapping of NAME: value")
        return {}
    out: dict[str, str] = {}
    for key, val in value.items():
        if not key.replace("_", "a").isalnum() or not key.isascii() or key[0].isdigit():
            ck.error(
                (*path, key),
                f"invalid variable name {key!r}",
                "letters, digits and _",
                key=True,
            )
        elif isinstance(val, bool) or not isinstance(val, str | int | float):
            ck.wrong_type((*path, key), val, "a string")
        elif "\x00" in str(val):
            ck.error((*path, key), "value contains a NUL byte", "a string")
        else:
            out[key] = str(val)
    return out


def check_profiles(ck: Checker, value: Any, default_executor: str) -> dict[str, SettingsLayer]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        ck.wrong_type(("profiles",), value, "a mapping of profile name to settings")
        return {}
    out: dict[str, SettingsLayer] = {}
    for name, body in value.items():
        raw = ck.mapping(body, ("profiles", name), PROFILE_KEYS)
        if raw is not None:
            layer = out[name] = check_layer(ck, raw, ("profiles", name), "executor")
            level, executor = layer.get("reasoning"), layer.get("id") or default_executor
            if level and (problem := reasoning_problem(executor, level)):
                ck.error(("profiles", name, "reasoning"), problem)
    return out


def resolve_executor(
    ck: Checker, raw: Mapping[str, Any], p: FieldPath, lane: LaneSettings
) -> ExecutorSpec | None:
    """Merge built-ins → lane executors → profile → the agent's own block."""
    profile = SettingsLayer()
    unknown_profile = False
    if "profile" in raw:
        name = ck.string(raw["profile"], (*p, "profile"))
        if name is not None and name not in lane.profiles:
            ck.error(
                (*p, "profile"),
                f"unknown profile {name!r}",
                "one of: " + (", ".join(sorted(lane.profiles)) or "(no profiles in lane.yaml)"),
            )
            unknown_profile = True
        profile = lane.profiles.get(name or "", SettingsLayer())
    own = SettingsLayer()
    if "executor" in raw:
        block = ck.mapping(raw["executor"], (*p, "executor"), AGENT_EXECUTOR_KEYS)
        if block is None:
            return None
        own = check_layer(ck, block, (*p, "executor"), "id")
    if "account" in raw:  # the agent's own `account:`, above its executor block's
        own["account"] = ck.string(raw["account"], (*p, "account"))
    layers = (profile, own)

    def pick(key: str, default: Any = None) -> Any:
        return next((lay[key] for lay in reversed(layers) if lay.get(key) is not None), default)

    executor_id = pick("id", lane.default_executor)
    settings = _copy_settings(lane.executors)  # never share lists between agents
    env: dict[str, str] = {}
    for lay in layers:
        for ex, block in lay.get("settings", {}).items():
            settings[ex] = merge_settings(settings[ex], block)
        env.update(lay.get("env") or {})
    account = _account(ck, p, pick("account"), executor_id, lane.accounts)
    env.update(account.env if account else {})  # the account's login wins: it is the point
    spec = ExecutorSpec(
        id=executor_id,
        model=pick("model"),
        reasoning=pick("reasoning"),
        budget_minutes=pick("budget_minutes"),
        budget_turns=pick("budget_turns"),
        fallbacks=tuple(pick("fallbacks", [])),
        env=env,
        settings=settings,
        account=account.name if account else None,
    )
    _check_resolved_reasoning(ck, p, spec, profile, own, lane)
    # An id already reported unknown says enough: no second error about its settings.
    misspelt = any("id" in lay and lay["id"] is None for lay in layers)
    for ex in () if misspelt else (executor_id, *spec.fallbacks):
        given = "command" in (own.get("settings", {}).get("local") or {})
        if ex == "local" and not settings["local"].get("command") and not given:
            where = (
                (*p, "executor", "local", "command")
                if ex == executor_id
                else (*p, "executor", "fallbacks")
            )
            ck.error(
                where,
                "the local executor needs a command",
                "local: {command: [program, args...]} or a command string",
            )
    return None if unknown_profile else spec


def _account(
    ck: Checker,
    p: FieldPath,
    name: str | None,
    executor_id: str,
    accounts: Mapping[str, AccountDef],
) -> AccountDef | None:
    """The lane account an agent or its profile names, which must be one of its executor's."""
    if name is None:
        return None
    account = accounts.get(name)
    if account is None:
        ck.error(
            (*p, "account"),
            f"unknown account {name!r}",
            "one of lane.yaml's accounts: " + (", ".join(accounts) or "none"),
        )
    elif account.executor != executor_id:
        ck.error(
            (*p, "account"),
            f"account {name!r} is a {account.executor} login, and this agent runs on {executor_id}",
            f"an account of {executor_id}",
        )
        return None
    return account


def _copy_settings(executors: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A copy of settings whose values are scalars or lists of scalars: what deepcopy would
    give, at a tenth of its cost on a wave of thousands of agents."""
    return {
        ex: {k: list(v) if isinstance(v, list) else v for k, v in block.items()}
        for ex, block in executors.items()
    }


def _check_resolved_reasoning(
    ck: Checker,
    p: FieldPath,
    spec: ExecutorSpec,
    profile: SettingsLayer,
    own: SettingsLayer,
    lane: LaneSettings,
) -> None:
    """The agent's reasoning level against the executor it resolved to. Levels set in a profile
    or an executor block were checked where they are written; only a combination is new here."""
    if spec.reasoning is None:
        return
    if own.get("reasoning") is not None:
        where: FieldPath = (*p, "executor", "reasoning")
    elif (profile.get("id") or lane.default_executor) != spec.id:
        where = (*p, "executor", "id")
    else:
        return
    problem = reasoning_problem(spec.id, spec.reasoning)
    if problem:
        ck.error(where, problem)
