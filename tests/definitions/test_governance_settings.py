"""usage_limit, accounts, max_running as a mapping and spend limits (lane and wave)."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: claude}\nclosure: {required_roles: []}\n"
ACCOUNTS = (
    "accounts:\n"
    "  work: {executor: claude, env: {CLAUDE_CONFIG_DIR: /srv/work}}\n"
    "  home: {executor: codex, env: {CODEX_HOME: /srv/home}}\n"
)


def test_the_defaults_wait_six_hours_and_cap_nothing(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n  - {id: A, prompt: p}\n"})
    lane = load_lane(repo.root, "main")
    gov = lane.governance
    assert (gov.usage_limit.wait, gov.usage_limit.max_wait_minutes) == (True, 360)
    assert not gov.caps and gov.spend_limit_usd is None and not gov.spend_hard
    assert lane.wave(1).caps is None and lane.wave(1).agents[0].executor.account is None


def test_every_key_is_read_and_an_account_s_env_reaches_its_agents(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults:\n  executor: claude\n"
        "  max_running: {total: 12, codex: 3, account: {work: 2}, model: {opus: 1}}\n"
        "closure: {required_roles: []}\n"
        + ACCOUNTS
        + "usage_limit: {wait: false, max_wait_minutes: 90, margin_seconds: 5}\n"
        "spend_limit_usd: 20\nspend_limit: {hard: true}\n"
        "profiles:\n  cheap: {executor: codex, account: home}\n",
        {
            1: "max_running: {claude: 2, model: {opus: 2}}\nspend_limit_usd: 2.5\nagents:\n"
            "  - {id: A, prompt: p, account: work, executor: {env: {CLAUDE_CONFIG_DIR: /x}}}\n"
            "  - {id: B, prompt: p, profile: cheap}\n",
            2: "max_running: 4\nagents:\n  - {id: A, prompt: p}\n",
        },
    )
    lane = load_lane(repo.root, "main")
    gov = lane.governance
    assert lane.defaults.max_running == 12
    assert (gov.caps.total, dict(gov.caps.executor)) == (12, {"codex": 3})
    assert (dict(gov.caps.account), dict(gov.caps.model)) == ({"work": 2}, {"opus": 1})
    assert (gov.usage_limit.wait, gov.usage_limit.max_wait_minutes) == (False, 90)
    assert gov.usage_limit.margin_seconds == 5
    assert (gov.spend_limit_usd, gov.spend_hard) == (20, True)
    a, b = lane.wave(1).agents
    assert a.executor.account == "work" and a.executor.env["CLAUDE_CONFIG_DIR"] == "/srv/work"
    assert (b.executor.id, b.executor.account, b.executor.env["CODEX_HOME"]) == (
        "codex",
        "home",
        "/srv/home",
    )
    merged = gov.caps.over(lane.wave(1).caps)
    assert (merged.total, dict(merged.executor), dict(merged.model)) == (
        12,
        {"codex": 3, "claude": 2},
        {"opus": 2},
    )
    assert lane.wave(1).spend_limit_usd == 2.5
    assert gov.caps.over(lane.wave(2).caps).total == 4


@pytest.mark.parametrize(
    ("lane_extra", "wave_agent", "expect"),
    [
        (
            "",
            "{id: A, prompt: p, account: work}",
            "agents[0].account: unknown account 'work' (expected one of lane.yaml's accounts: none)",
        ),
        (
            ACCOUNTS,
            "{id: A, prompt: p, account: home}",
            "agents[0].account: account 'home' is a codex login, and this agent runs on claude",
        ),
        ("accounts: {w: {env: {A: b}}}\n", "{id: A, prompt: p}", "accounts.w: names no executor"),
        (
            "accounts: {'a b': {executor: claude}}\n",
            "{id: A, prompt: p}",
            "invalid account name 'a b'",
        ),
        (
            "usage_limit: {max_wait_minutes: 0}\n",
            "{id: A, prompt: p}",
            "usage_limit.max_wait_minutes",
        ),
        ("usage_limit: {wiat: true}\n", "{id: A, prompt: p}", "usage_limit.wiat: unknown key"),
        ("spend_limit_usd: -1\n", "{id: A, prompt: p}", "spend_limit_usd"),
        ("spend_limit: {hard: maybe}\n", "{id: A, prompt: p}", "spend_limit.hard"),
        (
            "defaults: {max_running: {codx: 3}}\n",
            "{id: A, prompt: p}",
            "defaults.max_running.codx: unknown key",
        ),
        (
            "defaults: {max_running: {codex: 0}}\n",
            "{id: A, prompt: p}",
            "defaults.max_running.codex",
        ),
        (
            "defaults: {max_running: {account: {nobody: 1}}}\n",
            "{id: A, prompt: p}",
            "defaults.max_running.account.nobody: unknown account 'nobody'",
        ),
    ],
)
def test_a_broken_governance_key_is_named(
    repo: Repo, lane_extra: str, wave_agent: str, expect: str
) -> None:
    lane_text = LANE + lane_extra
    if lane_extra.startswith("defaults:"):
        lane_text = lane_extra.replace("{max_running", "{executor: claude, max_running")
        lane_text += "closure: {required_roles: []}\n"
    repo.lane("main", lane_text, {1: f"agents:\n  - {wave_agent}\n"})
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo.root, "main")
    assert expect in str(info.value)


def test_a_wave_s_caps_and_spend_are_checked(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE,
        {
            1: "max_running: {claude: nope}\nspend_limit_usd: free\n"
            "agents:\n  - {id: A, prompt: p}\n"
        },
    )
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo.root, "main")
    assert "wave-1.yaml:1:23: max_running.claude" in str(info.value)
    assert "wave-1.yaml:2:18: spend_limit_usd: wrong type" in str(info.value)
