"""Tokens and cost from agent output (SPEC 4 "Usage and cost"), on real-shaped output samples.

The samples under ``tests/fixtures/usage/`` follow ``shared/agent-clis.md``: the single-turn ones
are the recorded outputs, the others add turns, steps, retries and the noise an output log holds
(stderr lines, the wrapper's ``[wave]`` lines, a torn last line). ``claude-json-model-alias.json``
and the samples under ``tests/fixtures/limits/`` were captured from claude 2.1.197 and opencode
1.18.33 run against the local provider mock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.agents.usage import (
    CliRetry,
    CliRetryFollower,
    Usage,
    follow_cli_retry,
    read_usage,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "usage"
LIMITS = Path(__file__).parents[1] / "fixtures" / "limits"

CODEX_JSON = {"json": True}
CLAUDE_JSON = {"output_format": "json"}
CLAUDE_STREAM = {"output_format": "stream-json"}
OPENCODE_JSON = {"format": "json"}
OPUS = "claude-opus-4-8[1m]"
SONNET = "claude-sonnet-5"


def core(usage: Usage) -> Usage:
    """Tokens, cost and model alone: what these tests pin (turns and tools have their own)."""
    return usage._replace(turns=None, tool_calls=None)


def sample(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def limits_sample(name: str) -> str:
    return (LIMITS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("executor", "settings", "fixture", "expected"),
    [
        # codex: input_tokens already counts the cached ones; no cost field
        ("codex", CODEX_JSON, "codex-one-turn.jsonl", Usage(321, 7, None)),
        ("codex", CODEX_JSON, "codex-two-turns-noise.log", Usage(24763 + 31002, 122 + 418, None)),
        ("codex", CODEX_JSON, "codex-turn-failed.jsonl", Usage(None, None, None)),
        ("codex", CODEX_JSON, "codex-text.log", Usage(None, None, None)),
        # claude: the last result event, tokens from modelUsage; cache creation and cache
        # reads are input tokens; the model is the one the CLI reports
        ("claude", CLAUDE_JSON, "claude-json.json", Usage(123, 4, 0.000715, OPUS)),
        (
            "claude",
            CLAUDE_JSON,
            "claude-json-verbose.json",
            Usage(11 + 5306 + 28890, 75, 0.0312, "claude-sonnet-5"),
        ),
        (
            "claude",
            CLAUDE_JSON,
            "claude-json-max-turns.json",
            Usage(21 + 9120 + 30402, 612, 0.0874, OPUS),
        ),
        (
            "claude",
            CLAUDE_STREAM,
            "claude-stream-json.jsonl",
            Usage(10 + 7161 + 7021, 107, 0.0521925, OPUS),
        ),
        (
            "claude",
            CLAUDE_STREAM,
            "claude-stream-json-retry.log",
            Usage(52 + 2048 + 1024, 3, 0.0108, "claude-sonnet-5"),
        ),
        # captured from claude 2.1.197 run with `--model sonnet` against the mock provider
        ("claude", CLAUDE_JSON, "claude-json-model-alias.json", Usage(123, 4, 0.000429, SONNET)),
        # opencode: every step_finish summed; tokens.cache read and write count as input
        ("opencode", OPENCODE_JSON, "opencode-one-step.jsonl", Usage(222, 5, 0.000741)),
        (
            "opencode",
            OPENCODE_JSON,
            "opencode-two-steps-noise.log",
            Usage(1204 + 10600 + 25 + 100 + 11800, 86 + 126, 0.042 + 0.0071),
        ),
        ("opencode", OPENCODE_JSON, "opencode-error.jsonl", Usage(None, None, None)),
    ],
)
def test_usage_from_machine_readable_output(
    executor: str, settings: dict[str, Any], fixture: str, expected: Usage
) -> None:
    assert core(read_usage(executor, settings, sample(fixture))) == expected


def test_codex_sums_every_turn_and_ignores_json_inside_command_output() -> None:
    # the command output of item_1 holds a turn.completed line as text: it is not an event
    usage = read_usage("codex", CODEX_JSON, sample("codex-two-turns-noise.log"))
    assert usage.input_tokens == 55765 and usage.output_tokens == 540


@pytest.mark.parametrize(
    ("executor", "settings", "fixture"),
    [
        ("codex", {"json": False}, "codex-one-turn.jsonl"),
        ("codex", {}, "codex-one-turn.jsonl"),
        ("claude", {"output_format": "text"}, "claude-text.log"),
        ("claude", {}, "claude-json.json"),
        ("opencode", {"format": "default"}, "opencode-one-step.jsonl"),
        ("local", {"command": ["agent"]}, "claude-json.json"),
        ("unknown", {"json": True, "format": "json"}, "codex-one-turn.jsonl"),
    ],
)
def test_output_that_is_not_machine_readable_is_not_parsed(
    executor: str, settings: dict[str, Any], fixture: str
) -> None:
    assert core(read_usage(executor, settings, sample(fixture))) == Usage(None, None, None)


def test_claude_json_verbose_array_spread_over_lines_and_after_noise() -> None:
    text = (
        "Warning: Unknown --effort value 'x' — ignoring it\n"
        "[\n"
        '  {"type": "system", "subtype": "init"},\n'
        '  {"type": "result", "total_cost_usd": 0.5,\n'
        '   "usage": {"input_tokens": 10, "output_tokens": 2}}\n'
        "]\n"
        "[wave] rate limited: try 1/2, retrying in 20s\n"
    )
    assert core(read_usage("claude", CLAUDE_JSON, text)) == Usage(10, 2, 0.5)  # no model reported


def test_claude_uses_the_last_result_only() -> None:
    first = '{"type":"result","total_cost_usd":0.25,"usage":{"input_tokens":100,"output_tokens":9}}'
    last = '{"type":"result","total_cost_usd":0.01,"usage":{"input_tokens":7,"output_tokens":1}}'
    assert core(read_usage("claude", CLAUDE_STREAM, f"{first}\n{last}\n")) == Usage(7, 1, 0.01)


def test_missing_figures_stay_none() -> None:
    claude_cost_only = '{"type":"result","total_cost_usd":0.02}\n'
    assert core(read_usage("claude", CLAUDE_JSON, claude_cost_only)) == Usage(None, None, 0.02)
    claude_no_cost = '{"type":"result","usage":{"cache_read_input_tokens":50,"output_tokens":3}}'
    assert core(read_usage("claude", CLAUDE_JSON, claude_no_cost)) == Usage(50, 3, None)
    codex_output_only = '{"type":"turn.completed","usage":{"output_tokens":4}}\n'
    assert core(read_usage("codex", CODEX_JSON, codex_output_only)) == Usage(None, 4, None)
    opencode_cost_only = '{"type":"step_finish","part":{"cost":0.003}}\n'
    assert core(read_usage("opencode", OPENCODE_JSON, opencode_cost_only)) == Usage(
        None, None, 0.003
    )
    opencode_no_cache = '{"type":"step_finish","part":{"tokens":{"input":9,"output":1}}}\n'
    assert core(read_usage("opencode", OPENCODE_JSON, opencode_no_cache)) == Usage(9, 1, None)


def test_values_of_the_wrong_type_are_ignored() -> None:
    text = (
        '{"type":"turn.completed","usage":{"input_tokens":"12","output_tokens":true}}\n'
        '{"type":"turn.completed","usage":"none"}\n'
        '{"type":"turn.completed","usage":{"input_tokens":-3,"output_tokens":5.0}}\n'
    )
    assert core(read_usage("codex", CODEX_JSON, text)) == Usage(None, 5, None)
    bad_cost = '{"type":"result","total_cost_usd":"0.1","usage":[]}\n'
    assert core(read_usage("claude", CLAUDE_JSON, bad_cost)) == Usage(None, None, None)


def test_empty_and_torn_output() -> None:
    for executor, settings in (
        ("codex", CODEX_JSON),
        ("claude", CLAUDE_STREAM),
        ("opencode", OPENCODE_JSON),
    ):
        assert core(read_usage(executor, settings, "")) == Usage()
        assert core(read_usage(executor, settings, '{"type":"result","usage":{"inp')) == Usage()


def test_claude_tokens_are_summed_over_model_usage_and_the_costliest_model_is_reported() -> None:
    # `usage` covers the main model's requests only; `modelUsage` (and the cost) all of them.
    result = {
        "type": "result",
        "total_cost_usd": 0.0424,
        "usage": {"input_tokens": 40, "cache_read_input_tokens": 900, "output_tokens": 60},
        "modelUsage": {
            "claude-haiku-4-5": {
                "inputTokens": 300,
                "outputTokens": 20,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "costUSD": 0.0004,
            },
            "claude-sonnet-5": {
                "inputTokens": 40,
                "outputTokens": 60,
                "cacheReadInputTokens": 900,
                "cacheCreationInputTokens": 100,
                "costUSD": 0.042,
            },
        },
    }
    init = {"type": "system", "subtype": "init", "model": "claude-sonnet-5"}
    text = json.dumps(init) + "\n" + json.dumps(result) + "\n"
    usage = read_usage("claude", CLAUDE_STREAM, text)
    assert core(usage) == Usage(300 + 40 + 900 + 100, 20 + 60, 0.0424, "claude-sonnet-5")


def test_claude_cost_from_model_usage_when_the_total_is_missing() -> None:
    result = {
        "type": "result",
        "modelUsage": {
            "claude-x": {"inputTokens": 1, "outputTokens": 2, "costUSD": 0.25},
            "claude-y": {"inputTokens": 3, "outputTokens": 4, "costUSD": 0.5},
        },
    }
    assert core(read_usage("claude", CLAUDE_JSON, json.dumps(result))) == Usage(
        4, 6, 0.75, "claude-y"
    )


def test_claude_empty_model_usage_falls_back_to_usage_and_the_init_model() -> None:
    # captured: a credit-balance failure, no request was billed
    usage = read_usage("claude", CLAUDE_STREAM, limits_sample("claude-credit-balance.stream.jsonl"))
    assert core(usage) == Usage(0, 0, 0.0, SONNET)


def test_claude_model_without_a_result_is_the_init_model() -> None:
    init = '{"type":"system","subtype":"init","model":"claude-sonnet-5"}\n'
    assert core(read_usage("claude", CLAUDE_STREAM, init)) == Usage(model=SONNET)


def retry_lines(count: int | None = None) -> list[str]:
    lines = limits_sample("claude-api-retry.stream.jsonl").splitlines()
    return lines if count is None else lines[:count]


def test_claude_api_retry_lines_are_followed_until_the_cli_moves_on() -> None:
    # captured: claude 2.1.197 against a provider that answers 429 every time
    assert follow_cli_retry("claude", retry_lines(1), None) is None  # init only
    retry = follow_cli_retry("claude", retry_lines(6), None)
    assert retry == CliRetry(attempt=5, max_retries=10, delay_ms=9072, rate_limit=True)
    assert retry.describe() == "CLI retrying 5/10"
    assert follow_cli_retry("claude", retry_lines(11), None) == CliRetry(10, 10, 34184, True)
    # then its assistant and result events: the retrying is over
    assert follow_cli_retry("claude", retry_lines(), None) is None


def test_cli_retry_state_carries_over_and_ends_on_the_next_event_or_wrapper_line() -> None:
    retry = CliRetry(2, 10, 1213, True)
    noise = ["Warning: something on stderr", "", "not json {"]
    assert follow_cli_retry("claude", noise, retry) == retry
    assert follow_cli_retry("claude", ["[wave] rate limited: try 1/3"], retry) is None
    assert follow_cli_retry("claude", ['{"type":"assistant","message":{}}'], retry) is None
    assert follow_cli_retry("codex", retry_lines(6), None) is None  # claude only


def test_overload_retries_count_as_rate_limits_but_authentication_retries_do_not() -> None:
    lines = limits_sample("claude-overloaded.stream.jsonl").splitlines()  # captured, 529
    assert follow_cli_retry("claude", lines[:2], None) == CliRetry(1, 2, 1000, True)
    auth = (
        '{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,'
        '"retry_delay_ms":2276.03,"error_status":401,"error":"authentication_failed"}'
    )
    assert follow_cli_retry("claude", [auth], None) == CliRetry(3, 10, 2276, False)
    assert CliRetry(3, None, 0, True).describe() == "CLI retrying 3"


def test_follower_reads_only_complete_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    follower = CliRetryFollower("claude", log)
    assert follower.poll() is False  # no log yet
    lines = retry_lines()
    log.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:40])  # the third line is torn
    assert follower.poll() is True and follower.current == CliRetry(1, 10, 1000, True)
    assert follower.wait_until > 0
    with log.open("a") as fh:
        fh.write(lines[2][40:] + "\n")
    assert follower.poll() is True and follower.current == CliRetry(2, 10, 1213, True)
    assert follower.announced == [CliRetry(2, 10, 1213, True)]
    assert follower.poll() is False  # nothing new
    with log.open("a") as fh:
        fh.write("\n".join(lines[3:]) + "\n")
    # retries 3 to 10 arrived in one read: each is announced, then the CLI moved on
    assert follower.poll() is True and follower.current is None
    assert [r.attempt for r in follower.announced] == list(range(3, 11))
    assert follower.poll() is False and follower.announced == []
    assert CliRetryFollower("codex", log).poll() is False


@pytest.mark.parametrize(
    ("executor", "settings", "fixture", "turns", "tools"),
    [
        ("codex", CODEX_JSON, "codex-one-turn.jsonl", 1, 0),
        ("codex", CODEX_JSON, "codex-two-turns-noise.log", 2, 2),  # a command, an edit
        ("claude", CLAUDE_JSON, "claude-json.json", 1, None),  # json: no tool events shown
        ("opencode", OPENCODE_JSON, "opencode-one-step.jsonl", 1, 0),
        ("opencode", OPENCODE_JSON, "opencode-two-steps-noise.log", 2, 1),
        ("codex", CODEX_JSON, "codex-text.log", None, None),
    ],
)
def test_turns_and_tool_calls_as_each_cli_reports_them(
    executor: str, settings: dict[str, Any], fixture: str, turns: int | None, tools: int | None
) -> None:
    usage = read_usage(executor, settings, sample(fixture))
    assert (usage.turns, usage.tool_calls) == (turns, tools)


def test_claude_stream_json_counts_each_tool_use() -> None:
    assistant = {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "name": "Read", "input": {}},
                {"type": "tool_use", "name": "Bash", "input": {}},
            ]
        },
    }
    result = {"type": "result", "num_turns": 3, "usage": {"input_tokens": 1, "output_tokens": 1}}
    text = json.dumps(assistant) + "\n" + json.dumps(assistant) + "\n" + json.dumps(result)
    usage = read_usage("claude", CLAUDE_STREAM, text)
    assert (usage.turns, usage.tool_calls) == (3, 4)
