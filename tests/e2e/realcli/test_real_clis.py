"""The real codex, claude and opencode CLIs launched by `wave launch` against the provider mock:
each finishes its run, wave reads its tokens from what the CLI itself printed, and a tool call
the model asks for really runs in the agent's workspace. Sandboxed under bubblewrap, the same
run still finishes and writes its workspace, while its writes to HOME and beside the
repository are refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_init, local_lane
from provider_mock import ProviderMock

pytestmark = pytest.mark.e2e

CLIS = ("codex", "claude", "opencode")
AGENT = "A1"
WROTE = "wrote-by-tool.txt"
# Outside the sandbox every write below succeeds; inside, only the workspace's.
ESCAPING = (
    f"echo inside > {WROTE}\n"
    f'if echo x >> "$HOME/.bashrc"; then echo bashrc=written; else echo bashrc=refused; fi'
    f" >> {WROTE}\n"
    "echo x > ../beside-the-repo.txt\n"
    "true"
)
# What the runner's own environment could point the CLIs at instead of the test's folders.
RUNNER_VARIABLES = (
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)


def opencode_config(base_url: str) -> dict[str, Any]:
    """opencode's provider settings: an OpenAI-compatible provider at the mock, with a price
    (dollars per million tokens) so that it reports a cost."""
    model = {
        "name": "Mock",
        "cost": {"input": 3, "output": 15},
        "limit": {"context": 100000, "output": 8000},
    }
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Mock OpenAI-compatible",
        "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-mock"},
        "models": {"mock-model": model},
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": "mock/mock-model",
        "provider": {"mock": provider},
    }


def cli_agent(cli: str, base_url: str, folder: Path) -> dict[str, Any]:
    """The wave-file agent running ``cli`` against the mock at ``base_url``."""
    agent: dict[str, Any] = {"id": AGENT, "prompt": "Say hello."}
    if cli == "codex":
        provider = (
            f'model_providers.mock={{name="mock",base_url="{base_url}/v1",'
            'env_key="OPENAI_API_KEY",wire_api="responses"}'
        )
        agent["executor"] = {
            "id": "codex",
            # codex's default model gets its tools as one code-mode tool: no shell call to make
            "model": "gpt-5.5",
            "env": {"OPENAI_API_KEY": "sk-mock"},
            "codex": {
                "json": True,
                "ephemeral": True,
                "sandbox": "danger-full-access",  # its own sandbox cannot start inside wave's
                "config": [provider, "model_provider=mock"],
            },
        }
    elif cli == "claude":
        agent["executor"] = {
            "id": "claude",
            "env": {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-mock"},
            "claude": {"output_format": "stream-json", "permission_mode": "bypassPermissions"},
        }
    else:
        config = folder / "opencode-mock.json"
        config.write_text(json.dumps(opencode_config(base_url)))
        agent["executor"] = {
            "id": "opencode",
            "model": "mock/mock-model",
            "env": {"OPENCODE_CONFIG": str(config)},
            "opencode": {"format": "json", "auto": True},
        }
    return agent


def launch(repo: Repo, clis: Path, agent: dict[str, Any], lane_extra: str = "") -> None:
    """Run a lane of one wave whose one agent is ``agent``, with a private HOME and TMPDIR
    and the real CLIs first on PATH, until `wave launch` returns; it must succeed."""
    home, scratch = repo.root.parent / "home", repo.root.parent / "tmp"
    home.mkdir()
    scratch.mkdir()
    for name in RUNNER_VARIABLES:
        repo.env.pop(name, None)
    # TMPDIR: opencode leaves a 5 MB library in it after every run
    repo.env.update(HOME=str(home), TMPDIR=str(scratch), PATH=f"{clis}:{repo.env['PATH']}")
    repo.lane("main", local_lane() + lane_extra, {1: f"agents:\n  - {json.dumps(agent)}\n"})
    git_init(repo.root)
    result = repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=150)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{output(repo)}"


def output(repo: Repo) -> str:
    log = repo.agent_dir("main", 1, AGENT) / "output.log"
    return log.read_text(errors="replace") if log.exists() else "(no output.log)"


def metrics(repo: Repo) -> dict[str, Any]:
    """The agent's one metrics record."""
    lines = (repo.state("main") / "metrics.jsonl").read_text().splitlines()
    rows: list[dict[str, Any]] = [
        row for row in map(json.loads, lines) if row.get("agent") == AGENT
    ]
    assert len(rows) == 1, rows
    return rows[0]


