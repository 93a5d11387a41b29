"""The coordination log: one append-only JSON-lines file per wave, the source of truth.

A post appends one line with one ``write`` on an ``O_APPEND`` descriptor, so many agents posting
at once lose nothing and never interleave. Lines with the same id merge (later fields win): an
update is a new line, never a rewrite, and a launcher restart reads the same history.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..state.events import utc_now
from ..state.jsonl import read_jsonl, read_jsonl_from
from ..state.layout import Outboxes
from .channel import append_record, append_to_outbox, outbox_owner

KINDS = (
    "request",
    "ack",
    "claim",
    "evidence",
    "decision",
    "blocker",
    "handoff",
    "clarification-request",
    "human-feedback",
    "guidance",
    "gate-blocked",  # the launcher's: a closure or implementation gate failed, and what to do
)
STATUSES = ("open", "acknowledged", "in_progress", "resolved", "closed", "cancelled")
OPEN_STATUSES = ("open", "acknowledged", "in_progress")
PRIORITIES = ("low", "normal", "high", "urgent")
SOURCES = ("agent", "human", "launcher")
# One post is one line: bounded so that a runaway agent cannot grow the log without limit.
MAX_SUMMARY = 300
MAX_DETAIL = 4000
MAX_LIST = 50
PERSON = "human"
LAUNCHER = "launcher"  # who a `gate-blocked` item is from (source "launcher")
# Ids wave makes: `c-` (an item) or `q-` (a question to a person) and 8 or 16 hex digits (the
# older ids had 32 random bits, new ones 64). Nothing else is an id: a line with any other id
# is skipped on read, and `coord post --id` refuses it, so an id is safe to print and to paste.
RECORD_ID_RE = re.compile(r"^[cq]-[0-9a-f]{8}(?:[0-9a-f]{8})?$")


class CoordRecord(NamedTuple):  # a tuple: a launcher holds tens of thousands of them
    """One item of the log as it stands after every update to its id has been merged."""

    id: str
    kind: str
    wave: int
    agent: str
    summary: str
    status: str = "open"
    priority: str = "normal"
    targets: tuple[str, ...] = ()
    detail: str = ""
    artifacts: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    created_at: str = ""
    updated_at: str = ""
    source: str = "agent"

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def to_json(self) -> dict[str, Any]:
        data = self._asdict()
        for key in ("targets", "artifacts", "depends_on"):
            data[key] = list(data[key])
        return data


def new_id(prefix: str = "c") -> str:
    """64 random bits: agents post from many processes at once, and at 50 posts a second two
    32-bit ids would meet within hours (a reused id would merge two posts)."""
    import secrets  # hashlib and hmac behind it: only for a command that writes a record

    return f"{prefix}-" + secrets.token_hex(8)


def check_id(record_id: str) -> str:
    if not RECORD_ID_RE.fullmatch(record_id):
        raise UsageError(
            f"invalid item id {record_id!r}: ids look like c-1a2b3c4d5e6f7a8b (`wave coord show`)"
        )
    return record_id


def is_poster(name: Any) -> bool:
    """An agent id or the person: what an item's `agent` (or a target) may be."""
    return isinstance(name, str) and (name == PERSON or bool(AGENT_ID_RE.fullmatch(name)))


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise UsageError(f"invalid {name} {value!r}: choose one of {', '.join(allowed)}")
    return value


def _text(name: str, value: str, limit: int) -> str:
    if len(value) > limit:
        raise UsageError(f"{name} is {len(value)} characters; the limit is {limit}")
    return value


def _ids(name: str, values: Iterable[str]) -> tuple[str, ...]:
    out = tuple(values)
    if len(out) > MAX_LIST:
        raise UsageError(f"at most {MAX_LIST} {name} per post")
    return out


def normalize_target(target: str) -> str:
    """``agent:ID`` or ``ID`` (or ``human``) to the bare id, refusing anything else."""
    bare = target.removeprefix("agent:")
    if bare != PERSON and not AGENT_ID_RE.fullmatch(bare):
        raise UsageError(f"invalid target {target!r}: use agent:ID or ID (letters, digits, _ -)")
    return bare


