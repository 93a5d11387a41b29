"""Where each executor's command line is built: codex, claude, opencode, local.

Every value here ends up as one argv element; nothing is ever joined into a shell string.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..definitions.model import ExecutorSpec


class ExecutorCommand(NamedTuple):
    """What a wrapper runs for one agent: the argv, plus environment the executor needs."""

    executor: str
    argv: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def program(self) -> str:
        return self.argv[0]


def model_for(spec: ExecutorSpec, executor_id: str) -> str | None:
    """The model to ask ``executor_id`` for.

    On the primary executor the agent's (or profile's) ``model`` wins over the executor block's;
    a fallback executor uses only its own block's model: a codex model means nothing to claude.
    """
    if executor_id == spec.id and spec.model:
        return spec.model
    own = spec.settings_for(executor_id).get("model")
    return str(own) if own else None


def reasoning_for(spec: ExecutorSpec, executor_id: str) -> str | None:
    if executor_id == spec.id and spec.reasoning:
        return spec.reasoning
    own = spec.settings_for(executor_id).get("reasoning")
    return str(own) if own else None


# Codex's own sandbox cannot nest in wave's bubblewrap, and fails there silently: every shell
# command it runs fails, and codex still exits 0. Inside wave's sandbox, wave's is the one.
CONFINED_CODEX_SANDBOX = "danger-full-access"


def build_codex_argv(spec: ExecutorSpec, confined: bool = False) -> list[str]:
    s = spec.settings_for("codex")
    argv = [s["command"]]
    if s.get("search"):
        argv.append("--search")  # accepted only before `exec`
    sandbox = CONFINED_CODEX_SANDBOX if confined else s["sandbox"]
    argv += ["exec", "--skip-git-repo-check", "--sandbox", sandbox]
    model, reasoning = model_for(spec, "codex"), reasoning_for(spec, "codex")
    if model:
        argv += ["-m", model]
    if reasoning:
        argv += ["-c", f"model_reasoning_effort={reasoning}"]
    if s.get("profile"):
        argv += ["--profile", s["profile"]]
    for entry in s.get("config", []):
        argv += ["-c", entry]
    for image in s.get("images", []):
        argv += ["--image", image]
    for folder in s.get("add_dirs", []):
        argv += ["--add-dir", folder]
    if s.get("json"):
        argv.append("--json")
    if s.get("ephemeral"):
        argv.append("--ephemeral")
    argv.append("-")  # the prompt comes on stdin
    return argv


def build_claude_argv(spec: ExecutorSpec, skills: bool = False) -> list[str]:
    s = spec.settings_for("claude")
    fmt = s["output_format"]
    argv = [s["command"], "-p", "--output-format", fmt]
    if fmt == "stream-json":
        argv.append("--verbose")  # claude refuses stream-json in print mode without it
    # No --no-session-persistence: a try after a limit or a crash continues the conversation
    # (agents/conversations.py gives each one its id).
    model, reasoning = model_for(spec, "claude"), reasoning_for(spec, "claude")
    if model:
        argv += ["--model", model]
    if reasoning:
        argv += ["--effort", reasoning]
    if s.get("permission_mode"):
        argv += ["--permission-mode", s["permission_mode"]]
    turns = s.get("max_turns") if s.get("max_turns") is not None else spec.budget_turns
    if turns is not None:
        argv += ["--max-turns", str(turns)]
    # The `=a,b` form: the space-separated form swallows every following word.
    if s.get("allowed_tools"):
        argv.append("--allowedTools=" + ",".join(s["allowed_tools"]))
    if s.get("disallowed_tools"):
        argv.append("--disallowedTools=" + ",".join(s["disallowed_tools"]))
    if s.get("settings"):
        argv += ["--settings", s["settings"]]
    if s.get("append_system_prompt_file") and not skills:  # with skills: in their file
        argv += ["--append-system-prompt-file", s["append_system_prompt_file"]]
    return argv


def build_opencode_argv(spec: ExecutorSpec, agent_id: str) -> list[str]:
    s = spec.settings_for("opencode")
    argv = [s["command"], "run", "--format", s["format"]]
    if s.get("agent"):
        argv += ["--agent", s["agent"]]
    model, reasoning = model_for(spec, "opencode"), reasoning_for(spec, "opencode")
    if model:
        argv += ["--model", model]
    if reasoning:
        argv += ["--variant", reasoning]
    argv += ["--title", f"wave-{agent_id}"]
    if s.get("auto"):
        argv.append("--auto")
    # -f swallows following words, so attachments go last (the message comes on stdin).
    for path in s.get("files", []):
        argv += ["-f", path]
    return argv


def build_local_argv(spec: ExecutorSpec) -> list[str]:
    command = spec.settings_for("local").get("command")
    if isinstance(command, str):
        return ["bash", "-c", command]
    if isinstance(command, Sequence) and command:
        return [str(part) for part in command]
    raise ValueError("the local executor needs a command")


def build_command(
    spec: ExecutorSpec,
    executor_id: str,
    agent_id: str,
    confined: bool = False,
    skill_args: Sequence[str] = (),
) -> ExecutorCommand:
    """The argv and extra environment for running ``spec`` on ``executor_id``; ``confined``:
    inside wave's sandbox, where the CLI's own sandbox is left off; ``skill_args``: how its
    skill bundles reach it (agents/skills_projection.py)."""
    env: dict[str, str] = {}
    if executor_id == "codex":
        argv = build_codex_argv(spec, confined)
        argv[-1:-1] = skill_args  # before the `-` that reads the prompt
    elif executor_id == "claude":
        argv = build_claude_argv(spec, bool(skill_args)) + list(skill_args)
        mode = spec.settings_for("claude").get("permission_mode")
        if mode == "bypassPermissions" and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # claude refuses bypass mode as root without it
    elif executor_id == "opencode":
        argv = build_opencode_argv(spec, agent_id) + list(skill_args)  # -f goes last
    elif executor_id == "local":
        argv = build_local_argv(spec)
    else:
        raise ValueError(f"unknown executor {executor_id!r}")
    return ExecutorCommand(executor=executor_id, argv=tuple(argv), env=env)
