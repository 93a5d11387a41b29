"""The one schema of ``dashboard.json``: what the launcher may write (``runtime.snapshot``
refuses a key it does not list) and what every reader keeps (``untrusted.clean_snapshot``
checks each field against it). A view can no longer drop a field the writer added: both sides
read this table.

A field is a ``Text``, a ``Count``, an ``Amount``, a ``Flag``, a list of texts (``Texts``), a
list of objects (``Rows``) or an object (``Obj``); any field may be null. What does not fit
becomes null (a row without the key its ``Rows`` requires is dropped), never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..names import AGENT_ID_RE

TEXT_LIMIT = 2000
MAX_COUNT = 1_000_000

# The field kinds are NamedTuples, not dataclasses: `wave status` and `wave lanes` read this
# table without loading `dataclasses` (with `inspect` behind it: ~10 ms of their start-up).


class Text(NamedTuple):
    limit: int = TEXT_LIMIT


class Count(NamedTuple):
    minimum: int = 0
    maximum: int = MAX_COUNT


class Amount(NamedTuple):
    """A finite number from 0 up (dollars)."""

    maximum: float = 1e9


class Flag(NamedTuple):
    """true or false."""


class Texts(NamedTuple):
    limit: int = 200  # each item
    items: int = 1000


class Obj(NamedTuple):
    fields: Mapping[str, Any]


def _keep_every_row(row: dict[str, Any]) -> bool:
    return True


class Rows(NamedTuple):
    fields: Mapping[str, Any]
    items: int = 10_000
    keep: Callable[[dict[str, Any]], bool] = _keep_every_row


def _agent_id(row: dict[str, Any]) -> bool:
    return isinstance(row.get("id"), str) and bool(AGENT_ID_RE.fullmatch(row["id"]))


# What an agent does and has done, from its CLI's event stream (null for a text-mode agent).
STREAM = {
    "activity": Text(16),  # thinking | tool | writing | idle | "" (not said yet)
    "tool": Text(64),  # the tool's name while activity is "tool"
    "turns": Count(),
    "tool_calls": Count(),
    "input_tokens": Count(maximum=10**15),
    "output_tokens": Count(maximum=10**15),
    "cost_usd": Amount(),
    "last_line": Text(200),  # the last line of text it wrote, cleaned
    "conversation": Text(128),
    "events": Count(maximum=2**62),
}
AGENT_ROW = {
    "id": Text(32),
    "role": Text(64),
    "executor": Text(64),
    "model": Text(200),
    "state": Text(64),
    "state_note": Text(200),
    "attempt": Count(),
    "tries": Count(),
    "exit_code": Count(minimum=-(2**31), maximum=2**31),
    "elapsed_ms": Count(maximum=2**62),
    "last_line": Text(),
    "session": Text(64),
    "detail": Text(),
    "deploy": Text(200),  # the agent's last [deploy-status]: `api healthy`
    "account": Text(200),  # what its usage counts against (governor.accounts)
    "sandbox": Text(64),  # none | bubblewrap | bubblewrap, no network
    "limited_until": Text(40),  # parked on a usage limit until then (ISO time)
    "conversation": Text(128),  # its CLI's conversation id, which its next try continues
    "continues": Flag(),  # this try continues the conversation of the one before
    "stream": Obj(STREAM),
}
# The fleet governor: spend against the limits, and accounts that wait for a usage limit's reset.
GOVERNOR = {
    "spent_usd": Amount(),
    "spend_limit_usd": Amount(),
    "wave_spent_usd": Amount(),
    "wave_spend_limit_usd": Amount(),
    "costs_partial": Flag(),
    "limited": Rows({"account": Text(200), "until": Text(40), "detail": Text(200)}, items=50),
}
EVENT = {
    "at": Text(40),
    "event": Text(64),
    "wave": Count(),
    "agent": Text(64),
    "status": Text(64),
    "stage": Text(64),
}
# The last failed gate: what `wave status` and the dashboard show with its action line (kept in
# run-state.json too, once the wave ended).
GATE_FIELDS = ("stage", "status", "detail", "action", "agent", "report", "log")
GATE_FAILURE = {k: Text() for k in GATE_FIELDS}
BRIEF = {
    "id": Text(64),
    "kind": Text(32),
    "agent": Text(64),
    "priority": Text(16),
    "summary": Text(300),
}
QUESTION = {"id": Text(64), "agent": Text(64), "question": Text(300), "created_at": Text(40)}
COORDINATION = {
    "board": Text(4096),
    "blockers": Rows(BRIEF, items=10),
    "requests": Rows(BRIEF, items=10),
    "questions": Rows(QUESTION, items=10),
}
SNAPSHOT: dict[str, Any] = {
    "lane": Text(64),
    "wave": Count(),
    "title": Text(),
    "status": Text(32),
    "started_at": Text(40),
    "updated_at": Text(40),
    "attempt": Count(),
    "max_attempts": Count(),
    "attempt_reason": Text(),
    "launcher_pid": Count(maximum=2**31),
    "stages": Rows({"stage": Text(64), "state": Text(64)}, items=32),
    # [wave-gap] lines the wave's finished agents printed
    "gaps": Rows({"agent": Text(64), "kind": Text(64), "detail": Text(300)}, items=50),
    "waiting_on": Texts(),
    "agents": Rows(AGENT_ROW, keep=_agent_id),
    "events": Rows(EVENT, items=200),
    "gate_failure": Obj(GATE_FAILURE),
    "coordination": Obj(COORDINATION),
    "cluster_unreachable_since": Text(40),  # the scheduler's controller stopped answering
    "governor": Obj(GOVERNOR),
}


def check(spec: Any, value: Any) -> Any:
    """``value`` as ``spec`` allows it, else None (lists and objects: what of them fits)."""
    if isinstance(spec, Text):
        return value[: spec.limit] if isinstance(value, str) else None
    if isinstance(spec, Count):
        fits = isinstance(value, int) and not isinstance(value, bool)
        return value if fits and spec.minimum <= value <= spec.maximum else None
    if isinstance(spec, Amount):
        fits = isinstance(value, int | float) and not isinstance(value, bool)
        return value if fits and 0 <= value <= spec.maximum else None
    if isinstance(spec, Flag):
        return value if isinstance(value, bool) else None
    if isinstance(spec, Texts):
        items = value[: spec.items] if isinstance(value, list) else []
        return [v[: spec.limit] for v in items if isinstance(v, str)]
    if isinstance(spec, Obj):
        return check_fields(spec.fields, value) if isinstance(value, dict) else None
    if isinstance(spec, Rows):
        items = value[: spec.items] if isinstance(value, list) else []
        rows = (check_fields(spec.fields, v) for v in items if isinstance(v, dict))
        return [r for r in rows if spec.keep(r)]
    raise TypeError(f"not a field spec: {spec!r}")


def check_fields(fields: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields ``data`` has, each checked; keys the schema does not list are left out."""
    return {k: check(spec, data[k]) for k, spec in fields.items() if k in data}


def unknown_keys(data: Mapping[str, Any], fields: Mapping[str, Any] = SNAPSHOT) -> list[str]:
    """Keys a writer is about to write that no reader would keep (a programming error)."""
    return sorted(k for k in data if k not in fields)
