"""A request line from a host's `wave` shim is hostile: only what the shim writes is read,
and only `wave coord` and `wave feedback` are run."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from helpers import wait_for

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


def test_a_request_still_running_ends_with_the_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question waiting for a person must not keep a launch that has ended alive."""
    import threading

    from wave_orchestrator.placement import ssh_requests

    monkeypatch.setattr(ssh_requests, "wave_argv", lambda *words: ["sleep", "60"])
    requests = Requests(StateLayout(tmp_path / ".wave", "main"), tmp_path)
    said: list[tuple[int, bytes, str]] = []
    waiting = threading.Thread(target=lambda: said.append(requests._run(1, "A", ["feedback"])))
    waiting.start()
    wait_for(lambda: requests._running, 10, what="the request to run")
    requests.close()
    waiting.join(timeout=10)
    assert not waiting.is_alive() and said and said[0][0] != 0
    assert requests._run(1, "A", ["coord"])[0] == 1  # after the launch: nothing more runs
