"""What an SSH host answers is hostile input: the LOOK and PREPARE answers are read line by
line, a cut answer is no answer, and every malformed, foreign or oversized line is dropped or
bounded. The scripts themselves are POSIX sh, run here for real (``sh -c``, no ssh) against a
temporary folder and a private tmux server, so what they print is proved to parse."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import alive, execed, wait_for

from wave_orchestrator.placement.ssh_remote import (
    FILE_LIMIT,
    LEFTOVERS_LIMIT,
    LOG_CHUNK,
    LOOK,
    PREPARE,
    SIGNAL,
    Look,
    Pane,
    prepared,
    read_look,
    script,
)

NOTHING = Look({}, {}, {})


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def answer(*lines: str) -> str:
    """A whole answer: the lines, then the ``end`` the LOOK script prints last."""
    return "\n".join([*lines, "end", ""])


def run_sh(words: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        words, capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- read_look: hostile answers ---------------------------------------------------------------
def test_a_whole_answer_is_read() -> None:
    text = answer(
        "pane A1 0  4242",
        "pane A2 1 3 4343",
        f"log A1 7 {b64(b'new output')}",
        "log A2 0 ",
        f"file A1 status.json {b64(b'{}')}",
        f"file A1 backoff.json {b64(b'[1]')}",
    )
    assert read_look(text, ["A1", "A2"]) == Look(
        {"A1": Pane("A1", False, None, 4242), "A2": Pane("A2", True, 3, 4343)},
        {"A1": (7, b"new output"), "A2": (0, b"")},
        {("A1", "status.json"): b"{}", ("A1", "backoff.json"): b"[1]"},
    )


def test_a_pane_killed_by_a_signal_has_the_status_a_shell_gives() -> None:
    text = answer("pane A1 0  4242 ", "pane A2 1  4343 9", "pane A3 1 0 4344 ", "pane A4 1  1 999")
    assert read_look(text, []) == Look(
        {
            "A1": Pane("A1", False, None, 4242),
            "A2": Pane("A2", True, 137, 4343),
            "A3": Pane("A3", True, 0, 4344),
        },  # A4: no such signal, a malformed line
        {},
        {},
    )


def test_left_running_lines_are_read_for_known_panes_only_and_bounded() -> None:
    many = [f"left A2 {1000 + i}" for i in range(LEFTOVERS_LIMIT + 10)]
    text = answer(
        "pane A2 1 0 4343",
        "pane A3 0  4344",
        "left A9 6000",  # no such pane
        "left A3 6001",
        "left A2 0",
        "left A2 \u00b2",
        "left A2 99999999999",
        "left A2 7 extra",
        *many,
    )
    seen = read_look(text, [])
    assert seen is not None
    assert seen.leftovers == {
        "A3": (6001,),
        "A2": tuple(range(1000, 1000 + LEFTOVERS_LIMIT)),
    }
    searched = read_look(text, [], ["A9"])  # a session searched for by name counts
    assert searched is not None and searched.leftovers["A9"] == (6000,)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "pane A1 0  4242\n",
        f"pane A1 0  4242\nlog A1 0 {b64(b'x' * 30)[:12]}",  # cut in the middle of a log line
        "pane A1 0  4242\nending\n",
        "pane A1 0  4242\n end\n",
        "pane end 0  4242\nlog end 0 \n",  # "end" only as a word of a line
    ],
)
def test_a_cut_answer_is_no_look(text: str) -> None:
    assert read_look(text, ["A1"]) is None


def test_logs_and_files_of_sessions_not_asked_for_are_ignored() -> None:
    text = answer(
        f"log B9 0 {b64(b'theirs')}",
        f"file B9 status.json {b64(b'{}')}",
        f"log A1 0 {b64(b'mine')}",
        "pane B9 0  77",
    )
    seen = read_look(text, ["A1"])
    assert seen is not None
    assert seen.logs == {"A1": (0, b"mine")} and seen.files == {}
    # every pane of the lane's server counts: shared-path agents are never asked for by name
    assert seen.panes == {"B9": Pane("B9", False, None, 77)}


GOOD = b64(b"data")


@pytest.mark.parametrize(
    "line",
    [
        "log A1 0 !!!!",  # not base64
        "log A1 0 ZGF0YQ",  # base64 cut short (no padding)
        "log A1 0 ZG F0YQ==",  # a space inside the data
        f"log A1 -1 {GOOD}",
        f"log A1 123456789012 {GOOD}",  # beyond any offset wave asked for
        f"log A1 1e3 {GOOD}",
        f"log A1 0x10 {GOOD}",
        f"log A1 0 {GOOD} extra",
        f"log A1  0 {GOOD}",
        "log A1",
        f"file A1 status.json {GOOD} extra",
        "file A1 status.json @@@@",
        f"file A1 ../x {GOOD}",
        f"file A1 run.sh {GOOD}",
        f"file A1 ../status.json {GOOD}",
        f"file A1 status.json/ {GOOD}",
        f"file A1 output.log {GOOD}",
        "file A1",
        f"LOG A1 0 {GOOD}",
        f" log A1 0 {GOOD}",
        "pane A1 0 4242",  # four words: not a pane line
        "pane A1 with space 0  4242",  # a session name that splits
        "pane A1 0  4242 extra",
        "pane A1 1  4242 128",  # no such signal
        "pane",
    ],
)
def test_a_malformed_line_is_dropped(line: str) -> None:
    assert read_look(answer(line), ["A1"]) == NOTHING


@pytest.mark.parametrize(
    "line", ["pane A1 1 -3 -42", "pane A1 1 123456789012 123456789012", "pane A1 1 x y"]
)
def test_a_pane_number_that_is_no_number_is_unknown(line: str) -> None:
    assert read_look(answer(line), ["A1"]) == Look({"A1": Pane("A1", True, None, None)}, {}, {})


def test_a_pane_pid_beyond_32_bits_is_unknown() -> None:
    seen = read_look(answer(f"pane A1 0  {(1 << 32) + 123}"), ["A1"])
    assert seen is not None and seen.panes["A1"].pid is None


@pytest.mark.parametrize("kind", ["log", "pane", "free"])
def test_a_unicode_digit_is_dropped_not_raised(kind: str) -> None:
    if kind == "free":
        assert prepared("root /w/t\nfree ²\n") == ("/w/t", None, [])
        return
    line = f"log A1 ² {GOOD}" if kind == "log" else "pane A1 1 ² 12"
    seen = read_look(answer(line), ["A1"])
    assert seen is not None and not seen.logs and "²" not in repr(seen)


def test_what_is_read_back_is_bounded() -> None:
    big_log, big_file = os.urandom(LOG_CHUNK + 10), b"{" * (FILE_LIMIT + 10)
    text = answer(f"log A1 0 {b64(big_log)}", f"file A1 status.json {b64(big_file)}")
    seen = read_look(text, ["A1"])
    assert seen is not None
    assert seen.logs["A1"] == (0, big_log[:LOG_CHUNK])
    assert seen.files[("A1", "status.json")] == big_file[:FILE_LIMIT]


# -- prepared: the root a host names goes into every script --------------------------------
def test_a_prepared_answer_is_read() -> None:
    text = "root /home/u/.cache/wave/repo-1a2b\nfree 123456\nmissing tmux\nmissing codex\n"
    assert prepared(text) == ("/home/u/.cache/wave/repo-1a2b", 123456, ["tmux", "codex"])


@pytest.mark.parametrize(
    "root",
    [
        "",
        "relative/path",
        "~/wave",
        "/w/../etc",
        "/w/..",
        "/../w",
        "/..",
        "/w/with space",
        "/w/it's",
        '/w/"q"',
        "/w/$HOME",
        "/w/`id`",
        "/w/a;b",
        "/w/tab\there",
        "/" + "a" * 301,
    ],
)
def test_a_root_that_is_no_safe_path_is_refused(root: str) -> None:
    assert prepared(f"root {root}\nfree 1\n")[0] is None


def test_a_root_with_dots_in_names_and_the_length_bound_are_taken() -> None:
    assert prepared("root /w/..a/b..\n")[0] == "/w/..a/b.."
    assert prepared("root /" + "a" * 300 + "\n")[0] == "/" + "a" * 300


def test_prepared_bounds_what_it_reads() -> None:
    assert prepared("free -5\n")[1] is None
    assert prepared("free 123456789012\n")[1] is None
    missing = prepared("missing " + "x" * 500 + "\n" + "missing y\n" * 300)[2]
    assert missing[0] == "x" * 100 and len(missing) == 200  # only the first 200 lines count


def test_script_passes_each_value_as_one_argument_never_as_code(tmp_path: Path) -> None:
    made = tmp_path / "PWNED"
    hostile = [f"a b $(touch {made})", f"`touch {made}`; touch {made}", "line\ntwo", "'\"", ""]
    words = script('printf "<%s>" "$@"', *hostile)
    assert words[:2] == ["sh", "-c"] and words[3] == "sh" and words[4:] == hostile
    assert run_sh(words) == "".join(f"<{value}>" for value in hostile)
    assert not made.exists()


# -- the scripts, run for real -----------------------------------------------------------------
@pytest.fixture
def host_root() -> Iterator[Path]:
    """A host's root: short, as its ``tmux`` socket must fit a unix socket's 108 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="wr", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def agent_folder(root: Path, name: str, log: bytes, status: bytes | None) -> Path:
    folder = root / "root" / "repo" / ".wave" / name
    folder.mkdir(parents=True)
    (folder / "output.log").write_bytes(log)
    if status is not None:
        (folder / "status.json").write_bytes(status)
    return folder


