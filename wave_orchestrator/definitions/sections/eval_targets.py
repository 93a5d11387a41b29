"""``eval_targets`` of a wave and the lane's ``benchmarks`` catalog: what the
cont-EVAL gate holds an evaluator to. Checked where they are written, with file, line and
field, like every other key."""

from __future__ import annotations

import re
from typing import Any

from ..model import EvalTarget
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

EVAL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}")  # one word of a marker's id list
TARGET_KEYS = ("id", "benchmarks")


def check_catalog(ck: Checker, value: Any) -> tuple[str, ...]:
    """lane.yaml ``benchmarks``: the benchmark ids a cont-EVAL may report (none: any)."""
    ids = _ids(ck, value, ("benchmarks",), "benchmark")
    return tuple(ids)


def check_eval_targets(
    ck: Checker, value: Any, catalog: tuple[str, ...], has_evaluator: bool
) -> tuple[EvalTarget, ...]:
    """A wave's ``eval_targets``: ids, each optionally pinned to benchmarks of the catalog."""
    path: FieldPath = ("eval_targets",)
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        ck.error(path, "must list at least one target", "a list of target ids or {id, benchmarks}")
        return ()
    targets: list[EvalTarget] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        where: FieldPath = (*path, i)
        raw = {"id": item} if isinstance(item, str) else ck.mapping(item, where, TARGET_KEYS)
        if raw is None:
            continue
        target = _id(ck, raw.get("id"), (*where, "id") if isinstance(item, dict) else where)
        pins = _ids(ck, raw.get("benchmarks"), (*where, "benchmarks"), "benchmark")
        for j, pin in enumerate(pins):
            if catalog and pin not in catalog:
                ck.error(
                    (*where, "benchmarks", j),
                    f"benchmark {pin!r} is not in the lane's benchmarks catalog",
                    "one of: " + ", ".join(catalog),
                )
        if target is None:
            continue
        if target in seen:
            ck.error(where, f"target {target!r} is listed twice", "each target once")
        seen.add(target)
        targets.append(EvalTarget(target, tuple(pins)))
    if targets and not has_evaluator:
        ck.error(
            path,
            "no agent of the wave has role cont-eval to judge these targets",
            "a cont-eval agent, or no eval_targets",
        )
    return tuple(targets)


def _id(ck: Checker, value: Any, path: FieldPath) -> str | None:
    return ck.string(value, path, pattern=EVAL_ID_RE, what="an id", noun="id")


def _ids(ck: Checker, value: Any, path: FieldPath, noun: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        ck.wrong_type(path, value, f"a list of {noun} ids")
        return []
    found: list[str] = []
    for i, item in enumerate(value):
        got = _id(ck, item, (*path, i))
        if got is not None and got in found:
            ck.error((*path, i), f"{noun} {got!r} is listed twice", f"each {noun} once")
        elif got is not None:
            found.append(got)
    return found
