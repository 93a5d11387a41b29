"""The log pane's reader: the end of a log, then what is appended, bounded; hostile files."""

from __future__ import annotations

import os
from pathlib import Path

from wave_orchestrator.dashboard.follow import CHUNK_BYTES, TAIL_BYTES, LogFollower


def test_the_tail_from_a_line_start_then_whole_lines_as_they_come(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"".join(b"old line %06d\n" % i for i in range(20_000)))
    follower = LogFollower(log)
    first = follower.read().split("\n")
    assert first[0].startswith("old line ") and first[-1] == "old line 019999"
    assert len("\n".join(first)) <= TAIL_BYTES
    with log.open("ab") as fh:
        fh.write(b"half a li")
    assert follower.read() == ""  # held until its end comes
    with log.open("ab") as fh:
        fh.write(b"ne\r\n\x1b[2J\x1b]52;c;ZXZpbA==\x07\xe2\x9c\x93 done\n")
    assert follower.read() == "half a line\n✓ done"


def test_a_huge_append_is_read_a_bounded_chunk_at_a_time(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"")
    follower = LogFollower(log)
    assert follower.read() == ""
    with log.open("ab") as fh:
        fh.write(b"x" * (3 * CHUNK_BYTES) + b"\n")
    parts = [follower.read() for _ in range(4)]
    assert all(len(p) <= CHUNK_BYTES for p in parts)
    assert sum(len(p) for p in parts) == 3 * CHUNK_BYTES


def test_a_link_a_fifo_or_no_file_shows_nothing_and_never_blocks(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not for the pane\n")
    link = tmp_path / "link.log"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path / "absent.log"):
        assert LogFollower(path).read() == ""
