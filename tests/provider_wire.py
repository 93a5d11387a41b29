"""What the provider mock (``provider_mock``) sends: the streamed events of the three APIs the
agent CLIs speak, a short text answer or one call of the CLI's shell tool, each with the token
usage it reports. The shapes are the providers' own, cut down to the fields the CLIs read."""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

Event = tuple[str | None, Any]  # the SSE event name (None: a bare `data:` line) and its data


class Answer(NamedTuple):
    """One answer: its events, or its whole body when no stream was asked for; the tokens it
    reports in and out."""

    events: list[Event]
    input_tokens: int
    output_tokens: int
    whole: dict[str, Any] | None = None


TOOL_USAGE = (100, 20)  # every tool call reports these


def responses_text(model: str, text: str, ident: str) -> Answer:
    """OpenAI Responses API: one assistant message (what codex reads as the agent's answer);
    ``input_tokens`` counts the cached ones, as OpenAI's do."""
    message = {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {
        "input_tokens": 321,
        "input_tokens_details": {"cached_tokens": 100},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 328,
    }
    added = {**message, "status": "in_progress", "content": []}
    events: list[Event] = [
        _responses("response.created", 0, response=_response(ident, model, "in_progress")),
        _responses("response.output_item.added", 1, output_index=0, item=added),
        _responses(
            "response.output_text.delta",
            2,
            item_id=message["id"],
            output_index=0,
            content_index=0,
            delta=text,
        ),
        _responses("response.output_item.done", 3, output_index=0, item=message),
        _responses(
            "response.completed",
            4,
            response=_response(ident, model, "completed", output=[message], usage=usage),
        ),
    ]
    return Answer(events, 321, 7)


def responses_tool_call(model: str, ident: str, command: str, tools: list[Any]) -> Answer:
    """OpenAI Responses API: a function call of the shell tool codex offered (its name and
    arguments differ between codex's tool sets)."""
    arguments: dict[str, Any]
    if "exec_command" in tools:
        name, arguments = "exec_command", {"cmd": command}
    elif "shell_command" in tools:
        name, arguments = "shell_command", {"command": command}
    else:
        name, arguments = "shell", {"command": ["bash", "-lc", command]}
    item = {
        "type": "function_call",
        "id": f"fc_{ident}",
        "call_id": ident,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    tokens_in, tokens_out = TOOL_USAGE
    usage = {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + tokens_out,
    }
    events: list[Event] = [
        _responses("response.created", 0, response=_response(ident, model, "in_progress")),
        _responses(
            "response.output_item.added",
            1,
            output_index=0,
            item={**item, "status": "in_progress"},
        ),
        _responses("response.output_item.done", 2, output_index=0, item=item),
        _responses(
            "response.completed",
            3,
            response=_response(ident, model, "completed", output=[item], usage=usage),
        ),
    ]
    return Answer(events, tokens_in, tokens_out)


def _responses(kind: str, number: int, **fields: Any) -> Event:
    return kind, {"type": kind, "sequence_number": number, **fields}


def _response(ident: str, model: str, status: str, **fields: Any) -> dict[str, Any]:
    created = int(time.time())
    return {
        "id": f"resp_{ident}",
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": [],
        **fields,
    }


def anthropic_text(model: str, text: str, ident: str, streamed: bool) -> Answer:
    """Anthropic Messages API: one text block; the input tokens come in ``message_start``,
    the output tokens in the final ``message_delta``."""
    if not streamed:
        whole = _message(ident, model, [{"type": "text", "text": text}], 123, 4)
        whole["stop_reason"] = "end_turn"
        return Answer([], 123, 4, whole)
    events = _anthropic_block({"type": "text", "text": ""}, {"type": "text_delta", "text": text})
    return Answer(_anthropic_message(ident, model, events, "end_turn", 123, 4), 123, 4)


def anthropic_tool_call(model: str, ident: str, command: str) -> Answer:
    """Anthropic Messages API: a ``tool_use`` block of claude's ``Bash`` tool."""
    arguments = json.dumps({"command": command, "description": "Run the test's command"})
    events = _anthropic_block(
        {"type": "tool_use", "id": f"toolu_{ident}", "name": "Bash", "input": {}},
        {"type": "input_json_delta", "partial_json": arguments},
    )
    tokens_in, tokens_out = TOOL_USAGE
    return Answer(
        _anthropic_message(ident, model, events, "tool_use", tokens_in, tokens_out),
        tokens_in,
        tokens_out,
    )


def _anthropic_block(start: dict[str, Any], delta: dict[str, Any]) -> list[Event]:
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]


def _anthropic_message(
    ident: str, model: str, blocks: list[Event], stop: str, tokens_in: int, tokens_out: int
) -> list[Event]:
    start = _message(ident, model, [], tokens_in, 1)
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": tokens_out},
    }
    return [
        ("message_start", {"type": "message_start", "message": start}),
        *blocks,
        ("message_delta", end),
        ("message_stop", {"type": "message_stop"}),
    ]


