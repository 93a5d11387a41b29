"""Conversation ids: their shapes per CLI, how a try's command line continues one, where a
codex or opencode try says its id, and the words of a CLI that will not continue one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from wave_orchestrator.agents.conversations import (
    launch_argv,
    new_id,
    read_id,
    refusal_in,
    valid_id,
    why_not,
)

CLAUDE = ["claude", "-p", "--output-format", "text"]
CODEX = ["codex", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "-"]
OPENCODE = ["opencode", "run", "--format", "json", "--title", "wave-A"]
UUID = "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"


def test_claude_is_given_a_new_id_and_continues_with_resume() -> None:
    given = new_id("claude")
    assert valid_id("claude", given) == given and given != new_id("claude")
    assert launch_argv("claude", CLAUDE, given, "")[:4] == ["claude", "-p", "--session-id", given]
    continued = launch_argv("claude", CLAUDE, given, given)
    assert continued[:4] == ["claude", "-p", "--resume", given] and "--session-id" not in continued
    assert new_id("codex") == new_id("opencode") == ""  # they name their own


def test_codex_and_opencode_continue_in_their_own_words() -> None:
    assert launch_argv("codex", CODEX, "", "")[-1] == "-"
    assert launch_argv("codex", CODEX, "", UUID)[-3:] == ["resume", UUID, "-"]
    assert launch_argv("opencode", OPENCODE, "", "ses_abc123")[:4] == [
        "opencode",
        "run",
        "--session",
        "ses_abc123",
    ]
    assert launch_argv("local", ["bash", "-c", "x"], "", "") == ["bash", "-c", "x"]


def test_what_cannot_be_continued_says_why() -> None:
    assert why_not("claude", CLAUDE) is None and why_not("codex", CODEX) is None
    assert "ephemeral" in (why_not("codex", [*CODEX[:-1], "--ephemeral", "-"]) or "")
    assert "format: json" in (why_not("opencode", ["opencode", "run", "--format", "default"]) or "")
    assert why_not("local", ["bash"]) is not None


@pytest.mark.parametrize(
    ("executor", "value"),
    [
        ("claude", "../../etc/passwd"),
        ("claude", UUID + "\n--dangerously-skip-permissions"),
        ("claude", UUID.upper()),
        ("codex", "-" + UUID[1:]),
        ("opencode", "ses_a/b"),
        ("opencode", "ses_" + "a" * 65),
        ("opencode", UUID),
        ("codex", 5),
        ("claude", None),
    ],
)
def test_an_id_of_another_shape_is_never_used(executor: str, value: object) -> None:
    assert valid_id(executor, value) is None


def write(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "output.log"
    log.write_text(text)
    return log


def test_codex_says_its_id_in_its_banner_or_its_first_event(tmp_path: Path) -> None:
    banner = f"OpenAI Codex v0.171.0\n--------\nworkdir: /r\nsession id: {UUID}\n--------\n"
    assert read_id("codex", write(tmp_path, banner)) == UUID
    event = json.dumps({"type": "thread.started", "thread_id": UUID})
    assert read_id("codex", write(tmp_path, event + "\n")) == UUID
    other = json.dumps({"type": "item.completed", "thread_id": UUID})  # not where it is said
    assert read_id("codex", write(tmp_path, other + "\n")) is None
    assert read_id("codex", write(tmp_path, "session id: ../../x\n")) is None


def test_opencode_says_its_id_in_its_events(tmp_path: Path) -> None:
    event = {"type": "step_start", "sessionID": "ses_3f2a9c0dffe1", "part": {}}
    assert read_id("opencode", write(tmp_path, json.dumps(event) + "\n")) == "ses_3f2a9c0dffe1"
    bad = {"type": "step_start", "sessionID": "ses_x; rm -rf /"}
    assert read_id("opencode", write(tmp_path, "{not json\n" + json.dumps(bad) + "\n")) is None


def test_an_id_is_read_from_a_regular_file_only(tmp_path: Path) -> None:
    target = write(tmp_path, f"session id: {UUID}\n")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    assert read_id("codex", link) is None
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert read_id("codex", fifo) is None  # no blocking open
    assert read_id("codex", tmp_path / "absent.log") is None


def test_each_cli_s_refusal_is_recognised_in_its_own_words(tmp_path: Path) -> None:
    said = {
        "claude": f"No conversation found with session ID: {UUID}",
        "codex": f"Error: thread/resume: thread/resume failed: no rollout found for thread id {UUID}",
        "opencode": "\x1b[91m\x1b[1mError: \x1b[0mSession not found",
    }
    for executor, words in said.items():
        line = refusal_in(executor, write(tmp_path, words + "\n"))
        assert line is not None and "\x1b" not in line, executor
    assert refusal_in("claude", write(tmp_path, "done\n")) is None
    assert refusal_in("local", write(tmp_path, said["claude"])) is None


def test_an_agent_s_own_words_are_no_refusal(tmp_path: Path) -> None:
    """Only the CLI's own line counts: a tool's "already in use", or the words quoted inside an
    event, do not throw a conversation away."""
    quoted = json.dumps({"type": "assistant", "text": "No conversation found with session ID"})
    for executor, text in {
        "claude": "Error: That port is already in use.\n" + quoted,
        "codex": "warning: thread/resume failed to warm the cache, going on\n",
        "opencode": "grep: Session not found in notes.md\n",
    }.items():
        assert refusal_in(executor, write(tmp_path, text + "\n")) is None, executor
