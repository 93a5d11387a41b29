"""The provider mock the real-CLI tests rely on: a tool call where one is due, text once the
tool's result is back, 404 for what it does not speak, and nothing left once it stops."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from provider_mock import ANSWER, TOOL_ANSWER, running_provider_mock


def post(url: str, body: dict[str, Any]) -> str:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.read().decode())


def test_each_api_gets_the_tool_call_then_the_text() -> None:
    tool_result: dict[str, dict[str, Any]] = {
        "responses": {"input": [{"type": "function_call_output", "output": "ok"}]},
        "messages": {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
        "chat/completions": {"messages": [{"role": "tool", "content": "ok"}]},
    }
    # The session's shared mock (another test's fixture) may be serving: only this one's thread
    # must be gone once it stops.
    others = {t for t in threading.enumerate() if t.name == "provider-mock"}
    with running_provider_mock() as mock:
        assert {t for t in threading.enumerate() if t.name == "provider-mock"} - others
        mode = mock.shell("touch made-by-tool")
        for path, done in tool_result.items():
            url = f"{mock.url(mode)}/v1/{path}"
            asked: dict[str, Any] = {"stream": True, "tools": [{"name": "exec_command"}]}
            call = post(url, asked)
            assert "touch made-by-tool" in call and TOOL_ANSWER not in call
            assert TOOL_ANSWER in post(url, {**asked, **done})
        assert len(mock.served(mode)) == 6 and len(mock.tool_results(mode)) == 3
        plain = mock.ok()
        assert ANSWER in post(f"{mock.url(plain)}/v1/messages", {"stream": True})
        assert mock.served(plain)[0].input_tokens == 123
        for url in (f"{mock.root}/v1/models", f"{mock.url(plain)}/v1/models", mock.root):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(url, timeout=10)
            assert refused.value.code == 404
        port = int(mock.root.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    assert not {t for t in threading.enumerate() if t.name == "provider-mock"} - others
