"""What a host sends is read only up to its bound: ``bounded_run``, the way every ssh command
of wave runs, with local commands standing in for a host (a flood, a silence, a big stdin)."""

from __future__ import annotations

from pathlib import Path

from helpers import alive

from wave_orchestrator.placement.ssh_client import ANSWER_LIMIT, bounded_run


def test_an_answer_that_never_ends_is_cut_at_its_bound_and_stopped() -> None:
    """``yes`` never stops: read whole, it would fill memory until the timeout."""
    done = bounded_run(["yes"], b"", 60, 1000)
    assert done is not None  # not a timeout: stopped at the bound
    code, out, err = done
    assert code is None and len(out) <= 1000 and err == b""


def test_errors_are_bounded_too() -> None:
    done = bounded_run(["sh", "-c", "yes >&2"], b"", 60, 1000)
    assert done is not None and done[0] is None and len(done[2]) <= ANSWER_LIMIT


def test_an_answer_of_exactly_its_bound_is_whole() -> None:
    assert bounded_run(["head", "-c", "1000", "/dev/zero"], b"", 60, 1000) == (
        0,
        b"\0" * 1000,
        b"",
    )


def test_stdin_is_fed_while_the_answer_is_read() -> None:
    """Bigger than a pipe holds, both ways: feeding and reading at once, nothing stalls."""
    data = bytes(range(256)) * 40_000  # ~10 MB
    assert bounded_run(["cat"], data, 60, len(data)) == (0, data, b"")


def test_a_command_that_reads_no_stdin_is_not_waited_on() -> None:
    assert bounded_run(["sh", "-c", "echo hi; exit 3"], b"x" * 5_000_000, 60, 100) == (
        3,
        b"hi\n",
        b"",
    )


def test_a_command_past_its_timeout_is_killed_not_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    done = bounded_run(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 300"], b"", 1, 100)
    assert done is None
    assert not alive(int(pid_file.read_text()))