def _message(
    ident: str, model: str, content: list[Any], tokens_in: int, tokens_out: int
) -> dict[str, Any]:
    usage = {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


def chat_text(model: str, text: str, ident: str, streamed: bool) -> Answer:
    """OpenAI Chat Completions: the text in one delta, then the usage in a last chunk with no
    choices (what ``stream_options.include_usage`` asks for), then ``[DONE]``."""
    usage = {"prompt_tokens": 222, "completion_tokens": 5, "total_tokens": 227}
    if not streamed:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        whole = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{**choice, "finish_reason": "stop"}],
            "usage": usage,
        }
        return Answer([], 222, 5, whole)
    deltas = [{"role": "assistant", "content": ""}, {"content": text}]
    return Answer(_chat_chunks(ident, model, deltas, "stop", usage), 222, 5)


def chat_tool_call(model: str, ident: str, command: str) -> Answer:
    """OpenAI Chat Completions: a call of opencode's ``bash`` tool, its arguments streamed
    after the call's name."""
    arguments = json.dumps({"command": command, "description": "Run the test's command"})
    first = {
        "index": 0,
        "id": ident,
        "type": "function",
        "function": {"name": "bash", "arguments": ""},
    }
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [first]},
        {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
    ]
    tokens_in, tokens_out = TOOL_USAGE
    usage = {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }
    return Answer(_chat_chunks(ident, model, deltas, "tool_calls", usage), tokens_in, tokens_out)


def _chat_chunks(
    ident: str, model: str, deltas: list[dict[str, Any]], finish: str, usage: dict[str, int]
) -> list[Event]:
    base: dict[str, Any] = {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    choices: list[dict[str, Any]] = [
        {"index": 0, "delta": d, "finish_reason": None} for d in deltas
    ]
    choices.append({"index": 0, "delta": {}, "finish_reason": finish})
    return [
        *((None, {**base, "choices": [c]}) for c in choices),
        (None, {**base, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]


class Refusal(NamedTuple):
    """An error answer: its HTTP status, the headers that carry what the body does not, and
    its JSON body."""

    status: int
    headers: dict[str, str]
    body: dict[str, Any]


def anthropic_usage_limit(reset_at: int) -> Refusal:
    """Anthropic Messages API: a subscription's five-hour window used up, said by the unified
    rate-limit headers (claude reads the reset from them, not from the body, and does not
    retry it): claude prints ``You've hit your session limit · resets <time> (<zone>)``."""
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-reset": str(reset_at),
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-reset": str(reset_at),
        "request-id": "req_mock_limit",
    }
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    return Refusal(429, headers, body)


def responses_usage_limit(reset_at: int) -> Refusal:
    """OpenAI Responses API (ChatGPT sign-in): ``usage_limit_reached`` with the reset, which
    codex prints as ``You've hit your usage limit. … try again at <h:mm AM>.``"""
    error = {
        "type": "usage_limit_reached",
        "message": "The usage limit has been reached",
        "plan_type": "plus",
        "resets_at": reset_at,
        "resets_in_seconds": max(0, reset_at - int(time.time())),
    }
    return Refusal(429, {"x-request-id": "req_mock_limit"}, {"error": error})


def chat_usage_limit(reset_seconds: int, message: str) -> Refusal:
    """OpenAI Chat Completions (OpenCode Go): ``GoUsageLimitError``, its reset in
    ``retry-after``; opencode retries it as it says, then ends on ``message``."""
    error = {"type": "GoUsageLimitError", "message": message}
    body = {"type": "error", "error": error, "metadata": {"limitName": "5-hour"}}
    return Refusal(429, {"retry-after": str(reset_seconds)}, body)
