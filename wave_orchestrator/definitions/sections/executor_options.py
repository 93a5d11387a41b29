"""What each executor accepts in a lane file (agent-clis.md): the kind of every
setting, the built-in values, the reasoning levels, and how layers merge.

It lives with the definitions, not with the argv builders, because validating a lane needs it and
the definitions sit below the agents layer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

CODEX_SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
CLAUDE_PERMISSION_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")
CLAUDE_OUTPUT_FORMATS = ("text", "json", "stream-json")
OPENCODE_FORMATS = ("default", "json")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
OPENCODE_VARIANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")

# Kinds: "str", "str?" (string or null), "bool", "list" (of strings), "int?", a tuple of choices,
# "command" (argv list, one bash string, or null; local only).
SETTING_KINDS: dict[str, dict[str, Any]] = {
    "codex": {
        "command": "str",
        "model": "str?",
        "reasoning": "str?",
        "sandbox": CODEX_SANDBOXES,
        "config": "list",
        "add_dirs": "list",
        "images": "list",
        "json": "bool",
        "search": "bool",
        "profile": "str?",
        "ephemeral": "bool",
    },
    "claude": {
        "command": "str",
        "model": "str?",
        "reasoning": "str?",
        "permission_mode": (*CLAUDE_PERMISSION_MODES, None),
        "allowed_tools": "list",
        "disallowed_tools": "list",
        "max_turns": "int?",
        "settings": "str?",
        "output_format": CLAUDE_OUTPUT_FORMATS,
        "append_system_prompt_file": "str?",
    },
    "opencode": {
        "command": "str",
        "model": "str?",
        "reasoning": "str?",
        "agent": "str?",
        "files": "list",
        "format": OPENCODE_FORMATS,
        "auto": "bool",
    },
    "local": {"command": "command", "model": "str?"},
}

BUILTIN_SETTINGS: dict[str, dict[str, Any]] = {
    "codex": {
        "command": "codex",
        "model": None,
        "reasoning": None,
        "sandbox": "workspace-write",
        "config": [],
        "add_dirs": [],
        "images": [],
        "json": False,
        "search": False,
        "profile": None,
        "ephemeral": False,
    },
    "claude": {
        "command": "claude",
        "model": None,
        "reasoning": None,
        "permission_mode": None,
        "allowed_tools": [],
        "disallowed_tools": [],
        "max_turns": None,
        "settings": None,
        "output_format": "text",
        "append_system_prompt_file": None,
    },
    "opencode": {
        "command": "opencode",
        "model": None,
        "reasoning": None,
        "agent": None,
        "files": [],
        "format": "default",
        "auto": False,
    },
    "local": {"command": None, "model": None},
}


def reasoning_problem(executor_id: str, level: str) -> str | None:
    """Why ``level`` is not a reasoning level ``executor_id`` accepts, or None when it is.

    codex sends any value to the API unchecked and claude only warns, so we check here.
    """
    if executor_id in ("codex", "claude"):
        if level not in EFFORT_LEVELS:
            levels = ", ".join(EFFORT_LEVELS)
            return (
                f"reasoning level {level!r} is not supported by {executor_id} "
                f"(expected one of: {levels})"
            )
        return None
    if executor_id == "opencode":
        if not OPENCODE_VARIANT_RE.fullmatch(level):
            return (
                f"reasoning level {level!r} is not a valid opencode variant "
                "(expected a word such as high, max, minimal)"
            )
        return None
    return f"the {executor_id} executor takes no reasoning level (expected no reasoning)"


def merge_settings(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Later wins for scalars; lists are concatenated without duplicates."""
    merged = dict(base)
    for key, value in overlay.items():
        old = merged.get(key)
        if isinstance(old, list) and isinstance(value, list) and key != "command":
            merged[key] = old + [v for v in value if v not in old]
        else:
            merged[key] = value
    return merged
