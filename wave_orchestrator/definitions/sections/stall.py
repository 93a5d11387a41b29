"""lane.yaml's ``stall:``: what the launcher does, step by step, with an agent that has gone
silent before its budget or ``defaults.stall_minutes`` ends it. Off until set."""

from __future__ import annotations

from typing import Any

from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from ..stall_policy import StallPolicy

STALL_KEYS = ("nudge_minutes", "ask_minutes")
MOST_MINUTES = 43_200  # 30 days: as the budgets


def check_stall(ck: Checker, value: Any) -> StallPolicy:
    p: FieldPath = ("stall",)
    raw = ck.mapping(value, p, STALL_KEYS) or {}
    minutes = {}
    for key in STALL_KEYS:
        if key in raw:
            got = ck.number(raw[key], (*p, key), limits=(0, MOST_MINUTES))
            if got is not None:
                minutes[key] = float(got)
    return StallPolicy(**minutes)
