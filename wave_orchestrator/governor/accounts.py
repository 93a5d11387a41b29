"""Which account an agent's usage counts against (docs/launcher.md, "Accounts"): a limit hit by
one agent is hit by every agent logged in the same way.

An account is the executor plus what selects its login: one of lane.yaml's ``accounts`` when
the agent names it, else the API-key variable it would use (as a short digest, never the key),
else its config home (``CODEX_HOME``, ``CLAUDE_CONFIG_DIR``, opencode's data folder). A
``local`` agent (a person's script, often wrapping one of these CLIs) uses its named account,
else ``local``: its usage limit holds the lane's other local agents as one login's would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

# The variables each CLI takes a key from, first the one it prefers (../shared/agent-clis.md).
API_KEYS = {
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
    "claude": ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"),
    "opencode": ("OPENCODE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
}
CONFIG_HOMES = {
    "codex": ("CODEX_HOME", "~/.codex", ""),
    "claude": ("CLAUDE_CONFIG_DIR", "~/.claude", ""),
    "opencode": ("XDG_DATA_HOME", "~/.local/share", "/opencode"),
}


def account_of(
    executor: str,
    named: str | None,
    agent_env: Mapping[str, str],
    launcher_env: Mapping[str, str],
) -> str | None:
    """The account an agent on ``executor`` uses: ``named`` (a lane account of that executor),
    ``claude:key-1a2b3c4d``, ``claude:~/.claude`` or ``local``; None for an executor not known."""
    if named:
        return named
    if executor == "local":
        return "local"
    if executor not in CONFIG_HOMES:
        return None
    env = {**launcher_env, **agent_env}  # the agent's own env wins, as in its run.sh
    for variable in API_KEYS[executor]:
        if value := env.get(variable):
            return f"{executor}:key-{hashlib.sha256(value.encode()).hexdigest()[:8]}"
    variable, default, under = CONFIG_HOMES[executor]
    home = env.get(variable) or default
    user_home = env.get("HOME")
    if user_home and home.startswith(user_home.rstrip("/") + "/"):
        home = "~" + home[len(user_home.rstrip("/")) :]
    return f"{executor}:{home}{under}"
