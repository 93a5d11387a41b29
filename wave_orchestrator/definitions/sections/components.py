"""Component promotions: a wave's ``components: {id: target level}`` and the
agents that own them (``components: [id]`` on an agent). Each promoted component has exactly
one owner, an implementation agent; each owned one is promoted by the wave."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..model import AgentDef, is_closure_role
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

COMPONENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}")
LEVEL_RE = re.compile(r"[a-z][a-z0-9_-]{0,40}")


def check_components(ck: Checker, value: Any) -> dict[str, str]:
    """The wave's ``components``: component id -> the level this wave promotes it to."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        ck.wrong_type(("components",), value, "a mapping of component id to target level")
        return {}
    found: dict[str, str] = {}
    for key, level in value.items():
        path: FieldPath = ("components", key)
        if not isinstance(key, str) or not COMPONENT_RE.fullmatch(key):
            ck.error(path, f"invalid component id {key!r}", "an id like auth-api", key=True)
            continue
        got = ck.string(level, path, pattern=LEVEL_RE, what="a level", noun="level")
        if got is not None:
            found[key] = got
    return found


def check_owned_components(
    ck: Checker, value: Any, path: FieldPath, promoted: Mapping[str, str], role: str
) -> tuple[tuple[str, str], ...]:
    """An agent's ``components``: ids the wave promotes, with their target levels."""
    ids = ck.string_list(value, path) or []
    if ids and is_closure_role(role):
        ck.error(path, f"a {role} agent cannot own components", "an implementation agent")
        return ()
    owned = []
    for j, component in enumerate(ids):
        if component not in promoted:
            known = ", ".join(sorted(promoted)) or "(none: the wave has no components)"
            ck.error(
                (*path, j),
                f"component {component!r} is not promoted by this wave",
                f"one of the wave's components: {known}",
            )
        else:
            owned.append((component, promoted[component]))
    return tuple(owned)


def check_component_owners(
    ck: Checker, promoted: Mapping[str, str], loaded: Sequence[tuple[int, AgentDef]]
) -> None:
    """Each promoted component has exactly one owner."""
    owners: dict[str, list[str]] = {}
    for _, agent in loaded:
        for component, _level in agent.components:
            owners.setdefault(component, []).append(agent.id)
    for component in promoted:
        who = owners.get(component, [])
        if not who:
            ck.error(
                ("components", component),
                f"no agent owns component {component!r}",
                f"an agent with components: [{component}]",
            )
        elif len(who) > 1:
            ck.error(
                ("components", component),
                f"component {component!r} has several owners: {', '.join(who)}",
                "one owner per component",
            )
