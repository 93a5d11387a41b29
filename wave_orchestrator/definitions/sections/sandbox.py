"""``sandbox`` of lane defaults, a wave or an agent: ``none``, ``bubblewrap``, ``auto``, or a
mapping with the mode, the network and the paths opened or closed beyond wave's own choice.

An agent's value is its wave's with its own keys on top, and a wave's is the lane defaults'
with its keys on top: a bare mode word changes the mode only, a list given replaces the
inherited list. Paths are checked here and resolved at launch (``sandbox/``): absolute,
``~`` or ``~/...`` (the person's real HOME), or relative to the repository root; never
empty, never with control characters, never ``..`` (a relative path could leave the
repository with it, and an absolute one has no need of it), never ``/`` itself (writable, it
is no sandbox; hidden, nothing runs; readable, it already is).
"""

from __future__ import annotations

import posixpath
import unicodedata
from typing import Any

from ..model import SANDBOX_MODES, SandboxSettings
from ..repository.paths import normalise_repo_path
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

SANDBOX_KEYS = ("mode", "network", "writable", "readable", "hidden")
PATH_LISTS = ("writable", "readable", "hidden")
EXPECTED = "none, bubblewrap, auto or a mapping {mode, network, writable, readable, hidden}"
# Control, format and line or paragraph separators: no path holds them.
HOSTILE = ("Cc", "Cf", "Zl", "Zp")
PATH_EXPECTED = "an absolute path, ~/path, or a path inside the repository"


def check_sandbox(
    ck: Checker, value: Any, inherited: SandboxSettings, where: FieldPath = ()
) -> SandboxSettings:
    """``sandbox`` (under ``where``: ``("defaults",)``, ``()`` or ``("agents", i)``) over
    ``inherited``; a value that does not check leaves the inherited one, its problem recorded."""
    path: FieldPath = (*where, "sandbox")
    if value is None:
        return inherited
    if isinstance(value, str):
        mode = ck.string(value, path, choices=SANDBOX_MODES, noun="sandbox mode")
        return inherited._replace(mode=mode) if mode else inherited
    if not isinstance(value, dict):
        ck.wrong_type(path, value, EXPECTED)
        return inherited
    raw = ck.mapping(value, path, SANDBOX_KEYS) or {}
    out = inherited
    if "mode" in raw:
        mode = ck.string(raw["mode"], (*path, "mode"), choices=SANDBOX_MODES, noun="sandbox mode")
        out = out._replace(mode=mode or out.mode)
    if "network" in raw:
        network = ck.boolean(raw["network"], (*path, "network"))
        out = out._replace(network=out.network if network is None else network)
    seen: dict[str, str] = {}  # a path -> the list that named it first
    lists = {
        key: got
        for key in PATH_LISTS
        if key in raw and (got := _paths(ck, raw[key], (*path, key), seen, key)) is not None
    }
    return out._replace(
        writable=lists.get("writable", out.writable),
        readable=lists.get("readable", out.readable),
        hidden=lists.get("hidden", out.hidden),
    )


def agent_sandbox(settings: SandboxSettings) -> SandboxSettings | None:
    """What an agent keeps: None when it runs unsandboxed, so that it digests as an agent of
    a lane that never named a sandbox (its reuse fingerprint is unchanged)."""
    return settings if settings.enabled else None


def _paths(
    ck: Checker, value: Any, path: FieldPath, seen: dict[str, str], key: str
) -> tuple[str, ...] | None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if item is None:  # `- ~` or an empty item: YAML's null, never a path
                ck.error((*path, i), "null is no path (a bare ~ is null in YAML)", "'~' quoted")
        if None in value:
            return None
    items = ck.string_list(value, path)
    if items is None:
        return None
    out: list[str] = []
    for i, item in enumerate(items):
        norm, problem = sandbox_path(item)
        if norm is None:
            ck.error((*path, i), f"invalid path {item!r}: {problem}", PATH_EXPECTED)
            continue
        if norm in seen:
            where = "this list" if seen[norm] == key else seen[norm]
            ck.error((*path, i), f"{norm!r} is named twice (also in {where})", "each path once")
            continue
        seen[norm] = key
        out.append(norm)
    return tuple(out) if len(out) == len(items) else None


def sandbox_path(text: str) -> tuple[str | None, str]:
    """(the path as kept, "") or (None, why not): ``/abs``, ``~``, ``~/rel`` or a
    repository-relative path, with no trailing slash."""
    if not text.strip():
        return None, "it is empty"
    if any(unicodedata.category(c) in HOSTILE for c in text):  # NUL among them
        return None, "it has control or format characters"
    parts = text.split("/")
    if ".." in parts:
        return None, "it has '..' (name the folder itself)"
    if text.startswith("~") and text != "~" and not text.startswith("~/"):
        return None, "only ~ and ~/... (your own home) are understood"
    if text.startswith(("/", "~")):
        head, rest = ("/", text[1:]) if text.startswith("/") else ("~/", text[2:])
        rest = posixpath.normpath("/" + rest).lstrip("/")
        if head == "/" and not rest:
            return None, "it is the whole file system"
        return (head + rest).rstrip("/") if rest else "~", ""
    if posixpath.normpath(text) == ".":
        return ".", ""
    norm = normalise_repo_path(text)
    if norm is None:
        return None, "it leads out of the repository"
    return norm.rstrip("/"), ""
