"""The argv we produce for every executor setting, pinned (SPEC 4 and agent-clis.md)."""

from __future__ import annotations

from typing import Any

import pytest

from wave_orchestrator.agents.executors import build_command, model_for
from wave_orchestrator.definitions.model import ExecutorSpec
from wave_orchestrator.definitions.sections.executor_options import (
    BUILTIN_SETTINGS,
    merge_settings,
    reasoning_problem,
)


def spec(
    executor: str,
    *,
    model: str | None = None,
    reasoning: str | None = None,
    turns: int | None = None,
    fallbacks: tuple[str, ...] = (),
    **blocks: dict[str, Any],
) -> ExecutorSpec:
    settings = {
        ex: merge_settings(base, blocks.get(ex, {})) for ex, base in BUILTIN_SETTINGS.items()
    }
    return ExecutorSpec(
        id=executor,
        model=model,
        reasoning=reasoning,
        budget_turns=turns,
        fallbacks=fallbacks,
        settings=settings,
    )


def argv(s: ExecutorSpec, executor: str | None = None) -> list[str]:
    return list(build_command(s, executor or s.id, "A1").argv)


def test_codex_minimal() -> None:
    assert argv(spec("codex")) == [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "-",
    ]


@pytest.mark.parametrize("own", ["workspace-write", "read-only", "danger-full-access"])
def test_codex_in_waves_sandbox_leaves_its_own_off(own: str) -> None:
    """Its own sandbox cannot nest in bubblewrap and fails there silently: inside wave's, off."""
    confined = build_command(spec("codex", codex={"sandbox": own}), "codex", "A1", confined=True)
    assert list(confined.argv)[3:5] == ["--sandbox", "danger-full-access"]
    assert argv(spec("codex", codex={"sandbox": own}))[3:5] == ["--sandbox", own]


def test_codex_every_setting_in_order_and_search_before_exec() -> None:
    s = spec(
        "codex",
        model="gpt-5-codex",
        reasoning="xhigh",
        codex={
            "search": True,
            "sandbox": "danger-full-access",
            "profile": "ci",
            "config": ["model_verbosity=low", "a=b"],
            "images": ["shot.png"],
            "add_dirs": ["../shared"],
            "json": True,
            "ephemeral": True,
            "command": "/opt/codex",
        },
    )
    assert argv(s) == [
        "/opt/codex",
        "--search",
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        "-m",
        "gpt-5-codex",
        "-c",
        "model_reasoning_effort=xhigh",
        "--profile",
        "ci",
        "-c",
        "model_verbosity=low",
        "-c",
        "a=b",
        "--image",
        "shot.png",
        "--add-dir",
        "../shared",
        "--json",
        "--ephemeral",
        "-",
    ]


def test_codex_never_uses_removed_flags() -> None:
    out = argv(spec("codex", codex={"search": True}))
    assert "--full-auto" not in out and "-a" not in out and "--ask-for-approval" not in out
    assert out.index("--search") < out.index("exec")


def test_claude_minimal() -> None:
    assert argv(spec("claude")) == [
        "claude",
        "-p",
        "--output-format",
        "text",
    ]


def test_claude_stream_json_adds_verbose() -> None:
    out = argv(spec("claude", claude={"output_format": "stream-json"}))
    assert out[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]


def test_claude_every_setting_uses_equals_form_for_tool_lists() -> None:
    s = spec(
        "claude",
        model="sonnet",
        reasoning="max",
        turns=12,
        claude={
            "permission_mode": "acceptEdits",
            "allowed_tools": ["Bash", "Edit"],
            "disallowed_tools": ["WebFetch"],
            "settings": "cfg.json",
            "append_system_prompt_file": "sys.md",
            "output_format": "json",
        },
    )
    assert argv(s) == [
        "claude",
        "-p",
        "--output-format",
        "json",
        "--model",
        "sonnet",
        "--effort",
        "max",
        "--permission-mode",
        "acceptEdits",
        "--max-turns",
        "12",
        "--allowedTools=Bash,Edit",
        "--disallowedTools=WebFetch",
        "--settings",
        "cfg.json",
        "--append-system-prompt-file",
        "sys.md",
    ]


def test_claude_max_turns_setting_beats_budget_turns() -> None:
    out = argv(spec("claude", turns=12, claude={"max_turns": 3}))
    assert out[out.index("--max-turns") + 1] == "3"


def test_claude_bypass_as_root_sets_is_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    s = spec("claude", claude={"permission_mode": "bypassPermissions"})
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert build_command(s, "claude", "A1").env == {"IS_SANDBOX": "1"}
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert build_command(s, "claude", "A1").env == {}
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert build_command(spec("claude"), "claude", "A1").env == {}


def test_opencode_minimal_and_full() -> None:
    assert argv(spec("opencode")) == [
        "opencode",
        "run",
        "--format",
        "default",
        "--title",
        "wave-A1",
    ]
    s = spec(
        "opencode",
        model="anthropic/claude-x",
        reasoning="high",
        opencode={"agent": "build", "format": "json", "auto": True, "files": ["a.txt", "b.txt"]},
    )
    assert argv(s) == [
        "opencode",
        "run",
        "--format",
        "json",
        "--agent",
        "build",
        "--model",
        "anthropic/claude-x",
        "--variant",
        "high",
        "--title",
        "wave-A1",
        "--auto",
        "-f",
        "a.txt",
        "-f",
        "b.txt",
    ]


def test_local_argv_list_and_bash_string() -> None:
    assert argv(spec("local", local={"command": ["python3", "tools/agent.py", "--x"]})) == [
        "python3",
        "tools/agent.py",
        "--x",
    ]
    assert argv(spec("local", local={"command": "my-agent | tee x"})) == [
        "bash",
        "-c",
        "my-agent | tee x",
    ]
    with pytest.raises(ValueError, match="needs a command"):
        argv(spec("local"))


def test_prompt_is_never_on_the_command_line() -> None:
    for ex in ("codex", "claude", "opencode"):
        assert not any("task" in part for part in argv(spec(ex)))


@pytest.mark.parametrize(
    ("executor", "level", "ok"),
    [
        ("codex", "low", True),
        ("codex", "xhigh", True),
        ("codex", "max", True),
        ("codex", "bogus", False),
        ("codex", "ultra", False),
        ("claude", "medium", True),
        ("claude", "minimal", False),
        ("opencode", "minimal", True),
        ("opencode", "high; rm", False),
        ("local", "high", False),
    ],
)
def test_reasoning_levels_are_validated(executor: str, level: str, ok: bool) -> None:
    assert (reasoning_problem(executor, level) is None) is ok


def test_merge_concatenates_lists_without_duplicates_and_later_scalars_win() -> None:
    merged = merge_settings(
        {"config": ["a=1", "b=2"], "sandbox": "read-only"},
        {"config": ["b=2", "c=3"], "sandbox": "workspace-write"},
    )
    assert merged == {"config": ["a=1", "b=2", "c=3"], "sandbox": "workspace-write"}
    assert merge_settings({"command": ["x", "y"]}, {"command": ["z"]}) == {"command": ["z"]}


def test_fallback_executor_uses_only_its_own_model() -> None:
    s = spec(
        "codex",
        model="gpt-5-codex",
        reasoning="high",
        fallbacks=("claude",),
        claude={"model": "sonnet"},
    )
    assert model_for(s, "codex") == "gpt-5-codex"
    assert model_for(s, "claude") == "sonnet"
    out = argv(s, "claude")
    assert "gpt-5-codex" not in out and "--effort" not in out
    assert model_for(spec("codex", fallbacks=("opencode",)), "opencode") is None