def test_look_with_no_tmux_server_still_answers(host_root: Path) -> None:
    a1 = agent_folder(host_root, "A1", b"hello\nworld\n", b'{"state": "done"}')
    a2 = agent_folder(host_root, "A2", b"abc", None)
    (a2 / "backoff.json").write_bytes(b"[]")
    a3 = host_root / "root" / "none"  # never written: nothing of it
    out = run_sh(script(LOOK, str(host_root), "", "0", "A1", str(a1), "6", "A2", str(a2), "3"))
    out2 = run_sh(script(LOOK, str(host_root), "", "0", "A3", str(a3), "0"))
    assert read_look(out, ["A1", "A2"]) == Look(
        {},
        {"A1": (6, b"world\n")},  # A2's log has nothing past offset 3
        {("A1", "status.json"): b'{"state": "done"}', ("A2", "backoff.json"): b"[]"},
    )
    assert read_look(out2, ["A3"]) == NOTHING


def test_look_brings_binary_output_and_bounds_it(host_root: Path) -> None:
    data = os.urandom(LOG_CHUNK + 4096)
    a1 = agent_folder(host_root, "A1", data, b"x" * (FILE_LIMIT + 100))
    seen = read_look(run_sh(script(LOOK, str(host_root), "", "0", "A1", str(a1), "1")), ["A1"])
    assert seen is not None
    assert seen.logs == {"A1": (1, data[1 : LOG_CHUNK + 1])}
    assert seen.files == {("A1", "status.json"): b"x" * FILE_LIMIT}


