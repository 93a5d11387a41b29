"""`wave doctor` asks each account's CLI whether it is logged in (fake CLIs of ours on PATH,
answering as the real ones do) and says what wave has on record of its limits; a CLI's own
words are never shown, and a check that cannot run is no failure."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.governor.account_health import (
    AccountUse,
    accounts_used,
    limit_state,
    logged_in,
)
from wave_orchestrator.runtime.agent.plan import Planner
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.ledger import Ledger

SECRET = "sk-ant-api03-never-shown-0123456789"
# Logged in when its config folder is the one ending in /in, as the real CLIs answer:
# claude's JSON verdict (exit 1 when out), codex's exit code, opencode's counted boxes.
CLAUDE = f"""\
case "$1 $2" in
  "auth status")
    if [[ $CLAUDE_CONFIG_DIR == */in ]]; then
      echo '{{"loggedIn": true, "authMethod": "claude.ai", "token": "{SECRET}"}}'
    else
      echo '{{"loggedIn": false, "authMethod": "none"}}'; exit 1
    fi ;;
  *) echo "2.1.0 (Claude Code)" ;;
esac
"""
CODEX = f"""\
case "$1 $2" in
  "login status")
    if [[ $CODEX_HOME == */in ]]; then echo "Logged in using an API key - {SECRET}"
    else echo "Not logged in" >&2; exit 1; fi ;;
  *) echo "codex-cli 0.171.0" ;;
esac
"""
OPENCODE = """\
case "$1 $2" in
  "auth list") printf '\\x1b[0m┌  Credentials ~/.local/share/opencode/auth.json\\n│\\n└  2 credentials\\n' ;;
  *) echo "1.18.33" ;;
esac
"""
LANE = """\
closure: {{required_roles: []}}
defaults: {{executor: claude}}
accounts:
  team: {{executor: claude, env: {{CLAUDE_CONFIG_DIR: {root}/in}}}}
  spare: {{executor: claude, env: {{CLAUDE_CONFIG_DIR: {root}/out}}}}
  cx: {{executor: codex, env: {{CODEX_HOME: {root}/in}}}}
  cy: {{executor: codex, env: {{CODEX_HOME: {root}/out}}}}
"""
WAVE = """\
agents:
  - {id: A, prompt: p, account: team}
  - {id: B, prompt: p, account: spare}
  - {id: C, prompt: p, executor: {id: codex}, account: cx}
  - {id: D, prompt: p, executor: {id: codex}, account: cy}
  - {id: E, prompt: p, executor: {id: opencode}}
