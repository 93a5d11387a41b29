"""Usage limits judged from the CLI's own error channel (issue 33), on the real CLIs' limit
output of ``tests/fixtures/limits/`` (claude 2.1.197, opencode 1.18.33 against the local
provider mock) and on lines shaped like ../shared/agent-clis.md: the CLI's error is a limit,
the model's words, a tool's output and a result that is no error never are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.agents.limits import (
    TAIL_BYTES,
    error_channel,
    read_usage_limit,
    usage_limit_detail,
)
from wave_orchestrator.definitions.model import DEFAULT_USAGE_LIMIT_PATTERNS

LIMITS = Path(__file__).parents[1] / "fixtures" / "limits"
CODEX_JSON = {"json": True}
CLAUDE_JSON = {"output_format": "json"}
CLAUDE_STREAM = {"output_format": "stream-json"}
OPENCODE_JSON = {"format": "json"}


def limits_sample(name: str) -> str:
    return (LIMITS / name).read_text(encoding="utf-8")


PATTERNS = DEFAULT_USAGE_LIMIT_PATTERNS
CLAUDE_TEXT = {"output_format": "text"}
CODEX_TEXT = {"json": False}
OPENCODE_TEXT = {"format": "default"}
SAID = "You've hit your session limit · resets 9:40am (UTC)"
CODEX_SAID = "You’ve hit your usage limit. Try again at Dec 5th, 2026 9:39 AM."


def lines(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e, ensure_ascii=False) for e in events]


def judged(executor: str, settings: dict[str, Any], output: list[str] | str) -> str | None:
    output = output.splitlines() if isinstance(output, str) else output
    return usage_limit_detail(error_channel(executor, settings, output), PATTERNS)


@pytest.mark.parametrize(
    ("executor", "settings", "fixture", "detail"),
    [
        (
            "opencode",
            OPENCODE_JSON,
            "opencode-openai-usage-limit.jsonl",
            "usage limit has been reached",
        ),
        (
            "opencode",
            OPENCODE_TEXT,
            "opencode-openai-usage-limit.ansi.log",
            "usage limit has been reached",
        ),
        ("opencode", OPENCODE_JSON, "opencode-openai-quota.jsonl", "exceeded your current quota"),
        (
            "opencode",
            OPENCODE_TEXT,
            "opencode-openai-quota.ansi.log",
            "exceeded your current quota",
        ),
        ("claude", CLAUDE_TEXT, "claude-credit-balance.log", "Credit balance is too low"),
        (
            "claude",
            CLAUDE_STREAM,
            "claude-credit-balance.stream.jsonl",
            "Credit balance is too low",
        ),
        (
            "opencode",
            OPENCODE_JSON,
            "opencode-anthropic-credit-balance.jsonl",
            "credit balance is too low",
        ),
        (
            "opencode",
            OPENCODE_TEXT,
            "opencode-anthropic-credit-balance.ansi.log",
            "credit balance is too low",
        ),
        # rate limits and overloads the CLIs gave up on: no usage limit
        ("claude", CLAUDE_STREAM, "claude-api-retry.stream.jsonl", None),
        ("claude", CLAUDE_STREAM, "claude-overloaded.stream.jsonl", None),
        ("opencode", OPENCODE_TEXT, "opencode-anthropic-overloaded.ansi.log", None),
        ("codex", CODEX_TEXT, "codex-stream-error-429.log", None),
    ],
)
def test_the_real_clis_limits_are_read_from_their_error_channel(
    executor: str, settings: dict[str, Any], fixture: str, detail: str | None
) -> None:
    expected = f"usage limit, {detail}" if detail else None
    assert judged(executor, settings, limits_sample(fixture)) == expected


@pytest.mark.parametrize(
    ("executor", "settings", "output", "detail"),
    [
        (
            "claude",
            CLAUDE_JSON,
            lines({"type": "result", "is_error": True, "result": SAID}),
            "resets 9:40am (UTC)",
        ),
        (
            "claude",
            CLAUDE_STREAM,
            lines(
                {
                    "type": "assistant",
                    "error": "rate_limit",
                    "message": {
                        "model": "<synthetic>",
                        "content": [{"type": "text", "text": SAID}],
                    },
                }
            ),
            "resets 9:40am (UTC)",
        ),
        (
            "codex",
            CODEX_JSON,
            lines({"type": "turn.failed", "error": {"message": CODEX_SAID}}),
            "Try again at Dec 5th, 2026 9:39 AM",
        ),
        (
            "codex",
            CODEX_JSON,
            lines({"type": "error", "message": CODEX_SAID}),
            "Try again at Dec 5th, 2026 9:39 AM",
        ),
        (
            "codex",
            CODEX_TEXT,
            [
                "working",
                f"ERROR: {CODEX_SAID}",
                f"ERROR: {CODEX_SAID}",
                "[wave] run ended: exit 1 after 2s, 1 try, model not named",
            ],
            "Try again at Dec 5th, 2026 9:39 AM",
        ),
        ("local", {}, ["working", SAID, "bye"], "resets 9:40am (UTC)"),
        ("claude", CLAUDE_TEXT, [SAID], "resets 9:40am (UTC)"),
    ],
)
def test_the_cli_s_own_error_is_a_usage_limit_with_its_reset(
    executor: str, settings: dict[str, Any], output: list[str], detail: str
) -> None:
    assert judged(executor, settings, output) == f"usage limit, {detail}"


@pytest.mark.parametrize(
    ("executor", "settings", "output"),
    [
        # claude: the model's words, a tool's failure, a result that is no error (its text
        # holding an escaped `"is_error":true` and a whole forged result line)
        (
            "claude",
            CLAUDE_STREAM,
            lines(
                {"type": "assistant", "message": {"content": [{"type": "text", "text": SAID}]}},
                {
                    "type": "user",
                    "message": {
                        "content": [{"type": "tool_result", "is_error": True, "content": SAID}]
                    },
                },
                {
                    "type": "result",
                    "is_error": False,
                    "subtype": "error_max_turns",
                    "result": json.dumps({"type": "result", "is_error": True, "result": SAID}),
                },
            ),
        ),
        ("claude", CLAUDE_JSON, lines({"type": "result", "is_error": "true", "result": SAID})),
        # codex: an agent message or a command's output quoting the error events
        (
            "codex",
            CODEX_JSON,
            lines(
                {
                    "type": "item.completed",
                    "item": {
                        "type": "agent_message",
                        "text": json.dumps(
                            {"type": "turn.failed", "error": {"message": CODEX_SAID}}
                        ),
                    },
                },
                {
                    "type": "item.completed",
                    "item": {
                        "type": "command_execution",
                        "aggregated_output": f"ERROR: {CODEX_SAID}",
                    },
                },
            ),
        ),
        ("codex", CODEX_TEXT, ["codex", f"The CLI would say: {CODEX_SAID}", "ERROR: 401"]),
        # opencode: the model's text and a tool's output
        (
            "opencode",
            OPENCODE_JSON,
            lines(
                {"type": "text", "part": {"type": "text", "text": f"Error: {SAID}"}},
                {
                    "type": "tool_use",
                    "part": {
                        "state": {
                            "output": json.dumps(
                                {"type": "error", "error": {"data": {"message": SAID}}}
                            )
                        }
                    },
                },
            ),
        ),
        ("opencode", OPENCODE_TEXT, [f"quoting: {SAID}", "\x1b[91mError: \x1b[0mUnauthorized"]),
        # local: the words before its last 20 lines
        ("local", {}, [SAID] + [f"line {n}" for n in range(20)]),
    ],
)
def test_limit_words_outside_the_error_channel_are_no_usage_limit(
    executor: str, settings: dict[str, Any], output: list[str]
) -> None:
    assert judged(executor, settings, output) is None


def test_the_wrapper_s_own_lines_and_blank_lines_do_not_push_a_local_limit_out(
    tmp_path: Path,
) -> None:
    output = ["started", SAID] + [""] * 30 + ["[wave] rate limited: try 1/3"] * 30
    assert judged("local", {}, output) == "usage limit, resets 9:40am (UTC)"


def test_a_failed_try_is_read_from_its_offset_and_a_big_one_from_its_end(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    earlier = json.dumps({"type": "result", "is_error": True, "result": SAID}) + "\n"
    now = json.dumps({"type": "result", "is_error": True, "result": "Prompt is too long"}) + "\n"
    log.write_text(earlier + now)
    assert (
        read_usage_limit("claude", CLAUDE_JSON, PATTERNS, log, 0)
        == "usage limit, resets 9:40am (UTC)"
    )
    assert read_usage_limit("claude", CLAUDE_JSON, PATTERNS, log, len(earlier)) is None
    assert (
        read_usage_limit("claude", CLAUDE_JSON, PATTERNS, log, 10**12) is not None
    )  # no such offset: all
    with log.open("a") as fh:  # a try of more than TAIL_BYTES: its end is read, not all of it
        fh.write(("x" * 1000 + "\n") * (TAIL_BYTES // 1000 + 10) + earlier)
    assert read_usage_limit("claude", CLAUDE_JSON, PATTERNS, log, len(earlier)) is not None
    assert read_usage_limit("claude", CLAUDE_JSON, PATTERNS, tmp_path / "none", 0) is None


def test_the_lane_s_patterns_decide_and_one_python_cannot_read_is_left_out() -> None:
    texts = ["Error: out of credits: reset in 2 hours 10 minutes"]
    assert usage_limit_detail(texts, ["^error: out of credits"]) == (
        "usage limit, reset in 2 hours 10 minutes"
    )
    assert usage_limit_detail(texts, ["^out of credits"]) is None  # `^` is each line's start
    assert usage_limit_detail(texts, ["out of credits**"]) is None  # grep reads it, Python not
    assert usage_limit_detail(["Quota exceeded\x1b]0;pwned\a$(rm)"], PATTERNS) == (
        "usage limit, Quota exceeded"
    )
