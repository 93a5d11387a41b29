"""The real codex, claude and opencode continue their conversation after a usage limit: the
provider mock answers an agent's first turn with the provider's own usage-limit response, the
CLI ends on its usage-limit words with a reset a moment away, wave parks the agent, and after
the reset its next try resumes the same conversation: the CLI accepts it, sends the provider
the earlier conversation (the task first) with wave's note last, and the agent succeeds.

codex and claude name the reset as a clock minute (``try again at 10:13 PM``, ``resets
10:13pm (UTC)``) and wave waits for that minute's end, so their test waits up to a minute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo
from provider_mock import ProviderMock, Request
from test_real_clis import AGENT, cli_agent, launch, output

pytestmark = pytest.mark.e2e

CLIS = ("codex", "claude", "opencode")
TASK = "Write the word kestrel-41 and stop."
NOTE = "The previous run stopped: usage limit until"
# How many of the agent's turns get the limit: opencode tries a 429 once and retries it five
# times (retry-after seconds apart) before it ends on it; codex and claude end on the first.
TIMES = {"codex": 1, "claude": 1, "opencode": 6}
# What each CLI printed when it met the limit, in its own words.
LIMIT_WORDS = {
    "codex": "hit your usage limit",
    "claude": "You've hit your session limit · resets",
    "opencode": "5-hour usage limit reached. It will reset in 1 seconds.",
}
WAIT = "usage_limit: {margin_seconds: 1}\n"  # relaunched a second after the reset


def continuable_agent(cli: str, base_url: str, folder: Path) -> dict[str, Any]:
    """The agent of ``test_real_clis`` with what lets its conversation be continued: codex
    keeps its session (not ephemeral); claude signs in as a subscriber (its usage limit comes
    with the unified rate-limit headers only then)."""
    agent = cli_agent(cli, base_url, folder)
    agent["prompt"] = TASK
    executor = agent["executor"]
    if cli == "codex":
        executor["codex"].pop("ephemeral")
    elif cli == "claude":
        executor["env"].pop("ANTHROPIC_API_KEY")
        executor["env"]["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-mock"
    return agent


def user_texts(request: Request) -> list[str]:
    """The text of each user message of the conversation ``request`` sent, in order."""
    body = request.body
    items = body.get("input") if request.api == "responses" else body.get("messages")
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            parts = [c.get("text") for c in content if isinstance(c, dict)]
            out.append("\n".join(p for p in parts if isinstance(p, str)))
    return out


def turns(mock: ProviderMock, mode: str) -> list[Request]:
    """The agent's turns the mock got (requests that offer tools), in order."""
    return [r for r in mock.requests(mode) if r.method == "POST" and r.body.get("tools")]


def events(repo: Repo, name: str) -> list[dict[str, Any]]:
    return [e for e in repo.events("main") if e["event"] == name and e.get("agent") == AGENT]


@pytest.mark.parametrize("cli", CLIS)
def test_real_cli_continues_its_conversation_after_a_usage_limit(
    cli: str, tmux_repo: Repo, agent_clis: Path, provider_mock: ProviderMock
) -> None:
    mode = provider_mock.limited(TIMES[cli], reset_seconds=1)
    agent = continuable_agent(cli, provider_mock.url(mode), tmux_repo.root.parent)
    launch(tmux_repo, agent_clis, agent, WAIT)

    assert provider_mock.limits_served(mode) == TIMES[cli]
    [limited] = events(tmux_repo, "agent_limited")
    agent_dir = tmux_repo.agent_dir("main", 1, AGENT)
    [parked_log] = agent_dir.glob("attempt-1.limited*.log")
    parked = parked_log.read_text(errors="replace")
    assert LIMIT_WORDS[cli] in parked, limited

    # The next try continued the conversation the parked one had, and the CLI kept it: the
    # id it says in its events is that conversation's, not a new one.
    record = json.loads((agent_dir / "launch.json").read_text())
    conversation = record.get("continues")
    assert conversation and conversation == record["conversation"], record
    assert conversation in parked and conversation in output(tmux_repo), output(tmux_repo)
    assert tmux_repo.status("main", 1, AGENT)["code"] == 0, output(tmux_repo)
    [finished] = events(tmux_repo, "agent_finished")
    assert finished["status"] == "success", finished
    assert "Hello from the mock" in output(tmux_repo)

    asked = turns(provider_mock, mode)
    first, resumed = asked[0], asked[-1]
    assert len(asked) == TIMES[cli] + 1, [user_texts(r) for r in asked]
    before, said = user_texts(first), user_texts(resumed)
    # The same conversation, replayed by the CLI itself (the API keeps none): each user
    # message the first turn sent, the task among them, then wave's note last; not the note
    # alone, nor the task sent anew. (claude adds its own "Continue from where you left off."
    # to the message its failed turn ended on: a replayed message may have grown.)
    assert any(TASK in text for text in before), before
    assert len(said) == len(before) + 1, said
    assert all(now.startswith(then) for then, now in zip(before, said, strict=False)), said
    assert said[-1].startswith(NOTE), said
    assert sum(TASK in text for text in said) == 1, said
