"""`wave doctor`: each check fails when what it checks is broken, and passes when it is not."""

from __future__ import annotations

import json
from typing import Any

from helpers import Repo, local_agent, local_lane

CLAUDE_LANE = "closure: {required_roles: []}\ndefaults: {executor: claude}\n"
CLAUDE_WAVE = "agents:\n  - {id: A, prompt: p}\n"


def doctor(repo: Repo) -> tuple[int, dict[str, Any], str]:
    done = repo.wave("doctor", "--json")
    shown = repo.wave("doctor")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return done.returncode, checks, shown.stdout


def without_auth(repo: Repo) -> None:
    for variable in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        repo.env.pop(variable, None)
    repo.env["CLAUDE_CONFIG_DIR"] = str(repo.root / "claude-config")
    repo.env["PATH"] = ":".join(
        p for p in repo.env["PATH"].split(":") if p == str(repo.bin) or "claude" not in p
    )


def test_a_local_lane_on_a_sound_machine_passes(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    code, checks, shown = doctor(repo)
    assert code == 0, shown
    assert checks["lane main"]["ok"] and checks["tmux"]["ok"]
    assert checks["state dir of main"]["ok"]
    assert shown.splitlines()[-1] == "no blocking problem"


def test_a_missing_cli_then_a_missing_login_then_a_key_never_printed(repo: Repo) -> None:
    without_auth(repo)
    repo.lane("main", CLAUDE_LANE, {1: CLAUDE_WAVE})
    code, checks, shown = doctor(repo)
    assert code == 1 and not checks["claude"]["ok"] and "not found on PATH" in shown

    repo.fake("claude", 'echo "2.1.0 (Claude Code)"')
    code, checks, shown = doctor(repo)
    assert code == 1 and checks["claude"]["detail"].startswith("2.1.0 (Claude Code)")
    assert not checks["claude login"]["ok"] and "/login" in checks["claude login"]["detail"]

    repo.env["ANTHROPIC_API_KEY"] = "sk-ant-very-secret"
    code, checks, shown = doctor(repo)
    assert code == 0, shown
    assert checks["claude login"]["detail"] == "ANTHROPIC_API_KEY is set"
    assert "very-secret" not in shown + json.dumps(checks)


def test_a_login_file_counts_as_a_login(repo: Repo) -> None:
    without_auth(repo)
    repo.fake("claude", 'echo "2.1.0 (Claude Code)"')
    (repo.root / "claude-config").mkdir()
    (repo.root / "claude-config" / ".credentials.json").write_text("{}")
    repo.lane("main", CLAUDE_LANE, {1: CLAUDE_WAVE})
    code, checks, _ = doctor(repo)
    assert code == 0 and checks["claude login"]["ok"]


def test_an_invalid_lane_and_an_unwritable_state_dir_are_blocking(repo: Repo) -> None:
    repo.lane("bad", local_lane(), {1: "agents: [{id: A, prompt: x, timout_minutes: 3}]\n"})
    (repo.root / "afile").write_text("not a folder")
    lane = local_lane() + "state_dir: afile/state\n"
    repo.lane("main", lane, {1: "agents:\n" + local_agent("A", "true")})
    code, checks, shown = doctor(repo)
    assert code == 1
    assert checks["lane bad"]["detail"].startswith(
        "2 problem(s), first: lanes/bad/waves/wave-1.yaml"
    )
    assert "wave validate --lane bad" in shown
    assert not checks["state dir of main"]["ok"]
    assert "is not a folder" in checks["state dir of main"]["detail"]


def test_credentials_in_settings_and_environment_are_hidden_by_value(repo: Repo) -> None:
    """A lane problem quotes the lane's value, a login check names a folder from the
    environment: a URL's password and a ghp_ token under harmless names are hidden there."""
    token = "ghp_" + "Q7w2" * 9
    without_auth(repo)
    repo.env["CLAUDE_CONFIG_DIR"] = str(repo.root / f"config-{token}")
    repo.fake("claude", 'echo "2.1.0 (Claude Code)"')
    hook = 'notify: {webhook: {url: "https://me:s3cret-pw@example.com/my hook"}}\n'
    repo.lane("hooked", CLAUDE_LANE + hook, {1: CLAUDE_WAVE})
    repo.lane("main", CLAUDE_LANE, {1: CLAUDE_WAVE})
    code, checks, shown = doctor(repo)
    assert code == 1
    as_json = json.dumps(checks)
    for text in (shown, as_json):
        assert "s3cret-pw" not in text and token not in text
    assert "notify.webhook.url: not an http(s) URL: 'https://me:***@example.com/my hook'" in shown
    assert checks["lane hooked"]["detail"] == shown.split("lane hooked: ", 1)[1].split("\n")[0]
    assert f"{repo.root}/config-***/.credentials.json" in checks["claude login"]["detail"]
    assert "config-***/.credentials.json" in shown