def assert_succeeded_with_the_served_tokens(
    repo: Repo, mock: ProviderMock, mode: str, cli: str
) -> dict[str, Any]:
    """The agent succeeded and its tokens are those the mock's answers reported, summed: wave
    read them from the CLI's own output."""
    status = repo.status("main", 1, AGENT)
    assert status["code"] == 0, output(repo)
    row = metrics(repo)
    served = mock.served(mode)
    assert served, "the CLI never asked the mock"
    tokens_in = sum(s.input_tokens for s in served)
    tokens_out = sum(s.output_tokens for s in served)
    assert (row["status"], row["executor"]) == ("success", cli)
    assert (row["input_tokens"], row["output_tokens"]) == (tokens_in, tokens_out), output(repo)
    if cli == "opencode":  # the price its config gives, per million tokens
        assert row["cost_usd"] == pytest.approx((3 * tokens_in + 15 * tokens_out) / 1e6)
    return row


@pytest.mark.parametrize("cli", CLIS)
def test_real_cli_finishes_and_its_tokens_are_read(
    cli: str, tmux_repo: Repo, agent_clis: Path, provider_mock: ProviderMock
) -> None:
    mode = provider_mock.ok()
    agent = cli_agent(cli, provider_mock.url(mode), tmux_repo.root.parent)
    launch(tmux_repo, agent_clis, agent)
    row = assert_succeeded_with_the_served_tokens(tmux_repo, provider_mock, mode, cli)
    assert row.get("tool_calls", 0) == 0
    assert "Hello from the mock" in output(tmux_repo)


@pytest.mark.parametrize("cli", CLIS)
def test_real_cli_tool_call_writes_in_its_workspace(
    cli: str, tmux_repo: Repo, agent_clis: Path, provider_mock: ProviderMock
) -> None:
    mode = provider_mock.shell(f"echo written by {cli} > {WROTE}")
    agent = cli_agent(cli, provider_mock.url(mode), tmux_repo.root.parent)
    launch(tmux_repo, agent_clis, agent)
    row = assert_succeeded_with_the_served_tokens(tmux_repo, provider_mock, mode, cli)
    assert (tmux_repo.root / WROTE).read_text() == f"written by {cli}\n", output(tmux_repo)
    assert row["tool_calls"] == 1
    assert provider_mock.tool_results(mode), "the tool's result never went back to the model"


@pytest.mark.parametrize("cli", CLIS)
def test_real_cli_in_bubblewrap_writes_its_workspace_and_nothing_else(
    cli: str, tmux_repo: Repo, agent_clis: Path, provider_mock: ProviderMock
) -> None:
    mode = provider_mock.shell(ESCAPING)
    folder = tmux_repo.root.parent
    agent = cli_agent(cli, provider_mock.url(mode), folder)
    if cli == "opencode":  # its config lies under /tmp, which the sandbox keeps private
        agent["sandbox"] = {"readable": [str(folder / "opencode-mock.json")]}
    launch(tmux_repo, agent_clis, agent, "  sandbox: bubblewrap\n")
    row = assert_succeeded_with_the_served_tokens(tmux_repo, provider_mock, mode, cli)
    assert row["tool_calls"] == 1
    assert (tmux_repo.root / WROTE).read_text() == "inside\nbashrc=refused\n", output(tmux_repo)
    assert not (folder / "home" / ".bashrc").exists()
    assert not (folder / "beside-the-repo.txt").exists()
    # the refusal as the agent's tool reported it, in its log
    refused = re.search(r"/\.bashrc: (Read-only file system|Permission denied)", output(tmux_repo))
    assert refused, output(tmux_repo)
    # its CLI's own folder in the person's HOME, made for it: what it keeps there stays
    kept = {"codex": ".codex", "claude": ".claude", "opencode": ".local/share/opencode"}[cli]
    assert (folder / "home" / kept).is_dir()
