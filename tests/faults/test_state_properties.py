"""Fault class 5, by property (issue 33 §4): every reader of a file under ``.wave/`` that an
agent can write is total. Hypothesis feeds each one objects made of its own field names and
hostile values (wrong types, huge and tiny numbers, NaN and Infinity as raw JSON text, deep
nesting, long strings, lone surrogates), torn and non-UTF-8 files and plain garbage: a reader
returns a checked value or ignores the file, and raises nothing but its own documented error.
The numbers it returns are within sane ranges, so no caller meets ``year 33658``."""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wave_orchestrator.cli import main
from wave_orchestrator.coordination.log import CoordLog, LogFollower
from wave_orchestrator.definitions.model import Governance
from wave_orchestrator.desk.claims import Desk, DeskBroken
from wave_orchestrator.governor.governor import Governor
from wave_orchestrator.runtime.wave.resume import read_leftover
from wave_orchestrator.runtime.wave.retry import RetryPlan
from wave_orchestrator.state.layout import AgentPaths
from wave_orchestrator.state.ledger import Ledger, read_ledger
from wave_orchestrator.state.run_state import WAVE_STATES, RunState
from wave_orchestrator.state.shown import governor_lines
from wave_orchestrator.state.status import StatusUnreadable, last_try_output, read_status
from wave_orchestrator.state.untrusted import (
    MAX_COUNT,
    clean_snapshot,
    read_backoff,
    read_governor,
    read_launch_record,
    read_snapshot,
)

TRANSITION = ("at", "from", "to", "reason")  # a run state's history item
# Modest counts, no deadline: the whole file runs in seconds, and a slow example is no bug.
FEW = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

DEEP = "[" * 100_000 + "]" * 100_000  # deeper than the parser's recursion
# Values as raw JSON text: what json.dumps never writes, and what breaks a careless reader.
SIMPLE = "NaN Infinity -Infinity 1e400 -1e400 1e-400 -0 1e12 2e11 1e11 99999999999 5e-324 "
SIMPLE += '9007199254740993 1.7976931348623157e308 -1 0 0.5 true false null [] {} ""'
RAW_VALUES = [
    *SIMPLE.split(),
    *map(str, (10**400, 2**63 - 1, 2**63, -(2**63), 2**64)),
    '"' + "x" * 100_000 + '"',
    DEEP,
    '{"a":' * 2000 + "1" + "}" * 2000,
    '"\\udc80"',  # a lone surrogate: bytes of a path that is not UTF-8
    '"\\u0000\\u001b[31m"',
    '"[/]"',
    '"9999-12-31T23:59:59.999Z"',
    '"0001-01-01T00:00:00+00:00"',
    '"2026-01-01T00:00:00.000Z"',
]
NUMBERS = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, 1, -1, 1e11, 1e12, 2**31, 2**62, 2**63 - 1, 1e-300, 5e-324])
)
LEAVES = st.none() | st.booleans() | NUMBERS | st.text(max_size=20)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def raw_value() -> st.SearchStrategy[str]:
    return st.sampled_from(RAW_VALUES) | VALUES.map(json.dumps)


PLAIN = st.recursive(  # parses whatever it holds: wrong types, not broken numbers
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
).map(json.dumps)


OFTEN = st.sampled_from([True] * 4 + [False])  # true four times in five


@st.composite
def json_object(
    draw: st.DrawFn, keys: list[str], good: dict[str, st.SearchStrategy[str]] | None = None
) -> str:
    """A JSON object's text: most of ``keys``, each well formed (from ``good``, as text) or of
    a wrong type, and up to two of them with a hostile value, so that every check is reached
    and not only the first; and a key no reader knows, now and then."""
    good = good or {}
    hostile = draw(st.lists(st.sampled_from(keys), max_size=2, unique=True))
    pairs = []
    for key in keys:
        if not draw(OFTEN) and key not in hostile:
            continue  # absent
        if key in hostile:
            pairs.append((key, draw(raw_value())))
        elif key in good and draw(OFTEN):
            pairs.append((key, draw(good[key])))
        else:
            pairs.append((key, draw(PLAIN)))
    pairs += draw(st.lists(st.tuples(st.text(max_size=8), PLAIN), max_size=1))
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in pairs) + "}"


def texts(*values: Any) -> st.SearchStrategy[str]:
    """Well-formed values, as JSON text."""
    return st.sampled_from([json.dumps(v) for v in values])