def check_post(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a post from the command line; raises UsageError naming the valid set."""
    out = dict(values)
    if "kind" in out:
        _choice("kind", out["kind"], KINDS)
    if "status" in out:
        _choice("status", out["status"], STATUSES)
    if "priority" in out:
        _choice("priority", out["priority"], PRIORITIES)
    if "summary" in out:
        out["summary"] = _text("summary", out["summary"].strip(), MAX_SUMMARY)
        if not out["summary"]:
            raise UsageError("summary is empty: say in one line what this is about")
    if "detail" in out:
        out["detail"] = _text("detail", out["detail"], MAX_DETAIL)
    if "targets" in out:
        out["targets"] = [normalize_target(t) for t in _ids("targets", out["targets"])]
    if "depends_on" in out:
        out["depends_on"] = [check_id(i) for i in _ids("depends_on", out["depends_on"])]
    if "artifacts" in out:
        paths = _ids("artifacts", out["artifacts"])
        out["artifacts"] = [_text("an artifact path", a, 512) for a in paths]
    return out


def _parse_line(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields of one stored line that are well formed; None when it has no usable id."""
    rid = line.get("id")
    if not isinstance(rid, str) or not RECORD_ID_RE.fullmatch(rid):
        return None
    out: dict[str, Any] = {"id": rid}
    for key, allowed in (
        ("kind", KINDS),
        ("status", STATUSES),
        ("priority", PRIORITIES),
        ("source", SOURCES),
    ):
        value = line.get(key)
        if isinstance(value, str) and value in allowed:
            out[key] = allowed[allowed.index(value)]  # the constant: one string, not 20,000
    for key, limit in (("summary", MAX_SUMMARY), ("detail", MAX_DETAIL)):
        value = line.get(key)
        if isinstance(value, str):
            out[key] = value[:limit]
    if is_poster(line.get("agent")):
        out["agent"] = sys.intern(line["agent"])  # a few dozen names across the whole log
    for key in ("created_at", "updated_at"):
        value = line.get(key)
        if isinstance(value, str) and len(value) <= 40:
            out[key] = value
    wave = line.get("wave")
    if isinstance(wave, int) and not isinstance(wave, bool) and 0 < wave < 1_000_000:
        out["wave"] = wave
    keep: dict[str, Callable[[str], bool]] = {
        "targets": is_poster,
        "depends_on": lambda v: bool(RECORD_ID_RE.fullmatch(v)),
        "artifacts": lambda v: 0 < len(v) <= 512,
    }
    for key, fits in keep.items():
        value = line.get(key)
        if isinstance(value, list):
            kept = (v for v in value[:MAX_LIST] if isinstance(v, str) and fits(v))
            out[key] = tuple(map(sys.intern, kept)) if key == "targets" else tuple(kept)
    return out


class CoordLog:
    """One wave's log file: append a post, read the merged items.

    In an agent's sandbox (``channel.outbox_owner``) posts and updates go to the agent's own
    outbox instead, always as that agent, and reach the log when the launcher merges them;
    ``direct`` writes the log itself whatever the environment (the launcher's own writes)."""

    def __init__(self, path: Path, wave: int, *, direct: bool = False) -> None:
        self.path = path
        self.wave = wave
        self.owner = None if direct else outbox_owner()
        self.outbox = Outboxes.of_log(path).coordination(self.owner) if self.owner else None

    def post(
        self,
        *,
        kind: str,
        summary: str,
        agent: str,
        source: str = "agent",
        record_id: str | None = None,
        **fields: Any,
    ) -> str:
        """Append a new item (or, with ``record_id`` of an existing one, an update); its id."""
        values = check_post({"kind": kind, "summary": summary, **fields})
        if self.owner:
            agent, source = self.owner, "agent"  # what the launcher will record it as
        if not is_poster(agent):
            raise UsageError(f"invalid agent id {agent!r}")
        now = utc_now()
        line = {
            "id": check_id(record_id) if record_id else new_id(),
            "wave": self.wave,
            "agent": agent,
            "source": _choice("source", source, SOURCES),
            "created_at": now,
            "updated_at": now,
            "status": "open",
            "priority": "normal",
            **values,
        }
        self._append(line)
        return str(line["id"])

    def update(self, record_id: str, **fields: Any) -> CoordRecord:
        """Append fields for an existing id (e.g. ``status=resolved``); refuses unknown ids."""
        current = self.find(record_id)
        if current is None:
            raise UsageError(f"no coordination item {record_id!r} in wave {self.wave}")
        values = check_post(fields)
        self._append({"id": record_id, "updated_at": utc_now(), **values})
        merged = {**current.to_json(), **values}
        return _record(merged, self.wave) or current

    def _append(self, line: Mapping[str, Any]) -> None:
        if self.outbox is not None:
            append_to_outbox(self.outbox, line)
        else:
            append_record(self.path, line)

    def records(self) -> dict[str, CoordRecord]:
        """Every item, merged by id, in order of first appearance."""
        return _records(read_jsonl(self.path), self.wave)

    def find(self, record_id: str) -> CoordRecord | None:
        """An item of the log, or in a sandbox one of the agent's own not merged yet (as its
        outbox has it: the launcher merges it within a second or so)."""
        found = self.records().get(record_id)
        if found is None and self.outbox is not None:
            found = _records(read_jsonl(self.outbox), self.wave).get(record_id)
        return found


def _records(lines: Iterable[Mapping[str, Any]], wave: int) -> dict[str, CoordRecord]:
    merged: dict[str, dict[str, Any]] = {}
    for raw in lines:
        merge_line(merged, raw)
    out: dict[str, CoordRecord] = {}
    for rid, values in merged.items():
        record = _record(values, wave)
        if record is not None:
            out[rid] = record
    return out


def merge_line(merged: dict[str, dict[str, Any]], raw: Mapping[str, Any]) -> str | None:
    """Fold one stored line into ``merged`` (id -> fields so far); the id it changed, or
    None when the line was skipped: malformed, or a second post under an id already posted
    (a reused id: two agents' posts must not merge into one)."""
    line = _parse_line(raw)
    if line is None:
        return None
    base = merged.get(line["id"])
    if base is None:
        merged[line["id"]] = line
        return str(line["id"])
    created = base.get("created_at")
    if created and "kind" in line and line.get("created_at") not in (None, created):
        return None  # a new post, not an update: the id is taken
    base.update(line)
    if created:
        base["created_at"] = created
    return str(line["id"])


def _record(values: Mapping[str, Any], wave: int) -> CoordRecord | None:
    """A record once its required fields are known; a line that only updates is not one."""
    if not all(isinstance(values.get(k), str) for k in ("kind", "summary", "agent")):
        return None

    def text(key: str, default: str) -> str:
        value = values.get(key, default)
        return value if isinstance(value, str) else default

    def ids(key: str) -> tuple[str, ...]:
        value = values.get(key, ())
        return (
            tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()
        )

    number = values.get("wave", wave)
    return CoordRecord(
        id=str(values["id"]),
        kind=values["kind"],
        wave=number if isinstance(number, int) else wave,
        agent=values["agent"],
        summary=values["summary"],
        status=text("status", "open"),
        priority=text("priority", "normal"),
        targets=ids("targets"),
        detail=text("detail", ""),
        artifacts=ids("artifacts"),
        depends_on=ids("depends_on"),
        created_at=text("created_at", ""),
        updated_at=text("updated_at", ""),
        source=text("source", "agent"),
    )


class LogFollower:
    """One wave's log, read as it grows: each ``refresh`` reads only the lines appended since
    the last one (from the offset it reached), so a launcher following a log of 20,000 items
    pays for what changed, not for the whole history. A log that was replaced or shortened
    is read again from the start."""

    def __init__(self, path: Path, wave: int, on_skip: Callable[[int], None] | None = None):
        self.path = path
        self.wave = wave
        self.on_skip = on_skip
        self.records: dict[str, CoordRecord] = {}
        self._merged: dict[str, dict[str, Any]] = {}
        self._offset = 0
        self._inode: int | None = None

    def refresh(self) -> set[str] | None:
        """Read what was appended; the ids that changed (None: everything was read anew)."""
        try:
            st = self.path.stat()
        except OSError:
            st = None
        anew = st is None or st.st_ino != self._inode or st.st_size < self._offset
        if anew:
            self.records, self._merged, self._offset = {}, {}, 0
            self._inode = st.st_ino if st is not None else None
        changed: set[str] = set()
        for raw, offset in read_jsonl_from(self.path, self._offset, self.on_skip):
            self._offset = offset
            rid = raw.get("id") if raw is not None else None
            if isinstance(rid, str) and rid in self.records and rid not in self._merged:
                self._merged[rid] = self.records[rid].to_json()  # an update: merge onto it
            if raw is None or (rid := merge_line(self._merged, raw)) is None:
                continue
            changed.add(rid)
            record = _record(self._merged[rid], self.wave)
            if record is not None:  # held once, as a record; fields only until it is one
                self.records[rid] = record
                del self._merged[rid]
        return None if anew else changed