@pytest.fixture
def tmux_server(host_root: Path) -> Iterator[list[str]]:
    """A private tmux server on the host root's ``tmux`` socket, as START makes it: one live
    session (A1) and one whose command exited 3 (A2, kept by remain-on-exit); killed after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    tmux = ["tmux", "-S", str(host_root / "tmux"), "-f", "/dev/null"]
    subprocess.run(
        [
            *tmux,
            *("new-session", "-d", "-s", "A1", "sleep 300", ";"),
            *("set-option", "-g", "remain-on-exit", "on", ";"),
            *("new-session", "-d", "-s", "A2", "exit 3"),
        ],
        check=True,
        env=env,
        timeout=30,
    )
    try:
        yield tmux
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, env=env, timeout=30)


def test_look_lists_the_lane_servers_panes(host_root: Path, tmux_server: list[str]) -> None:
    a1 = agent_folder(host_root, "A1", b"out", None)

    def a2_ended() -> Look | None:
        seen = read_look(run_sh(script(LOOK, str(host_root), "", "0", "A1", str(a1), "0")), ["A1"])
        pane = seen.panes.get("A2") if seen is not None else None
        # tmux marks a pane dead as its output closes, and takes its exit status a moment later
        return seen if pane is not None and pane.dead and pane.status is not None else None

    seen = wait_for(a2_ended, 10, what="A2's pane dead, with its exit status, in a look")
    assert seen is not None
    assert seen.panes["A2"].status == 3 and seen.panes["A2"].pid is not None
    live = seen.panes["A1"]
    assert not live.dead and live.status is None and live.pid is not None
    assert Path(f"/proc/{live.pid}").exists()
    assert seen.logs == {"A1": (0, b"out")}


def test_look_gets_tmux_to_reap_a_dead_pane_with_no_status(host_root: Path, tmp_path: Path) -> None:
    """tmux 3.3 may miss a pane's SIGCHLD (no status until another child of the server
    ends): a look that finds a dead pane with neither status nor signal gets one to end and
    lists the panes again. Here the pane's process closed its terminal and runs on, so its
    pane is dead with no status every time; tmux's calls are logged by a shim."""
    real = shutil.which("tmux")
    assert real is not None
    shim = tmp_path / "bin" / "tmux"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls"}\nexec {real} "$@"\n')
    shim.chmod(0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    env["PATH"] = f"{shim.parent}:{env['PATH']}"
    tmux = ["tmux", "-S", str(host_root / "tmux"), "-f", "/dev/null"]
    mute = 'trap "" HUP; exec </dev/null >/dev/null 2>&1; exec sleep 30'
    start = [*tmux, "new-session", "-d", "-s", "A1", "sleep 30", ";"]
    start += ["set-option", "-g", "remain-on-exit", "on", ";", "new-session", "-d", "-s", "M", mute]
    subprocess.run(start, check=True, env=env, timeout=30)
    calls = tmp_path / "calls"
    muted: int | None = None
    try:
        look = script(LOOK, str(host_root), "", "0")

        def m_dead() -> Look | None:
            calls.write_text("")
            seen = read_look(run_sh(look, env), [])
            pane = seen.panes.get("M") if seen is not None else None
            return seen if pane is not None and pane.dead else None

        seen = wait_for(m_dead, 10, what="M's pane dead, its process running")
        muted = seen.panes["M"].pid
        assert seen.panes["M"].status is None and not seen.panes["A1"].dead
        said = calls.read_text().splitlines()
        assert len(said) == 2 and "run-shell true ; list-panes -a" in said[1]
        subprocess.run([*tmux, "kill-session", "-t", "=M"], check=True, env=env, timeout=30)
        calls.write_text("")
        assert read_look(run_sh(look, env), []) is not None
        assert len(calls.read_text().splitlines()) == 1  # no dead pane: no second call
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, env=env, timeout=30)
        if muted is not None:  # deaf to the hang-up its session's end sent
            with contextlib.suppress(ProcessLookupError):
                os.kill(muted, signal.SIGKILL)