def file_bytes(text: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """The file: mostly the text whole; else torn at any byte, with bytes that are not UTF-8,
    a value that is no object, or garbage."""
    whole = text.map(str.encode)
    damaged = st.one_of(
        st.tuples(whole, st.integers(min_value=0)).map(lambda t: t[0][: t[1] % (len(t[0]) + 1)]),
        whole.map(lambda b: b[:1] + b"\xff\xfe\xc0" + b[1:]),
        raw_value().map(str.encode),
        st.binary(max_size=300),
    )
    return OFTEN.flatmap(lambda intact: whole if intact else damaged)


def sane_epoch(value: float | None) -> bool:
    """A time every datetime and clock function shows (years 1970 to 5000)."""
    return value is None or (math.isfinite(value) and 0 < value < 1e11)


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


STATUS_KEYS = [
    "code",
    "tries",
    "rate_limited",
    "started_at",
    "finished_at",
    "detail",
    "usage_limit",
    "outcome",
    "attempt",
    "limited_until",
    "stopped_by",
    "output_offset",
    "status",
]
STAMP = texts("2026-01-01T00:00:00.000Z", "2026-13-01T00:00:00.000Z")
NOW = time.time()
# Times: soon, in a century (within any parser's range), far beyond the year 9999, and any.
TIMES = texts(NOW + 60, NOW + 100 * 365 * 86400, 1e11, 2**40 - 1, 1e12, 253402300800, 1e-300) | (
    st.floats(min_value=1e-300, max_value=1e13).map(json.dumps)
)
STATUSES = json_object(
    STATUS_KEYS,
    {
        "code": texts(0, 1, 2, -1),
        "tries": texts(0, 3),
        "rate_limited": texts(0, 1),
        "started_at": STAMP,
        "finished_at": STAMP,
        "detail": texts("usage limit", ""),
        "usage_limit": texts(True, False),
        "outcome": texts("completed", "usage-limit", "failed"),
        "attempt": texts(1, 2, 3, 4),
        "limited_until": TIMES,
        "stopped_by": texts("launcher"),
        "output_offset": texts(0, 5, 10**15),
    },
)
LAUNCH_KEYS = ["attempt", "executor", "session", "launched_at", "fingerprint", "reused"]
LAUNCHES = json_object(
    LAUNCH_KEYS,
    {
        "attempt": texts(1, 2),
        "executor": texts("local", "codex", "nonesuch"),
        "session": texts("wave-main-1-A1"),
        "launched_at": TIMES,
        "fingerprint": texts("a" * 64),
        "reused": texts(True),
    },
)


@FEW
@given(data=file_bytes(STATUSES))
@example(
    data=b'{"code": 1, "usage_limit": true, "attempt": 1, "limited_until": 1e12}'
)  # the issue's
def test_status_reader_is_total_and_its_numbers_are_in_range(tmp_path: Path, data: bytes) -> None:
    paths = AgentPaths(tmp_path / "A1")
    write(paths.status, data)
    write(paths.output_log, b"line\n" * 3)
    try:
        status = read_status(paths.status)
    except StatusUnreadable:
        status = None
    if status is not None:
        assert -(2**31) <= status.code <= 2**31
        assert 0 <= status.tries <= MAX_COUNT and 0 <= status.rate_limited <= MAX_COUNT
        assert status.attempt is None or 1 <= status.attempt <= MAX_COUNT
        assert sane_epoch(status.limited_until)
        if status.limited_until is not None:
            datetime.fromtimestamp(status.limited_until, UTC)  # `wave status` shows it
        for text in (status.started_at, status.finished_at, status.detail):
            assert text is None or (isinstance(text, str) and len(text) <= 2000)
        assert status.state.value
    assert isinstance(last_try_output(paths), str)
    left = read_leftover(paths, current_attempt=3)
    assert 1 <= left.attempt <= 3 and sane_epoch(left.launched_at)


@FEW
@given(data=file_bytes(LAUNCHES))
def test_launch_record_reader_is_total(tmp_path: Path, data: bytes) -> None:
    record = read_launch_record(write(tmp_path / "launch.json", data))
    assert record.attempt is None or 1 <= record.attempt <= MAX_COUNT
    assert sane_epoch(record.launched_at)
    for text in (record.executor, record.session, record.fingerprint):
        assert text is None or len(text) <= 64
    assert record.reused in (True, False)


@FEW
@given(
    data=file_bytes(
        json_object(
            ["try", "tries", "delay_ms", "until_ms"],
            {"try": texts(1), "tries": texts(3), "delay_ms": texts(20_000), "until_ms": TIMES},
        )
    )
)
# A time so small it is zero once divided into seconds: no time, not the epoch.
@example(data=b'{"try": 1, "tries": 3, "delay_ms": 20000, "until_ms": 5e-324}')
def test_backoff_reader_is_total(tmp_path: Path, data: bytes) -> None:
    backoff = read_backoff(write(tmp_path / "backoff.json", data))
    if backoff is not None:
        assert 0 <= backoff.try_number <= MAX_COUNT
        assert backoff.tries is None or 0 <= backoff.tries <= MAX_COUNT
        assert backoff.delay_ms is None or 0 <= backoff.delay_ms <= 2**62
        assert sane_epoch(backoff.until)


def objects_in_rows(keys: list[str], good: dict[str, Any] | None = None) -> st.SearchStrategy[str]:
    """A JSON list's text of hostile objects: the rows of a snapshot or a governor file."""
    rows = st.lists(json_object(keys, good), max_size=4)
    return rows.map(lambda found: "[" + ",".join(found) + "]")


ISO = texts(
    "2026-01-01T00:00:00+00:00",
    "9999-12-31T23:59:59+00:00",
    "0001-01-01T00:00:00Z",
    "2026-01-01T00:00:00.000Z",
    "soon",
)
AGENT_KEYS = [
    "id",
    "role",
    "executor",
    "model",
    "state",
    "state_note",
    "attempt",
    "tries",
    "exit_code",
    "elapsed_ms",
    "last_line",
    "session",
    "detail",
    "deploy",
    "account",
    "limited_until",
]
AGENT_ROWS = objects_in_rows(
    AGENT_KEYS,
    {
        "id": texts("A1", "../A1"),
        "state": texts("limited", "running", "pending", "rate-limited"),
        "state_note": texts("queued (cap codex=1)"),
        "limited_until": ISO,
        "elapsed_ms": texts(5, 2**62),
        "exit_code": texts(0, 1),
    },
)
SNAPSHOT_KEYS = [
    "lane",
    "wave",
    "title",
    "status",
    "started_at",
    "updated_at",
    "attempt",
    "max_attempts",
    "attempt_reason",
    "launcher_pid",
    "stages",
    "gaps",
    "waiting_on",
    "agents",
    "events",
    "gate_failure",
    "coordination",
    "cluster_unreachable_since",
    "governor",
]
GOVERNOR_KEYS = [
    "spent_usd",
    "spend_limit_usd",
    "wave_spent_usd",
    "wave_spend_limit_usd",
    "costs_partial",
    "limited",
    "limited_until",
    "unpriced",
    "warned",
    "details",
]
DOLLARS = st.floats(min_value=0, max_value=1e12).map(json.dumps) | texts(1e9, 0.005)
GOVERNORS = json_object(
    GOVERNOR_KEYS,
    {
        "spent_usd": DOLLARS,
        "spend_limit_usd": DOLLARS,
        "wave_spent_usd": DOLLARS,
        "wave_spend_limit_usd": DOLLARS,
        "costs_partial": texts(True),
        "limited": objects_in_rows(
            ["account", "until", "detail"], {"account": texts("team", "c1"), "until": ISO}
        ),
        "limited_until": json_object(["team", "c1"], {"team": TIMES, "c1": TIMES}),
        "unpriced": texts(0, 3),
        "warned": texts(["lane"], ["wave"]),
        "details": json_object(["team", "c1"], {"team": texts("usage limit")}),
    },
)
SNAPSHOTS = json_object(
    SNAPSHOT_KEYS,
    {
        "wave": texts(1),
        "status": texts("running"),
        "agents": AGENT_ROWS,
        "events": objects_in_rows(
            ["at", "event", "wave", "agent", "status", "stage"],
            {"agent": texts("A1"), "wave": texts(1), "event": texts("x")},
        ),
        "governor": GOVERNORS,
        "cluster_unreachable_since": ISO,
        "coordination": json_object(["board", "blockers", "requests", "questions"]),
        "gate_failure": json_object(
            ["stage", "status", "detail", "action", "agent"], {"status": texts("failed")}
        ),
    },
)


def all_numbers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in all_numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in all_numbers(v)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


@FEW
@given(data=file_bytes(SNAPSHOTS))
def test_snapshot_reader_is_total(tmp_path: Path, data: bytes) -> None:
    frame = read_snapshot(write(tmp_path / "dashboard.json", data))
    if frame is not None:
        for key in ("agents", "events", "waiting_on", "stages"):
            assert isinstance(frame[key], list)
        assert all(isinstance(a, dict) and isinstance(a["id"], str) for a in frame["agents"])
        assert all(math.isfinite(n) and abs(n) <= 2**62 for n in all_numbers(frame))


@FEW
@given(value=VALUES)
def test_clean_snapshot_takes_any_value(value: Any) -> None:
    out = clean_snapshot(value)
    assert isinstance(out, dict)
    json.dumps(out, allow_nan=False)  # what `wave status --json` prints


WAVE_ENTRY = json_object(
    [
        "state",
        "attempts",
        "started_at",
        "finished_at",
        "reason",
        "attempt_reason",
        "waiting_for",
        "gate_failure",
        "plan",
        "rerun",
        "rejected_agents",
    ],
    {
        "state": texts(*WAVE_STATES),
        "attempts": texts(1, 2),
        "rerun": json_object(
            ["agents", "reason"], {"agents": texts(["A"], ["A", "../x"]), "reason": texts("why")}
        ),
        "plan": json_object(
            ["agents", "first_stage", "reason", "notes"],
            {"agents": texts(["A"]), "first_stage": texts(0, 1), "notes": texts({"A": "again"})},
        ),
        "rejected_agents": texts(["A"]),
    },
)
WAVES = st.lists(
    st.tuples(st.sampled_from(["1", "2", "01", "x", "-1", "9" * 12]), WAVE_ENTRY), max_size=3
).map(lambda pairs: "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}")
RUN_STATES = json_object(
    ["lane", "waves", "history"],
    {
        "waves": WAVES,
        "history": objects_in_rows(
            ["at", "wave", "from", "to", "reason"],
            {"at": ISO, "wave": texts(1), "from": texts("pending"), "to": texts("completed")},
        ),
    },
)


@FEW
@given(data=file_bytes(RUN_STATES))
def test_run_state_reader_is_total(tmp_path: Path, data: bytes) -> None:
    state = RunState(write(tmp_path / "run-state.json", data), "main")
    assert state.problem is None or isinstance(state.problem, str)
    wave: Any = SimpleNamespace(
        implementation_agents=(SimpleNamespace(id="A"),), closure_stages=lambda: [1, 2]
    )
    for key, entry in state.data["waves"].items():
        assert key.isdigit() and entry["state"] in WAVE_STATES
        assert 0 <= entry["attempts"] <= MAX_COUNT
        assert state.state_of(int(key)) in WAVE_STATES
        RetryPlan.restored(entry.get("plan"), wave)
    for item in state.data["history"]:  # `wave lanes` shows the last: every field is there
        assert 1 <= item["wave"] <= MAX_COUNT
        assert all(isinstance(item[k], str) and len(item[k]) <= 2000 for k in TRANSITION)


def record(kind: str, fields: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A ledger line of ``kind`` whose other fields are hostile."""
    return fields.map(
        lambda text: f'{{"v":1,"kind":"{kind}"' + (f",{text[1:-1]}" if text != "{}" else "") + "}"
    )


def lines_of(records: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """A JSON-lines file of such records, some of them torn or garbage."""
    lines = st.lists(file_bytes(records), max_size=4)
    return lines.map(lambda found: b"".join(x.replace(b"\n", b" ") + b"\n" for x in found))


def governor_from(tmp_path: Path, data: bytes, resume: bool, now: float) -> Governor:
    ledger = Ledger(write(tmp_path / "ledger.jsonl", data))
    ledger.view = read_ledger(ledger.path)
    return Governor(
        Governance(), tmp_path / "governor.json", resume=resume, now=lambda: now, ledger=ledger
    )


@FEW
@given(data=lines_of(record("governor", GOVERNORS)), resume=st.booleans())
def test_governor_load_is_total(tmp_path: Path, data: bytes, resume: bool) -> None:
    """The governor's saved decisions (the ledger's governor record; governor.json before
    it): it loads what it can check and nothing else. Tested here, owned by governor/."""
    now = 1_800_000_000.0
    gov = governor_from(tmp_path, data, resume, now)
    horizon = now + Governance().usage_limit.max_wait_minutes * 60 + 3600
    assert all(now < lim.until <= horizon for lim in gov.limited.values())
    assert math.isfinite(gov.spent) and gov.spent >= 0
    assert 0 <= gov.unpriced <= 2**63
    gov.view()


def test_governor_spend_loaded_is_within_a_sane_range(tmp_path: Path) -> None:
    data = b'{"v":1,"kind":"governor","spent_usd":1e300,"unpriced":9223372036854775807}\n'
    gov = governor_from(tmp_path, data, True, 1_800_000_000.0)
    assert gov.spent <= 1e9 and gov.unpriced <= MAX_COUNT


LEDGER_AGENTS = json_object(
    ["wave", "agent", "attempt", "fingerprint", "outcome", "at"],
    {"wave": texts(1), "agent": texts("A1"), "attempt": texts(1), "outcome": texts("completed")},
)
LEDGER_WAVES = json_object(["wave", "state"], {"wave": texts(1), "state": texts("completed")})


@FEW
@given(
    data=lines_of(
        record("agent", LEDGER_AGENTS)
        | record("wave", LEDGER_WAVES)
        | record("governor", GOVERNORS)
    )
)
@example(data=b'{"v":1,"kind":"agent","wave":1,"agent":"A1","attempt":1,"outcome":[]}\n')
def test_ledger_reader_is_total(tmp_path: Path, data: bytes) -> None:
    """The launcher's ledger, read as hostile (its folder is outside the repository, but an
    agent running as the person can still reach it)."""
    view = read_ledger(write(tmp_path / "ledger.jsonl", data))
    assert view is not None
    for (wave, agent), entry in view.agents.items():
        assert 1 <= wave <= 10_000 and agent == "A1" and 1 <= entry.attempt <= MAX_COUNT
        assert sane_epoch(entry.at or None)


@FEW
@given(data=file_bytes(GOVERNORS))
def test_governor_view_reader_is_total(tmp_path: Path, data: bytes) -> None:
    """governor.json as `wave status` and the dashboard read it."""
    view = read_governor(write(tmp_path / "governor.json", data))
    if view is not None:
        assert all(math.isfinite(n) and 0 <= n <= 1e9 for n in all_numbers(view))
        governor_lines(view)


COORD_KEYS = [
    "id",
    "kind",
    "wave",
    "agent",
    "summary",
    "status",
    "priority",
    "targets",
    "detail",
    "artifacts",
    "depends_on",
    "created_at",
    "updated_at",
    "source",
]
COORD_LINE = json_object(
    COORD_KEYS,
    {
        "id": st.sampled_from(['"c-0123456789abcdef"', '"c-01234567"', '"q-0123456789abcdef"']),
        "kind": st.sampled_from(['"request"', '"blocker"', '"nonesuch"']),
        "agent": st.sampled_from(['"A1"', '"human"', '"../x"']),
    },
)
COORD_LOGS = st.lists(file_bytes(COORD_LINE), max_size=8).map(
    lambda lines: b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines)
)


@FEW
@given(data=COORD_LOGS, torn=st.binary(max_size=40))
def test_coordination_log_readers_are_total(tmp_path: Path, data: bytes, torn: bytes) -> None:
    path = write(tmp_path / "coordination.jsonl", data)
    records = CoordLog(path, 1).records()
    follower = LogFollower(path, 1)
    follower.refresh()
    with path.open("ab") as fh:
        fh.write(torn.replace(b"\n", b" ") + b"\n" + data)
    follower.refresh()
    assert set(records) <= set(follower.records)
    for record in follower.records.values():
        assert len(record.summary) <= 300 and len(record.detail) <= 4000
        json.dumps(record.to_json())


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=2000) | st.just(b"SQLite format 3\x00" + b"\xff" * 2000))
def test_a_desk_file_that_is_no_database_is_desk_broken(tmp_path: Path, data: bytes) -> None:
    """desk.sqlite3 is the desk's one file an agent could replace: a broken one is a message."""
    db = write(tmp_path / "state" / "desk.sqlite3", data)
    try:
        desk = Desk(db, tmp_path, 1)
        desk.status()
        desk.claimed_paths()
    except DeskBroken:
        pass


