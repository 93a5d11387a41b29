"""An agent's live state read from its CLI's event stream, on real-shaped output.

The streams are the samples of ``tests/fixtures/usage/`` and ``tests/fixtures/markers/``
(shaped after ``shared/agent-clis.md``, some captured from the real CLIs against the provider
mock), written into a log piece by piece as an agent writes it, and followed from the file.
The totals a follower ends on are checked against ``agents.usage``, which reads the same log
at the end: the two views of one stream must agree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from wave_orchestrator.agents.executors import build_command
from wave_orchestrator.agents.stream_state import (
    MAX_LINE,
    READ_CHUNK,
    StreamFollower,
    StreamParser,
    streams_events,
)
from wave_orchestrator.agents.usage import read_usage_file
from wave_orchestrator.definitions.model import ExecutorSpec
from wave_orchestrator.definitions.sections.executor_options import (
    BUILTIN_SETTINGS,
    merge_settings,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
USAGE = FIXTURES / "usage"
MARKERS = FIXTURES / "markers"
STREAM_SETTINGS: dict[str, dict[str, Any]] = {
    "claude": {"output_format": "stream-json"},
    "codex": {"json": True},
    "opencode": {"format": "json"},
}
CLAUDE_SESSION = "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f"
OPENCODE_SESSION = "ses_3f99c1d27ffeAb1Cd3Ef5Gh7Ij"
THREAD_1 = "0199f5a2-3c41-7d30-9a6e-5b1f0c2e8d47"
THREAD_2 = "0199f5a4-1c2d-7e3f-8a4b-5c6d7e8f9a0b"


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


class Log:
    """An output.log an agent appends to, and the follower that reads it."""

    def __init__(self, tmp_path: Path, executor: str) -> None:
        self.path = tmp_path / "output.log"
        self.path.write_bytes(b"")
        self.follower = StreamFollower(executor, self.path)

    def write(self, text: str | bytes) -> bool:
        data = text.encode() if isinstance(text, str) else text
        with self.path.open("ab") as fh:
            fh.write(data)
        return self.follower.update()

    def event(self, event: dict[str, Any]) -> bool:
        return self.write(json.dumps(event) + "\n")

    @property
    def state(self) -> dict[str, Any]:
        return self.follower.state.to_dict()


def assert_agrees_with_usage(log: Log, executor: str) -> None:
    """The follower's totals are the ones the end-of-run usage reader finds in the log."""
    usage = read_usage_file(executor, STREAM_SETTINGS[executor], log.path)
    state = log.state
    assert state["input_tokens"] == (usage.input_tokens or 0)
    assert state["output_tokens"] == (usage.output_tokens or 0)
    assert state["cost_usd"] == usage.cost_usd
    assert state["turns"] == (usage.turns or 0)
    assert state["tool_calls"] == (usage.tool_calls or 0)


# -- each CLI, event by event ------------------------------------------------------------------


def test_claude_stream_moves_from_tool_to_writing_and_sums_its_result(tmp_path: Path) -> None:
    log = Log(tmp_path, "claude")
    init, tool, result_of_tool, text, result = lines_of(USAGE / "claude-stream-json.jsonl")

    assert log.write(init)
    assert log.state["activity"] == "thinking"
    assert log.state["conversation"] == CLAUDE_SESSION

    assert log.write(tool)
    assert (log.state["activity"], log.state["tool"]) == ("tool", "Bash")
    assert (log.state["tool_calls"], log.state["turns"]) == (1, 1)
    assert (log.state["input_tokens"], log.state["output_tokens"]) == (4 + 7021, 88)
    assert log.state["cost_usd"] is None  # claude says its cost only at the end

    assert log.write(result_of_tool)
    assert (log.state["activity"], log.state["tool"]) == ("thinking", "")

    assert log.write(text)
    assert log.state["activity"] == "writing"
    assert log.state["last_line"] == "[wave] AGENT_DONE status=success"
    assert log.state["turns"] == 2
    assert log.state["input_tokens"] == 4 + 7021 + 6 + 140 + 7021

    assert log.write(result)
    assert log.state["activity"] == "idle"
    assert log.state["cost_usd"] == pytest.approx(0.0521925)
    assert log.state["events"] == 5
    assert log.follower.state.active
    assert_agrees_with_usage(log, "claude")


