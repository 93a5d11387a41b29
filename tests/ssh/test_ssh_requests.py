"""A request line from a host's `wave` shim is hostile: only what the shim writes is read,
and only `wave coord` and `wave feedback` are run."""

from __future__ import annotations

import base64
from pathlib import Path

from wave_orchestrator.placement.ssh_requests import MAX_WORDS, Requests, parse
from wave_orchestrator.state.layout import StateLayout


def words(*items: str) -> bytes:
    coded = [base64.b64encode(i.encode()).decode() if i else "-" for i in items]
    return " ".join(["req", "17332", *coded]).encode()


def test_the_shims_line_is_read_word_for_word() -> None:
    assert parse(words("coord", "post", "--summary", "a b; $(rm -rf /)", "")) == (
        "17332",
        ["coord", "post", "--summary", "a b; $(rm -rf /)", ""],
    )


def test_anything_else_is_no_request() -> None:
    assert parse(b"req 12x " + base64.b64encode(b"coord")) is None  # an id of digits only
    assert parse(b"req \xb2 " + base64.b64encode(b"coord")) is None
    assert parse(b"run 1 " + base64.b64encode(b"coord")) is None
    assert parse(b"req 1 !!!") is None  # not base64
    assert parse(words(*(["x"] * (MAX_WORDS + 1)))) is None
    assert parse(b"req") is None


def test_only_coordination_commands_run(tmp_path: Path) -> None:
    requests = Requests(StateLayout(tmp_path / ".wave", "main"), tmp_path)
    try:
        code, out, err = requests._run(1, "A", ["launch", "--lane", "main"])
    finally:
        requests.close()
    assert code == 2 and out == b"" and "coord, feedback" in err
    assert not (tmp_path / ".wave").exists()  # nothing of the lane was touched