def test_a_desk_with_rows_of_odd_types_is_read(tmp_path: Path) -> None:
    """SQLite keeps whatever type a writer gave a column: an agent's own rows are shown."""
    db = tmp_path / "state" / "desk.sqlite3"
    desk = Desk(db, tmp_path, 1)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO holders VALUES (1, x'ff00', 3.5, 1e308, 'x')")
        conn.execute("INSERT INTO queue VALUES (1, 7, x'00', 1e308, 'x', 1)")
    desk.status()
    desk.claimed_paths()


# -- `wave status` over every hostile file at once ---------------------------------------
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    status=file_bytes(STATUSES),
    launch=file_bytes(LAUNCHES),
    snapshot=SNAPSHOTS.map(str.encode),
    run_state=file_bytes(RUN_STATES),
    governor=file_bytes(GOVERNORS),
    as_json=st.booleans(),
)
def test_wave_status_never_raises(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    status: bytes,
    launch: bytes,
    snapshot: bytes,
    run_state: bytes,
    governor: bytes,
    as_json: bool,
) -> None:
    root = tmp_path_factory.mktemp("repo")
    (root / "lanes/main/waves").mkdir(parents=True)
    (root / "lanes/main/lane.yaml").write_text("closure: {required_roles: []}\n")
    (root / "lanes/main/waves/wave-1.yaml").write_text("agents:\n  - {id: A1, prompt: x}\n")
    state = root / ".wave/main"
    write(state / "run-state.json", b'{"waves": {"1": {"state": "running"}}}')
    write(state / "waves/wave-1/dashboard.json", snapshot)
    # a row for A1 the launcher left running: `wave status` reads its status file
    agents = json.dumps({"agents": [{"id": "A1", "state": "running", "session": "s"}]})
    if b'"agents"' not in snapshot:
        write(state / "waves/wave-1/dashboard.json", agents.encode())
    write(state / "waves/wave-1/agents/A1/status.json", status)
    write(state / "waves/wave-1/agents/A1/launch.json", launch)
    write(state / "governor.json", governor)
    code = main(["status", "--lane", "main", "--repo", str(root), *(["--json"] * as_json)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Traceback" not in out.err
    write(state / "run-state.json", run_state)
    assert main(["status", "--lane", "main", "--repo", str(root)]) == 0
    assert main(["lanes", "--repo", str(root)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "until", [1e12, 2**40 - 1, 1e11, 253402300800, 1e-300, 5e-324, 4102444800.5]
)
def test_wave_status_shows_any_limited_until_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], until: float
) -> None:
    """The issue's case: a status a dead launcher left, its reset far beyond any year."""
    root = tmp_path / "repo"
    (root / "lanes/main/waves").mkdir(parents=True)
    (root / "lanes/main/lane.yaml").write_text("closure: {required_roles: []}\n")
    (root / "lanes/main/waves/wave-1.yaml").write_text("agents:\n  - {id: A1, prompt: x}\n")
    state = root / ".wave/main"
    write(state / "run-state.json", b'{"waves": {"1": {"state": "running"}}}')
    row = {"agents": [{"id": "A1", "state": "limited", "session": "s"}]}
    write(state / "waves/wave-1/dashboard.json", json.dumps(row).encode())
    body = {"code": 1, "usage_limit": True, "attempt": 1, "limited_until": until}
    write(state / "waves/wave-1/agents/A1/status.json", json.dumps(body).encode())
    for flags in ([], ["--json"]):
        assert main(["status", "--lane", "main", "--repo", str(root), *flags]) == 0
        assert "A1" in capsys.readouterr().out


def _readers() -> list[Callable[[Path], Any]]:
    return [
        read_launch_record,
        read_backoff,
        read_snapshot,
        lambda p: RunState(p, "main"),
        lambda p: Governor(Governance(), p),
    ]


@pytest.mark.parametrize(
    "reader", _readers(), ids=["launch", "backoff", "snapshot", "run-state", "governor"]
)
def test_a_state_file_that_is_a_fifo_or_a_link_is_ignored(
    tmp_path: Path, reader: Callable[[Path], Any]
) -> None:
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    reader(fifo)  # returns at once: nothing waits for a writer
    link = tmp_path / "link.json"
    link.symlink_to("/dev/zero")
    reader(link)
