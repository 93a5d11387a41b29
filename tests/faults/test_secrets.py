"""Fault class 11: secrets by value, not only by name. Credentials in URLs, values that look
like tokens and the wider family of secret names are redacted in launch-preview.json (written
owner-only) and in `--dry-run --json`; and API keys stay out of the tmux server's global
environment while the agent still gets its key. Wherever settings or the environment are
printed (`wave debug-info`, `wave doctor`: tests/cli/test_doctor.py, dry runs) a credential
under a harmless name is hidden by its value."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from helpers import Repo, local_lane, wait_for

from wave_orchestrator.sanitize import clean_tree, redact_env, redact_value, safe_text, secret_name

SECRETS = {
    "DATABASE_URL": ("postgres://u:pw-sup3r@db.example/app", "postgres://u:***@db.example/app"),
    "GITHUB_PAT": ("plain-words-but-a-secret-name", "***"),
    "DB_PASS": ("hunter2", "***"),
    "MY_PWD": ("hunter3", "***"),
    "SERVICE_CREDENTIAL": ("cred-value-xyz", "***"),
    "AUTH_HEADER": ("Basic abc123xyz", "***"),
    "SESSION_COOKIE": ("sess=abcdef123", "***"),
    "NOTE": ("ghp_" + "A1b2C3d4" * 5, "***"),
    "FINE_GRAINED": ("github_pat_" + "11ABCDEFG0" * 3, "***"),
    "OPENAI": ("sk-proj-" + "Zx9" * 10, "***"),
    "SLACK_HOOK": ("xoxb-123456789012-abcdefABCDEF", "***"),
    "AWS_ID": ("AKIAIOSFODNN7EXAMPLE", "***"),
    "BLOB": ("q8Vt2Lr7Xw4Kp9Zm3Ns6Yb1Hd5Gf0Jc2Ue8Ra", "***"),
}
PLAIN = {
    "LOG_LEVEL": "debug",
    "SITE": "https://example.com/a/b",
    "COMMIT": "0123456789abcdef0123456789abcdef01234567",
    "LIB": "/usr/local/lib/python3/site-packages/some_package_name",
}


def lane_with_env(repo: Repo, extra_argv: str = "") -> None:
    env = ", ".join(f"{k}: {json.dumps(v)}" for k, (v, _) in SECRETS.items())
    env += ", " + ", ".join(f"{k}: {json.dumps(v)}" for k, v in PLAIN.items())
    command = f"[echo, hi{extra_argv}]"
    repo.lane(
        "main",
        local_lane(),
        {
            1: f"agents:\n  - {{id: A1, prompt: w, executor: {{env: {{{env}}}, local: {{command: {command}}}}}}}\n"
        },
    )


def assert_redacted(text: str) -> None:
    for value, _ in SECRETS.values():
        assert value not in text
    for value in ("pw-sup3r", "hunter2"):
        assert value not in text


def test_names_and_values_are_recognised() -> None:
    for name in (
        "GITHUB_PAT",
        "DB_PASS",
        "X_PASSWD",
        "MY_PWD",
        "AWS_CREDENTIALS",
        "PRIVATE_KEY",
        "AUTH",
        "COOKIE_JAR",
        "SESSION_ID",
        "APIKEY",
        "NPM_TOKEN",
    ):
        assert secret_name(name), name
    for name in ("PATH", "PWD", "HOME", "LANG", "PATTERN", "TERM", "SSH_AUTH_SOCK"):
        assert not secret_name(name), name
    got = redact_env({**{k: v for k, (v, _) in SECRETS.items()}, **PLAIN})
    assert got == {**{k: shown for k, (_, shown) in SECRETS.items()}, **PLAIN}
    assert redact_value("see https://me:tok@git.example/x and ghp_" + "x" * 36) == (
        "see https://me:***@git.example/x and ***"
    )


def test_safe_text_strips_escapes_before_it_looks_for_credentials() -> None:
    """An escape inside a token must not hide the token from the patterns."""
    token = "ghp_" + "A1b2" * 3 + "\x1b[0m" + "C3d4" * 5
    assert safe_text(f"NOTE={token} https://u:pw@h/x") == "NOTE=*** https://u:***@h/x"
    tree = {"k": [f"x {token}", 3, None], "plain": "a\x07b"}
    assert clean_tree(tree, redact=True) == {"k": ["x ***", 3, None], "plain": "ab"}
    assert clean_tree(tree)["k"][0] != "x ***"  # not redacted unless asked: state is shown


URL_TOKEN = "ghp_" + "Zq8" * 12  # a GitHub token under a harmless name
URL_WITH_PASSWORD = "https://user:s3cret-pw@example.com/hook"


def test_debug_info_hides_credentials_by_value_under_harmless_names(repo: Repo) -> None:
    repo.lane("main", local_lane() + f"state_dir: state-{URL_TOKEN}\n", {1: "agents: []\n"})
    repo.env.update(WAVE_NOTIFY_URL=URL_WITH_PASSWORD, WAVE_NOTE=URL_TOKEN, WAVE_DB_PASS="pw-1")
    shown = repo.wave("debug-info")
    as_json = repo.wave("debug-info", "--json")
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    for text in (shown.stdout, as_json.stdout):
        assert "s3cret-pw" not in text and URL_TOKEN not in text and "pw-1" not in text
    lines = shown.stdout.splitlines()
    assert "env            WAVE_NOTIFY_URL=https://user:***@example.com/hook" in lines
    assert "env            WAVE_NOTE=***" in lines
    assert "env            WAVE_DB_PASS=<redacted, 4 characters>" in lines  # PASS: by name
    lane_line = next(line for line in lines if line.startswith("lane           main: state "))
    assert "/state-***," in lane_line
    data = json.loads(as_json.stdout)
    assert data["environment"]["WAVE_NOTIFY_URL"] == "https://user:***@example.com/hook"
    assert data["environment"]["WAVE_NOTE"] == "***"
    assert data["lanes"][0]["state_dir"].endswith("/state-***")


def test_dry_runs_hide_credentials_in_the_sbatch_line_and_warnings(repo: Repo) -> None:
    """`placement.extra` is passed to sbatch as it is, and a missing executable is named."""
    extra = f'["--comment={URL_WITH_PASSWORD}", "--wckey={URL_TOKEN}"]'
    lane = local_lane() + f"placement: {{kind: slurm, partition: agents, extra: {extra}}}\n"
    command = json.dumps([URL_TOKEN, "x"])
    agents = f"agents:\n  - {{id: A1, prompt: p, executor: {{local: {{command: {command}}}}}}}\n"
    repo.lane("main", lane, {1: agents})
    shown = repo.wave("launch", "--lane", "main", "--dry-run")
    as_json = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    preview = repo.state("main") / "dry-run" / "launch-preview.json"
    for text in (shown.stdout + shown.stderr, as_json.stdout, preview.read_text()):
        assert "s3cret-pw" not in text and URL_TOKEN not in text
    assert "'--comment=https://user:***@example.com/hook' '--wckey=***'" in shown.stdout
    assert "executor local needs `***`" in shown.stdout
    agent = json.loads(as_json.stdout)["agents"][0]
    assert "'--comment=https://user:***@example.com/hook'" in agent["sbatch"]


def test_previews_are_redacted_and_owner_only(repo: Repo) -> None:
    lane_with_env(repo, extra_argv=", -H, 'Authorization: Bearer sk-ant-" + "k" * 30 + "'")
    old = repo.state("main") / "dry-run" / "launch-preview.json"
    old.parent.mkdir(parents=True)
    old.write_text("[]")
    old.chmod(0o644)  # left by an older wave: replaced owner-only
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert_redacted(result.stdout)
    agent = json.loads(result.stdout)["agents"][0]
    assert agent["env"]["DATABASE_URL"] == "postgres://u:***@db.example/app"
    assert {k: agent["env"][k] for k in PLAIN} == PLAIN
    assert agent["argv"][-1] == "Authorization: Bearer ***"
    per_agent = repo.state("main") / "dry-run" / "waves" / "wave-1" / "agents" / "A1"
    for path in (old, per_agent / "launch-preview.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert_redacted(path.read_text())


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=False
    ).stdout


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["foreground", "detach"])
def test_keys_stay_out_of_the_tmux_global_environment(tmp_path: Path, mode: str) -> None:
    # A private socket that no fixture has started: the server is started by `wave launch`,
    # with the keys in its environment, as a user's shell would start it.
    socket = f"wave-secrets-{os.getpid()}-{tmp_path.name}"
    repo = Repo(tmp_path / "repo", socket=socket)
    key = "sk-ant-api03-" + "Q7w" * 12
    repo.env.update(ANTHROPIC_API_KEY=key, GITHUB_PAT="pat-value-1", NOTE_VALUE="ghp_" + "Z" * 36)
    check = (
        f'[[ "$ANTHROPIC_API_KEY" == {key} && $GITHUB_PAT == pat-value-1 ]] '
        "&& echo agent-has-its-key; sleep 1"
    )
    repo.lane(
        "main",
        local_lane(),
        {
            1: f"agents:\n  - {{id: A1, prompt: w, executor: {{local: {{command: {json.dumps(check)}}}}}}}\n"
        },
    )
    try:
        args = ("launch", "--lane", "main", "--keep-sessions", "--no-dashboard")
        if mode == "detach":
            assert repo.wave(*args, "--detach").returncode == 0
            wait_for(lambda: "w1-A1" in tmux(socket, "list-sessions", "-F", "#S"), 20)
            env = tmux(socket, "show-environment", "-g")
            session_env = tmux(socket, "show-environment", "-t", "=launcher")
            wait_for(
                lambda: (
                    (repo.state("main") / "run-state.json").exists()
                    and repo.run_state("main")["waves"].get("1", {}).get("state") == "completed"
                ),
                30,
                what="the detached wave to complete",
            )
        else:
            result = repo.wave(*args)
            assert result.returncode == 0, result.stderr
            env = tmux(socket, "show-environment", "-g")
            session_env = tmux(socket, "show-environment", "-t", "=w1-A1")
        assert "PATH=" in env  # the server's environment is there, minus the secrets
        for text in (env, session_env):
            assert key not in text and "pat-value-1" not in text and "Z" * 36 not in text
            assert "ANTHROPIC_API_KEY=" not in text and "GITHUB_PAT=" not in text
        log = (repo.agent_dir("main", 1, "A1") / "output.log").read_text()
        assert "agent-has-its-key" in log
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_a_bad_webhook_url_is_quoted_without_its_password(repo: Repo) -> None:
    """The error names the field and the URL, but the password in it is not printed."""
    bad = "https://user:s3cret-pw@example.com/a hook"  # the space makes it no URL
    repo.lane("main", local_lane() + f"notify:\n  webhook: {{url: '{bad}'}}\n", {1: "agents: []\n"})
    done = repo.wave("validate", "--lane", "main")
    assert done.returncode == 2
    text = done.stdout + done.stderr
    assert "not an http(s) URL" in text and "https://user:***@example.com" in text
    assert "s3cret-pw" not in text