"""


def doctor(repo: Repo) -> tuple[int, dict[str, Any], str]:
    done = repo.wave("doctor", "--json")
    shown = repo.wave("doctor")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return done.returncode, checks, shown.stdout


@pytest.fixture
def fleet(repo: Repo) -> Repo:
    """Fake claude, codex and opencode alone on PATH (no real CLI, no key variable)."""
    for variable in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        repo.env.pop(variable, None)
    for variable in ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENCODE_API_KEY"):
        repo.env.pop(variable, None)
    repo.env["PATH"] = f"{repo.bin}:/usr/bin:/bin"
    repo.env["XDG_DATA_HOME"] = str(repo.root / "data")
    repo.lane("main", LANE.format(root=repo.root), {1: WAVE})
    return repo


def test_each_account_is_logged_in_or_not_as_its_cli_says(fleet: Repo) -> None:
    fleet.fake("claude", CLAUDE)
    fleet.fake("codex", CODEX)
    fleet.fake("opencode", OPENCODE)
    code, checks, shown = doctor(fleet)
    assert code == 1  # two accounts are not logged in
    team, spare = checks["account team login"], checks["account spare login"]
    assert team["ok"] and team["detail"] == "logged in (claude.ai) (lanes: main)"
    assert not spare["ok"] and spare["blocking"]
    assert spare["detail"].startswith("not logged in, its CLI says (lanes: main)")
    assert "/login" in spare["fix"]
    assert checks["account cx login"]["ok"]
    assert not checks["account cy login"]["ok"] and checks["account cy login"]["blocking"]
    opencode = checks[f"account opencode:{fleet.root}/data/opencode login"]
    assert opencode["ok"] and opencode["detail"].startswith("2 credential(s), 0 key variable(s)")
    assert checks["account team limits"] == {**checks["account team limits"], "ok": True}
    assert "account team login: logged in (claude.ai)" in shown
    assert "account spare login: not logged in" in shown
    assert SECRET not in shown + json.dumps(checks)  # the CLIs' words are never printed


def test_a_cli_absent_or_without_a_verdict_cannot_tell_and_is_no_failure(fleet: Repo) -> None:
    fleet.fake("claude", 'echo "2.1.0 (Claude Code)"')  # an old claude: no `auth status`
    _, checks, _ = doctor(fleet)
    team = checks["account team login"]
    assert not team["ok"] and not team["blocking"] and team["informational"]
    assert team["detail"].startswith("cannot tell: `claude auth status` exited 0 with no verdict")
    # codex is on no PATH: its executor's line blocks, and says it once
    assert not checks["codex"]["ok"] and checks["codex"]["blocking"]
    assert "not found on PATH" in checks["codex"]["detail"]
    assert not [name for name in checks if name.startswith(("account cx", "account cy"))]


def test_a_cli_absent_from_its_agents_path_alone_is_said_on_its_account(
    fleet: Repo,
) -> None:
    """An account's agents get a PATH of their own (``executor.env``) without the CLI the
    launcher finds: its line says so, and it cannot tell the login."""
    fleet.fake("claude", CLAUDE)
    lane = LANE.format(root=fleet.root).replace(
        "team: {executor: claude, env: {", "team: {executor: claude, env: {PATH: /usr/bin, "
    )
    fleet.lane("main", lane, {1: WAVE})
    _, checks, _ = doctor(fleet)
    team = checks["account team login"]
    assert not team["ok"] and not team["blocking"]
    assert team["detail"].startswith("cannot tell: claude is not on the PATH its agents get")
    assert checks["account spare login"]["detail"].startswith("not logged in")


def test_a_key_variable_stands_for_a_codex_login_and_is_never_shown(tmp_path: Path) -> None:
    use = AccountUse("cx", "codex", {"PATH": "/nowhere", "CODEX_API_KEY": SECRET}, ("main",))
    answer = logged_in(use)
    assert answer.ok and answer.words == "CODEX_API_KEY is set (checked at its first request)"


def test_a_hung_cli_is_given_a_few_seconds(tmp_path: Path) -> None:
    hung = tmp_path / "claude"
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    use = AccountUse("team", "claude", {"PATH": f"{tmp_path}:/usr/bin:/bin"}, ("main",))
    began = time.monotonic()
    answer = logged_in(use, seconds=0.5)
    assert time.monotonic() - began < 10
    assert answer.ok is None and answer.words.endswith("gave no answer in 0.5s")


def test_the_limits_on_record_are_the_ledger_s_park_and_the_wrappers_backoff(
    fleet: Repo,
) -> None:
    lane = load_lane(fleet.root, "main")
    now = time.time()
    assert limit_state(lane, "team", now) is None
    ledger = Ledger.for_lane(fleet.root, "main")
    ledger.open()
    ledger.governor({"limited_until": {"team": now + 3600}, "details": {"team": "resets 9pm"}})
    # the backoff file is the one run.sh of an agent of `spare` reads
    agent = lane.wave(1).agents[1]
    launch = Planner(lane, StateLayout(lane.state_dir, "main")).plan(lane.wave(1), agent)
    assert launch.account == "spare" and launch.account_backoff is not None
    launch.account_backoff.parent.mkdir(parents=True, exist_ok=True)
    launch.account_backoff.write_text(f"{int((now + 120) * 1000)}\n")
    team, spare = limit_state(lane, "team", now), limit_state(lane, "spare", now)
    assert team is not None and team.startswith("parked on a usage limit until ")
    assert spare is not None and spare.startswith("rate-limit backoff until ")
    assert limit_state(lane, "team", now + 7200) is None  # over: nothing to say
    launch.account_backoff.write_text("rm -rf / ; 99999999999999999\n")  # hostile: ignored
    assert limit_state(lane, "spare", now) is None
    fleet.fake("claude", CLAUDE)
    _, checks, shown = doctor(fleet)
    limits = checks["account team limits"]
    assert not limits["ok"] and limits["informational"] and not limits["blocking"]
    assert "info  account team limits: parked on a usage limit until" in shown


def test_accounts_used_counts_fallbacks_and_names_each_once(fleet: Repo) -> None:
    lane = load_lane(fleet.root, "main")
    uses = {u.account: u for u in accounts_used([lane, lane], {"HOME": "/home/x"})}
    assert set(uses) == {"team", "spare", "cx", "cy", "opencode:~/.local/share/opencode"}
    assert uses["team"].lanes == ("main",) and uses["team"].executor == "claude"
    assert uses["team"].env["CLAUDE_CONFIG_DIR"] == f"{fleet.root}/in"
