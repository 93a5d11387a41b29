"""Tokens and cost from agent output (SPEC 4 "Usage and cost"), on real-shaped output samples.

The samples under ``tests/fixtures/usage/`` follow ``shared/agent-clis.md``: the single-turn ones
are the recorded outputs, the others add turns, steps, retries and the noise an output log holds
(stderr lines, the wrapper's ``[wave]`` lines, a torn last line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.agents.usage import Usage, read_usage

FIXTURES = Path(__file__).parents[1] / "fixtures" / "usage"

CODEX_JSON = {"json": True}
CLAUDE_JSON = {"output_format": "json"}
CLAUDE_STREAM = {"output_format": "stream-json"}
OPENCODE_JSON = {"format": "json"}


def sample(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("executor", "settings", "fixture", "expected"),
    [
        # codex: input_tokens already counts the cached ones; no cost field
        ("codex", CODEX_JSON, "codex-one-turn.jsonl", Usage(321, 7, None)),
        ("codex", CODEX_JSON, "codex-two-turns-noise.log", Usage(24763 + 31002, 122 + 418, None)),
        ("codex", CODEX_JSON, "codex-turn-failed.jsonl", Usage(None, None, None)),
        ("codex", CODEX_JSON, "codex-text.log", Usage(None, None, None)),
        # claude: the last result event; cache creation and cache reads are input tokens
        ("claude", CLAUDE_JSON, "claude-json.json", Usage(123, 4, 0.000715)),
        ("claude", CLAUDE_JSON, "claude-json-verbose.json", Usage(11 + 5306 + 28890, 75, 0.0312)),
        (
            "claude",
            CLAUDE_JSON,
            "claude-json-max-turns.json",
            Usage(21 + 9120 + 30402, 612, 0.0874),
        ),
        (
            "claude",
            CLAUDE_STREAM,
            "claude-stream-json.jsonl",
            Usage(10 + 7161 + 7021, 107, 0.0521925),
        ),
        (
            "claude",
            CLAUDE_STREAM,
            "claude-stream-json-retry.log",
            Usage(52 + 2048 + 1024, 3, 0.0108),
        ),
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
    assert read_usage(executor, settings, sample(fixture)) == expected


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
    assert read_usage(executor, settings, sample(fixture)) == Usage(None, None, None)


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
    assert read_usage("claude", CLAUDE_JSON, text) == Usage(10, 2, 0.5)


def test_claude_uses_the_last_result_only() -> None:
    first = '{"type":"result","total_cost_usd":0.25,"usage":{"input_tokens":100,"output_tokens":9}}'
    last = '{"type":"result","total_cost_usd":0.01,"usage":{"input_tokens":7,"output_tokens":1}}'
    assert read_usage("claude", CLAUDE_STREAM, f"{first}\n{last}\n") == Usage(7, 1, 0.01)


def test_missing_figures_stay_none() -> None:
    claude_cost_only = '{"type":"result","total_cost_usd":0.02}\n'
    assert read_usage("claude", CLAUDE_JSON, claude_cost_only) == Usage(None, None, 0.02)
    claude_no_cost = '{"type":"result","usage":{"cache_read_input_tokens":50,"output_tokens":3}}'
    assert read_usage("claude", CLAUDE_JSON, claude_no_cost) == Usage(50, 3, None)
    codex_output_only = '{"type":"turn.completed","usage":{"output_tokens":4}}\n'
    assert read_usage("codex", CODEX_JSON, codex_output_only) == Usage(None, 4, None)
    opencode_cost_only = '{"type":"step_finish","part":{"cost":0.003}}\n'
    assert read_usage("opencode", OPENCODE_JSON, opencode_cost_only) == Usage(None, None, 0.003)
    opencode_no_cache = '{"type":"step_finish","part":{"tokens":{"input":9,"output":1}}}\n'
    assert read_usage("opencode", OPENCODE_JSON, opencode_no_cache) == Usage(9, 1, None)


def test_values_of_the_wrong_type_are_ignored() -> None:
    text = (
        '{"type":"turn.completed","usage":{"input_tokens":"12","output_tokens":true}}\n'
        '{"type":"turn.completed","usage":"none"}\n'
        '{"type":"turn.completed","usage":{"input_tokens":-3,"output_tokens":5.0}}\n'
    )
    assert read_usage("codex", CODEX_JSON, text) == Usage(None, 5, None)
    bad_cost = '{"type":"result","total_cost_usd":"0.1","usage":[]}\n'
    assert read_usage("claude", CLAUDE_JSON, bad_cost) == Usage(None, None, None)


def test_empty_and_torn_output() -> None:
    for executor, settings in (
        ("codex", CODEX_JSON),
        ("claude", CLAUDE_STREAM),
        ("opencode", OPENCODE_JSON),
    ):
        assert read_usage(executor, settings, "") == Usage()
        assert read_usage(executor, settings, '{"type":"result","usage":{"inp') == Usage()