@pytest.fixture
def tagged() -> Iterator[Callable[[str], int]]:
    """Starts processes in sessions of their own (out of any pane's group), each carrying a
    token as an agent's children do; every one is killed after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(token: str) -> int:
        env = {**os.environ, "WAVE_AGENT_TOKEN": token}
        started.append(subprocess.Popen(["sleep", "300"], env=env, start_new_session=True))
        execed(started[-1].pid, argv=("sleep", "300"))
        return started[-1].pid

    try:
        yield start
    finally:
        for proc in started:
            proc.kill()
            proc.wait(timeout=30)


def test_look_finds_what_an_ended_agent_left_running(
    host_root: Path, tmux_server: list[str], tagged: Callable[[str], int]
) -> None:
    """Only processes carrying exactly the token of a dead pane's session of this lane's
    socket: not a live pane's (A1's), not a longer session name's, not another lane's."""
    left = tagged("wave-main-1a2b/A2")
    for token in ("wave-main-1a2b/A1", "wave-main-1a2b/A22", "wave-other-1a2b/A2"):
        tagged(token)
    a1 = agent_folder(host_root, "A1", b"", None)

    def a2_ended() -> Look | None:
        words = script(LOOK, str(host_root), "wave-main-1a2b", "0", "A1", str(a1), "0")
        seen = read_look(run_sh(words), ["A1"])
        pane = seen.panes.get("A2") if seen is not None else None
        return seen if pane is not None and pane.dead else None

    seen = wait_for(a2_ended, 10, what="A2's pane dead in a look")
    assert seen is not None and seen.leftovers == {"A2": (left,)}
    unsure = script(LOOK, str(host_root), "", "0", "A1", str(a1), "0")  # no socket: none searched
    assert read_look(run_sh(unsure), ["A1"]) == seen._replace(leftovers={})


def test_look_searches_named_sessions_whose_panes_are_gone(
    host_root: Path, tagged: Callable[[str], int]
) -> None:
    """An ended agent whose session went (removed at its wave's end, or its server killed):
    what it left is still found, by its session's name, with no tmux server at all."""
    left = tagged("wave-main-1a2b/A7")
    tagged("wave-main-1a2b/A8")  # not asked about
    words = script(LOOK, str(host_root), "wave-main-1a2b", "1", "A7")
    assert read_look(run_sh(words), [], ["A7"]) == Look({}, {}, {}, {}, {"A7": (left,)})
    alone = script(LOOK, str(host_root), "wave-main-1a2b", "0")
    assert read_look(run_sh(alone), [], ["A7"]) == NOTHING


def test_signal_reaches_the_processes_of_the_agents_token_only(
    tagged: Callable[[str], int],
) -> None:
    left, other = tagged("wave-main-1a2b/A2"), tagged("wave-main-1a2b/A22")
    no_group = str(2**22 + 7)  # no process group has this id: only the token's are signalled
    done = subprocess.run(script(SIGNAL, "KILL", no_group, "wave-main-1a2b/A2"), timeout=30)
    assert done.returncode == 0  # something was signalled
    wait_for(lambda: not alive(left), 10, what="the tagged process ended")
    assert alive(other)
    assert subprocess.run(script(SIGNAL, "KILL", no_group, ""), timeout=30).returncode == 1


def test_prepare_makes_the_root_and_the_mirror(tmp_path: Path) -> None:
    work = tmp_path / "work"
    out = run_sh(script(PREPARE, str(work), "repo-1a2b", "sh", "no-such-program-here"))
    root, free, missing = prepared(out)
    assert root == str(work / "repo-1a2b")
    assert (work / "repo-1a2b" / "root").is_dir()
    assert (work / "repo-1a2b" / "mirror.git" / "HEAD").is_file()
    assert free is not None and free > 0
    assert missing == ["no-such-program-here"]
    assert (work / "repo-1a2b").stat().st_mode & 0o077 == 0  # umask 077: the owner's only
    # a second PREPARE finds them made and leaves the mirror as it is
    (work / "repo-1a2b" / "mirror.git" / "kept").write_text("x")
    assert prepared(run_sh(script(PREPARE, str(work), "repo-1a2b")))[0] == root
    assert (work / "repo-1a2b" / "mirror.git" / "kept").exists()
    assert "noscan" not in out.split("\n")  # GNU grep and /proc: processes can be searched


def test_prepare_says_when_processes_cannot_be_searched(tmp_path: Path) -> None:
    """A grep that cannot read NUL-separated records (not GNU grep) first on the PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "grep").write_text("#!/bin/sh\nexit 2\n")
    (bin_dir / "grep").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    out = run_sh(script(PREPARE, str(tmp_path / "work"), "repo-1a2b"), env)
    assert "noscan" in out.split("\n") and prepared(out)[0] is not None


@pytest.mark.parametrize("workdir", ["", "~/w"])
def test_prepare_default_and_home_workdirs(tmp_path: Path, workdir: str) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    root = prepared(run_sh(script(PREPARE, workdir, "t"), env))[0]
    expected = tmp_path / ("c/wave/t" if workdir == "" else "home/w/t")
    assert root == str(expected) and (expected / "root").is_dir()


def refused_prepare(words: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(words, capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 4 and done.stdout == "", done
    return done.stderr


def test_prepare_refuses_a_workdir_with_a_space_and_makes_nothing(tmp_path: Path) -> None:
    said = refused_prepare(script(PREPARE, str(tmp_path / "my work"), "t"))
    assert "characters wave does not use" in said
    assert not (tmp_path / "my work").exists()


def test_prepare_refuses_a_workdir_with_a_newline_and_makes_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "a\nb")}
    refused_prepare(script(PREPARE, "", "t"), env)
    assert not (tmp_path / "a\nb").exists()