def test_claude_blocks_of_one_message_count_one_turn_and_one_usage(tmp_path: Path) -> None:
    """claude sends each block of a message as its own event, with the message's usage."""
    log = Log(tmp_path, "claude")
    usage = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}
    for block in (
        {"type": "thinking", "thinking": "plan"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "Grep", "input": {}},
    ):
        message = {"id": "msg_1", "role": "assistant", "content": [block], "usage": usage}
        log.event({"type": "assistant", "message": message, "parent_tool_use_id": None})
    assert log.state["turns"] == 1
    assert log.state["tool_calls"] == 2
    assert (log.state["input_tokens"], log.state["output_tokens"]) == (100, 5)
    assert log.state["tool"] == "Grep"


def test_claude_tries_add_up_across_inits(tmp_path: Path) -> None:
    """A retried try's result covers that try only: the earlier try's spend is kept."""
    log = Log(tmp_path, "claude")
    for cost, tokens in ((0.25, 1000), (0.5, 3000)):
        log.event({"type": "system", "subtype": "init", "session_id": CLAUDE_SESSION})
        log.write("[wave] rate limited: try 1/3, retrying in 1s\n")
        log.event(
            {
                "type": "result",
                "subtype": "success",
                "num_turns": 3,
                "total_cost_usd": cost,
                "usage": {"input_tokens": tokens, "output_tokens": 10},
                "session_id": CLAUDE_SESSION,
            }
        )
    assert log.state["cost_usd"] == pytest.approx(0.75)
    assert (log.state["input_tokens"], log.state["output_tokens"]) == (4000, 20)
    assert log.state["turns"] == 6


