"""Which lines of an agent's log are the agent speaking: its own messages in each CLI's JSON
events, the plain lines of text output, and of a codex text transcript only its `codex` parts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wave_orchestrator.closure.transcript import (
    agent_messages,
    output_lines,
    readable_lines,
    spoken_messages,
)

ESC = "\x1b"
SAY = "[wave-verdict] pass"


def codex_item(event: str, item_type: str, **fields: Any) -> dict[str, Any]:
    return {"type": event, "item": {"id": "item_1", "type": item_type, **fields}}


def claude_assistant(*blocks: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": list(blocks)}
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent}


def opencode(kind: str, **part: Any) -> dict[str, Any]:
    return {"type": kind, "sessionID": "ses_1", "part": {"type": kind, **part}}


# (id, one JSON event, the messages the agent said in it)
EVENTS: list[tuple[str, object, list[str]]] = [
    # codex --json
    ("codex-agent-message", codex_item("item.completed", "agent_message", text=SAY), [SAY]),
    ("codex-message-started", codex_item("item.started", "agent_message", text=SAY), []),
    ("codex-reasoning", codex_item("item.completed", "reasoning", text=SAY), []),
    (
        "codex-command-output",
        codex_item("item.completed", "command_execution", command=SAY, aggregated_output=SAY),
        [],
    ),
    ("codex-error-item", codex_item("item.completed", "error", message=SAY), []),
    ("codex-error-event", {"type": "error", "message": SAY}, []),
    ("codex-turn-failed", {"type": "turn.failed", "error": {"message": SAY}}, []),
    ("codex-message-not-text", codex_item("item.completed", "agent_message", text=[SAY]), []),
    # claude stream-json / json
    (
        "claude-text-blocks",
        claude_assistant({"type": "text", "text": "one"}, {"type": "text", "text": SAY}),
        ["one", SAY],
    ),
    (
        "claude-tool-use-and-thinking",
        claude_assistant(
            {"type": "thinking", "thinking": SAY},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": SAY}},
        ),
        [],
    ),
    ("claude-subagent", claude_assistant({"type": "text", "text": SAY}, parent="toolu_1"), []),
    (
        "claude-tool-result",
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": SAY}]},
        },
        [],
    ),
    ("claude-result", {"type": "result", "subtype": "success", "result": SAY}, [SAY]),
    ("claude-result-without-text", {"type": "result", "subtype": "error_max_turns"}, []),
    ("claude-api-retry", {"type": "system", "subtype": "api_retry", "error": SAY}, []),
    (
        "claude-json-verbose-array",
        [claude_assistant({"type": "text", "text": "one"}), {"type": "result", "result": SAY}],
        ["one", SAY],
    ),
    # opencode --format json
    ("opencode-text", opencode("text", text=SAY), [SAY]),
    ("opencode-reasoning", opencode("reasoning", text=SAY), []),
    (
        "opencode-tool-use",
        opencode("tool_use", tool="bash", state={"input": {"command": SAY}, "output": SAY}),
        [],
    ),
    ("opencode-error", {"type": "error", "error": {"data": {"message": SAY}}}, []),
    # anything else
    ("unknown-event", {"type": "note", "text": SAY}, []),
    ("no-type", {"text": SAY, "message": SAY}, []),
    ("bare-string", SAY, []),
]


@pytest.mark.parametrize(("event", "said"), [pytest.param(*e[1:], id=e[0]) for e in EVENTS])
def test_agent_messages_are_the_agents_own_words(event: object, said: list[str]) -> None:
    assert list(agent_messages(event)) == said


def test_each_json_message_and_each_run_of_plain_lines_is_one_message() -> None:
    """Fences are matched within one message, so the grouping is part of the contract."""
    text = "\n".join(
        [
            "plain one",
            "plain two",
            json.dumps(codex_item("item.completed", "agent_message", text="a\nb")),
            json.dumps({"type": "turn.completed", "usage": {}}),
            json.dumps(
                claude_assistant({"type": "text", "text": "c"}, {"type": "text", "text": "d"})
            ),
            "plain three",
            '{"type": "result", "result": "torn',
        ]
    )
    assert list(spoken_messages(text)) == [
        ["plain one", "plain two"],
        ["a", "b"],
        ["c"],
        ["d"],
        ["plain three", '{"type": "result", "result": "torn'],
    ]
    assert list(output_lines(text)) == [line for m in spoken_messages(text) for line in m]


CODEX_TRANSCRIPT = """\
OpenAI Codex v0.171.0 (research preview)
--------
workdir: /repo
--------
user
Print [wave-verdict] pass when done:
[wave-verdict] pass
thinking
[wave-verdict] hold
exec
bash -lc 'cat notes.md' in /repo succeeded in 5ms:
[wave-verdict] blocked
file update
A notes.md
[wave-verdict] fail
codex
I am done.
[wave-verdict] concerns
tokens used
1,024
[wave-verdict] concerns
"""


def test_a_codex_transcript_counts_only_what_codex_said() -> None:
    assert list(output_lines(CODEX_TRANSCRIPT)) == [
        "OpenAI Codex v0.171.0 (research preview)",
        "--------",
        "workdir: /repo",
        "--------",
        "I am done.",
        "[wave-verdict] concerns",
        "1,024",
        "[wave-verdict] concerns",
    ]


def test_older_codex_transcripts_with_timestamps_and_colour() -> None:
    text = (
        "[2025-01-07T10:00:00] OpenAI Codex v0.58.0 (research preview)\n"
        "[2025-01-07T10:00:00] user\n"
        "[wave-verdict] pass\n"
        f"{ESC}[35m{ESC}[3mexec{ESC}[0m{ESC}[0m\n"
        "[wave-verdict] blocked\n"
        f"[2025-01-07T10:00:05] {ESC}[35mcodex{ESC}[0m\n"
        "[wave-verdict] hold\n"
    )
    assert [line for line in output_lines(text) if "[wave-" in line] == ["[wave-verdict] hold"]


def test_header_words_are_only_headers_in_a_codex_transcript() -> None:
    """Without codex's banner, a line reading `user` or `exec` is just a line."""
    text = "user\n[wave-verdict] pass\nexec\n[wave-verdict] hold\n"
    assert list(output_lines(text)) == text.splitlines()


def test_a_new_codex_banner_starts_over() -> None:
    """A wrapper retry appends a new transcript: its banner ends the previous quiet section."""
    text = CODEX_TRANSCRIPT.split("codex\nI am done")[0] + "OpenAI Codex v0.171.0\n" + SAY + "\n"
    assert list(output_lines(text))[-1] == SAY


def test_readable_lines_still_show_tool_output_and_errors() -> None:
    """The dashboard's last line is what a person would read, tool output included: only
    markers are restricted to the agent's own words."""
    text = "\n".join(
        [
            json.dumps(codex_item("item.completed", "command_execution", aggregated_output="")),
            json.dumps({"type": "error", "message": "Reconnecting... 1/5"}),
        ]
    )
    assert list(readable_lines(text)) == ["Reconnecting... 1/5"]
    assert list(output_lines(text)) == []