def test_codex_json_shows_the_command_then_the_message(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    lines = lines_of(MARKERS / "codex-json-cat-docs.jsonl")
    log.write(lines[0])
    assert log.state["conversation"] == "0199f5a4-1c2d-7e3f-8a4b-5c6d7e8f9a0b"
    log.write("".join(lines[1:3]))
    assert log.state["activity"] == "thinking"
    log.write(lines[3])  # item.started command_execution
    assert (log.state["activity"], log.state["tool"]) == ("tool", "command")
    assert log.state["tool_calls"] == 0
    log.write(lines[4])  # item.completed: the model reads its output
    assert (log.state["activity"], log.state["tool_calls"]) == ("thinking", 1)
    log.write(lines[5])  # file_change
    log.write(lines[6])  # agent_message
    assert log.state["activity"] == "writing"
    assert log.state["last_line"] == "[wave-verdict] pass detail=ready to ship"
    assert log.state["turns"] == 0
    log.write("".join(lines[7:]))
    assert log.state["activity"] == "idle"
    assert log.state["last_line"].startswith("Double-checked the prompt")
    assert (log.state["input_tokens"], log.state["output_tokens"]) == (18211, 611)
    assert (log.state["turns"], log.state["tool_calls"]) == (1, 3)
    assert log.state["cost_usd"] is None  # codex reports no cost
    assert_agrees_with_usage(log, "codex")


def test_codex_turns_sum_over_a_noisy_log(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    for line in lines_of(USAGE / "codex-two-turns-noise.log"):
        log.write(line)
    assert log.state["input_tokens"] == 24763 + 31002
    assert_agrees_with_usage(log, "codex")


def test_opencode_json_tool_text_and_step_cost(tmp_path: Path) -> None:
    log = Log(tmp_path, "opencode")
    lines = lines_of(MARKERS / "opencode-json-tool-output.jsonl")
    log.write(lines[0] + lines[1])
    assert log.state["activity"] == "thinking"
    assert log.state["conversation"] == OPENCODE_SESSION
    log.write(lines[2])
    assert (log.state["activity"], log.state["tool"], log.state["tool_calls"]) == (
        "tool",
        "bash",
        1,
    )
    log.write(lines[3])
    assert log.state["activity"] == "writing"
    assert log.state["last_line"] == "[wave-verdict] pass"
    log.write("".join(lines[4:]))
    assert log.state["activity"] == "idle"
    assert (log.state["input_tokens"], log.state["output_tokens"]) == (222, 5)
    assert log.state["cost_usd"] == pytest.approx(0.000741)
    assert_agrees_with_usage(log, "opencode")


def test_opencode_steps_sum_over_a_noisy_log(tmp_path: Path) -> None:
    log = Log(tmp_path, "opencode")
    log.write(USAGE.joinpath("opencode-two-steps-noise.log").read_bytes())
    assert log.state["turns"] == 2
    assert log.state["cost_usd"] is not None and log.state["cost_usd"] > 0
    assert_agrees_with_usage(log, "opencode")


# -- reading the log ---------------------------------------------------------------------------


def test_a_line_split_across_two_reads_is_applied_once_whole(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    line = json.dumps({"type": "thread.started", "thread_id": THREAD_1}) + "\n"
    assert not log.write(line[:20])
    assert log.state["events"] == 0
    assert log.write(line[20:])
    assert (log.state["events"], log.state["conversation"]) == (1, THREAD_1)
    assert not log.follower.update()  # nothing new: nothing changes, nothing read twice
    assert log.state["events"] == 1


def test_a_truncated_log_is_a_new_stream(tmp_path: Path) -> None:
    log = Log(tmp_path, "opencode")
    for line in lines_of(MARKERS / "opencode-json-tool-output.jsonl"):
        log.write(line)
    assert log.state["tool_calls"] == 2
    log.path.write_text(
        json.dumps(
            {"type": "step_start", "sessionID": "ses_3f99e0a41ffe7Hk2Lm9Np4Qr5S", "part": {}}
        )
        + "\n"
    )
    assert log.follower.update()
    assert log.state["conversation"] == "ses_3f99e0a41ffe7Hk2Lm9Np4Qr5S"
    assert (log.state["tool_calls"], log.state["events"], log.state["cost_usd"]) == (0, 1, None)


def test_a_replaced_log_is_a_new_stream(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    log.event({"type": "thread.started", "thread_id": THREAD_1})
    log.event({"type": "turn.started"})
    fresh = tmp_path / "fresh.log"
    fresh.write_text("\n" * 200 + json.dumps({"type": "thread.started", "thread_id": THREAD_2}))
    fresh.write_text(fresh.read_text() + "\n")  # longer than the old log: no shrink to see
    os.replace(fresh, log.path)
    assert log.follower.update()
    assert (log.state["conversation"], log.state["events"]) == (THREAD_2, 1)


def test_a_big_log_is_read_a_bounded_slice_at_a_time(tmp_path: Path) -> None:
    log = Log(tmp_path, "opencode")
    step = lines_of(USAGE / "opencode-one-step.jsonl")
    body = "".join(step) * (3 * READ_CHUNK // len("".join(step)) + 1)
    with log.path.open("a") as fh:
        fh.write(body)
    offsets = []
    while log.follower.update() or log.follower.behind:
        offsets.append(log.follower.offset)
        assert offsets[-1] - (offsets[-2] if len(offsets) > 1 else 0) <= READ_CHUNK
    assert len(offsets) >= 3
    assert log.follower.offset == log.path.stat().st_size
    assert_agrees_with_usage(log, "opencode")


def test_a_line_over_the_limit_is_dropped_and_never_held(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    huge = json.dumps({"type": "thread.started", "thread_id": "x" * (3 * MAX_LINE)})
    log.write(huge[: MAX_LINE // 2])
    for start in range(MAX_LINE // 2, len(huge), READ_CHUNK):
        log.write(huge[start : start + READ_CHUNK])
        assert len(log.follower._partial) <= MAX_LINE
    log.write("\n" + json.dumps({"type": "thread.started", "thread_id": THREAD_2}) + "\n")
    assert (log.state["events"], log.state["conversation"]) == (1, THREAD_2)


@pytest.mark.parametrize("kind", ["fifo", "symlink", "missing", "folder"])
def test_a_log_that_is_no_regular_file_is_not_read(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "real.log"
    target.write_text(json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n")
    path = tmp_path / "output.log"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading must not wait for a writer
    elif kind == "symlink":
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
    follower = StreamFollower("codex", path)
    assert not follower.update()
    assert follower.state.events == 0


# -- hostile and foreign output ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("executor", "fixture"),
    [
        ("codex", USAGE / "codex-text.log"),
        ("claude", FIXTURES / "limits" / "claude-credit-balance.log"),
        ("opencode", FIXTURES / "limits" / "opencode-openai-quota.ansi.log"),
        ("local", USAGE / "claude-stream-json.jsonl"),  # no stream for a local command
    ],
)
def test_text_mode_output_leaves_the_state_empty(
    tmp_path: Path, executor: str, fixture: Path
) -> None:
    log = Log(tmp_path, executor)
    assert not log.write(fixture.read_bytes())
    assert not log.follower.state.active
    assert log.state == StreamParser(executor).state.to_dict()


def test_events_of_another_cli_change_nothing_but_the_count(tmp_path: Path) -> None:
    log = Log(tmp_path, "codex")
    log.write(USAGE.joinpath("claude-stream-json.jsonl").read_bytes())
    state = log.state
    assert state["events"] == 5
    assert {k: v for k, v in state.items() if k != "events"} == {
        k: v for k, v in StreamParser("codex").state.to_dict().items() if k != "events"
    }


NOT_IDS = ["../../etc/passwd", "x" * 129, "", 5, None, ["a"], "ses 1", "ses_\u00e9abcdef"]


@pytest.mark.parametrize(
    "conversation",
    [*NOT_IDS, OPENCODE_SESSION + "\n", OPENCODE_SESSION + "/../x", "ses_" + "a" * 65],
)
def test_an_opencode_session_id_of_another_shape_is_ignored(
    tmp_path: Path, conversation: Any
) -> None:
    log = Log(tmp_path, "opencode")
    log.event({"type": "step_start", "sessionID": OPENCODE_SESSION, "part": {}})
    log.event({"type": "step_start", "sessionID": conversation, "part": {}})
    assert log.state["conversation"] == OPENCODE_SESSION
    assert log.state["events"] == 2


@pytest.mark.parametrize("conversation", [*NOT_IDS, THREAD_2 + "\n", THREAD_2.upper()])
def test_a_codex_or_claude_id_of_another_shape_is_ignored(
    tmp_path: Path, conversation: Any
) -> None:
    (tmp_path / "claude").mkdir()
    codex, claude = Log(tmp_path, "codex"), Log(tmp_path / "claude", "claude")
    codex.event({"type": "thread.started", "thread_id": THREAD_1})
    codex.event({"type": "thread.started", "thread_id": conversation})
    claude.event({"type": "system", "subtype": "init", "session_id": CLAUDE_SESSION})
    claude.event({"type": "result", "session_id": conversation})
    assert (codex.state["conversation"], claude.state["conversation"]) == (
        THREAD_1,
        CLAUDE_SESSION,
    )


def test_hostile_lines_are_skipped_and_values_bounded(tmp_path: Path) -> None:
    log = Log(tmp_path, "claude")
    nan_usage = '{"type":"result","total_cost_usd":NaN,"usage":{"input_tokens":5}}'
    with capture_logs() as logged:
        log.write(
            "\n".join(
                [
                    '{"type": 5}',
                    "[1, 2, 3]",
                    '{"type": "assistant", "message": [1, 2]}',
                    '{"type": "assistant", "message": {"content": {"a": 1}, "usage": "x"}}',
                    '{"type": "assistant", "message": {"content": [5, null, {"type": 7}]}}',
                    '{"type": "result", "total_cost_usd": -1, "num_turns": "many"}',
                    nan_usage,
                    '{"type": "result", "total_cost_usd": 1e400}',
                    '{"type": "result", "usage": {"input_tokens": 123456789012345678901234}}',
                    '{"type": "user", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                    '{"type": "system", "subtype": "init", "session_id": "a/../b"}',
                    "{not json",
                ]
            )
            + "\n"
        )
    assert not [e for e in logged if e["log_level"] == "warning"]
    state = log.state
    assert state["events"] == 5  # objects with a text type; NaN, 1e400, 10**23, depth refused
    assert state["cost_usd"] is None  # neither -1, NaN nor 1e400 counts as a cost
    assert (state["input_tokens"], state["conversation"]) == (0, "")
    assert state["turns"] == 2  # the two messages that were objects, whatever they held


def test_text_and_tool_names_are_cleaned_and_bounded(tmp_path: Path) -> None:
    log = Log(tmp_path, "claude")
    text = (
        "x" * 200_000
        + "\n\x1b]0;owned\x07\x1b[31mdone with key sk-ant-abcdefghijklmnopqrstuv\n  \n"
    )
    name = "\x1b[2J" + "T" * 10_000
    message = {
        "id": "m1",
        "content": [{"type": "text", "text": text}, {"type": "tool_use", "name": name}],
        "usage": {"input_tokens": 2**62, "output_tokens": 2**62},
    }
    line = json.dumps({"type": "assistant", "message": message})
    assert len(line) > 200 * 1024
    log.write(line + "\n")
    log.event({"type": "assistant", "message": dict(message, id="m2")})
    state = log.state
    assert state["tool"] == "T" * 64
    assert state["last_line"] == "done with key ***"
    assert state["input_tokens"] == state["output_tokens"] == 10**15
    json.dumps(state, allow_nan=False)


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
REAL_KEYS = st.sampled_from(
    ["message", "content", "usage", "item", "part", "text", "name", "tool", "id", "tokens"]
)
EVENT_TYPES = st.sampled_from(
    [
        *("system", "assistant", "user", "result", "thread.started", "item.started"),
        *("item.completed", "turn.completed", "step_start", "tool_use", "text", "step_finish"),
        "reasoning",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    executor=st.sampled_from(["claude", "codex", "opencode"]),
    events=st.lists(
        st.fixed_dictionaries({"type": EVENT_TYPES}, optional={"subtype": st.just("init")}).flatmap(
            lambda base: st.dictionaries(REAL_KEYS, JUNK, max_size=4).map(lambda d: d | base)
        ),
        max_size=8,
    ),
)
def test_no_event_shape_breaks_the_parser(executor: str, events: list[dict[str, Any]]) -> None:
    parser = StreamParser(executor)
    with capture_logs() as logged:
        for event in events:
            parser.feed(event)
    assert not [e for e in logged if e["log_level"] == "warning"]
    state = parser.state.to_dict()
    json.dumps(state, allow_nan=False)
    assert state["activity"] in ("thinking", "tool", "writing", "idle", "")
    assert all(isinstance(state[k], int) and state[k] >= 0 for k in ("turns", "input_tokens"))
    assert len(state["tool"]) <= 64 and len(state["last_line"]) <= 200


# -- which agents stream -----------------------------------------------------------------------


def spec_for(executor: str, **block: Any) -> ExecutorSpec:
    return ExecutorSpec(
        id=executor,
        settings={
            ex: merge_settings(base, block if ex == executor else {})
            for ex, base in BUILTIN_SETTINGS.items()
        },
    )


@pytest.mark.parametrize(
    ("executor", "block", "streams"),
    [
        ("claude", {"output_format": "stream-json"}, True),
        ("claude", {"output_format": "json"}, False),
        ("claude", {"output_format": "text"}, False),
        ("codex", {"json": True}, True),
        ("codex", {"json": False}, False),
        ("opencode", {"format": "json"}, True),
        ("opencode", {"format": "default"}, False),
    ],
)
def test_streams_events_reads_the_argv_wave_builds(
    executor: str, block: dict[str, Any], streams: bool
) -> None:
    argv = build_command(spec_for(executor, **block), executor, "A1").argv
    assert streams_events(executor, argv) is streams


def test_streams_events_reads_both_option_forms_and_stops_at_the_end_of_options() -> None:
    assert streams_events("claude", ["claude", "-p", "--output-format=stream-json"])
    assert streams_events("opencode", ["opencode", "run", "--format=json"])
    assert not streams_events("codex", ["codex", "exec", "--", "--json"])
    assert not streams_events("local", ["./agent", "--json"])
