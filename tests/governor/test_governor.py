"""The governor's decisions, on a fake clock: parking, accounts that wait, caps, spend, and
governor.json read back as hostile."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.definitions.model import Caps, Governance, UsageLimitPolicy, WaveDef
from wave_orchestrator.governor.accounts import account_of
from wave_orchestrator.governor.governor import Governor
from wave_orchestrator.state.ledger import Ledger

T0 = 1_800_000_000.0  # a fixed "now"


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def governor(tmp_path: Path | None = None, **rules: Any) -> tuple[Governor, Clock]:
    clock = Clock()
    path = tmp_path / "governor.json" if tmp_path else None
    return Governor(Governance(**rules), path, now=clock, ledger=opened(tmp_path)), clock


def resumed_governor(tmp_path: Path) -> Governor:
    """A governor as a `--resume` launcher makes it, its ledger in ``tmp_path``."""
    ledger = opened(tmp_path)
    return Governor(
        Governance(), tmp_path / "governor.json", resume=True, now=lambda: T0, ledger=ledger
    )


def opened(tmp_path: Path | None) -> Ledger | None:
    """The lane's ledger, opened as a launcher opens it (what it held read back)."""
    if tmp_path is None:
        return None
    ledger = Ledger(tmp_path / "ledger" / "main.jsonl")
    ledger.open()
    return ledger


def wave(**fields: Any) -> WaveDef:
    return WaveDef(number=1, title="t", path=Path("w"), agents=(), **fields)


def test_a_reset_within_the_bound_parks_until_it_plus_the_margin_and_holds_the_account() -> None:
    gov, clock = governor(usage_limit=UsageLimitPolicy(margin_seconds=30))
    until = gov.park_until("team", "usage limit, resets in 10m", T0)
    assert until == T0 + 600 + 30
    held = gov.hold(("claude", "team", None), Counter())
    assert held is not None and held.startswith("waiting for team until ")
    assert gov.hold(("claude", "spare", None), Counter()) is None  # another account goes on
    assert gov.hold(("local", None, None), Counter()) is None
    clock.t = until
    assert gov.hold(("claude", "team", None), Counter()) is None  # the reset came


def test_a_later_limit_of_the_same_account_extends_the_wait_an_earlier_one_does_not() -> None:
    gov, _ = governor(usage_limit=UsageLimitPolicy(margin_seconds=0))
    assert gov.park_until("team", "resets in 10m", T0) == T0 + 600
    assert gov.park_until("team", "resets in 5m", T0) == T0 + 600  # waits for the later one
    assert gov.park_until("team", "resets in 20m", T0) == T0 + 1200


@pytest.mark.parametrize(
    ("policy", "detail"),
    [
        (UsageLimitPolicy(), "usage limit, resets in 7h"),  # beyond max_wait_minutes (6 h)
        (UsageLimitPolicy(), "You’ve hit your usage limit. Try again later."),  # no reset
        (UsageLimitPolicy(wait=False), "usage limit, resets in 5m"),  # waiting is off
    ],
)
def test_no_wait_ends_the_agent_and_its_account_starts_nothing_more(
    policy: UsageLimitPolicy, detail: str
) -> None:
    gov, _ = governor(usage_limit=policy)
    assert gov.park_until("team", detail, T0) is None
    gone = gov.out_of_quota("team")
    assert gone is not None and gone.startswith("not started: team hit its usage limit")
    assert gov.out_of_quota("spare") is None


def test_an_agent_with_no_account_is_never_parked() -> None:
    gov, _ = governor()
    assert gov.park_until(None, "resets in 5m", T0) is None
    assert gov.out_of_quota(None) is None


def test_caps_per_executor_account_model_and_total() -> None:
    caps = Caps(total=4, executor={"codex": 2}, account={"team": 1}, model={"opus": 1})
    gov, _ = governor(caps=caps)
    running = Governor.count([("codex", "c", "gpt"), ("codex", "c", "gpt")])
    assert gov.hold(("codex", "c", "gpt"), running) == "queued (cap codex=2)"
    assert gov.hold(("claude", "team", "sonnet"), running) is None
    Governor.add(running, ("claude", "team", "sonnet"))
    assert gov.hold(("claude", "team", "haiku"), running) == "queued (cap team=1)"
    Governor.add(running, ("claude", "x", "opus"))
    assert gov.hold(("claude", "y", "sonnet"), running) == "queued (cap total=4)"
    gov.begin_wave(wave(caps=Caps(total=10, model={"opus": 2})))  # the wave's, over the lane's
    assert gov.hold(("claude", "y", "opus"), running) is None
    assert gov.hold(("codex", "c", "gpt"), running) == "queued (cap codex=2)"


def test_spend_warns_once_at_80_percent_then_stops_at_the_limit() -> None:
    gov, _ = governor(spend_limit_usd=1.0)
    gov.add_cost("claude", 0.5)
    assert gov.spend_news() == ([], None)
    gov.add_cost("claude", 0.35)
    warnings, stop = gov.spend_news()
    assert warnings == ["spend at 85% of the lane's limit ($0.85 of $1.00)"] and stop is None
    assert gov.spend_news() == ([], None)  # once
    gov.add_cost("claude", 0.3)
    assert gov.spend_news()[1] == "spend limit $1.00 reached ($1.15 spent)"


def test_a_wave_limit_counts_that_wave_only_and_no_cost_is_partial_not_zero_spend() -> None:
    gov, _ = governor()
    gov.begin_wave(wave(spend_limit_usd=0.5))
    gov.add_cost("claude", 0.6)
    assert gov.spend_news()[1] == "spend limit $0.50 reached ($0.60 spent)"
    gov.begin_wave(wave(spend_limit_usd=0.5))
    assert gov.spend_news()[1] is None  # a new wave starts from 0
    gov.add_cost("codex", None)
    gov.add_cost("local", None)  # costs nothing: not partial
    gov.add_cost("claude", float("nan"))
    view = gov.view()
    assert view["costs_partial"] is True and view["spent_usd"] == 0.6


def test_limits_outlive_the_launcher_and_spend_only_a_resume(tmp_path: Path) -> None:
    gov, _ = governor(tmp_path, usage_limit=UsageLimitPolicy(margin_seconds=0))
    gov.park_until("team", "resets in 10m", T0)
    gov.add_cost("claude", 2.0)
    again, _ = governor(tmp_path)
    assert again.waiting("team") is not None and again.spent == 0  # a new run: spend from 0
    resumed = resumed_governor(tmp_path)
    assert resumed.spent == 2.0 and resumed.waiting("team") is not None


def test_decisions_come_from_the_ledger_never_from_governor_json(tmp_path: Path) -> None:
    """governor.json lies in the repository agents write: a park or a spend planted there
    holds no account and changes no limit."""
    planted = {
        "limited_until": {"team": T0 + 3600},
        "limited": [{"account": "team"}],
        "spent_usd": 1e6,
        "unpriced": 3,
    }
    (tmp_path / "governor.json").write_text(json.dumps(planted))
    gov = resumed_governor(tmp_path)
    assert gov.waiting("team") is None and gov.spent == 0 and gov.unpriced == 0


def test_a_cost_is_saved_when_it_changes_the_file_and_a_free_agent_writes_nothing(
    tmp_path: Path,
) -> None:
    gov, _ = governor(tmp_path)
    path = tmp_path / "governor.json"
    gov.add_cost("local", None)
    gov.add_cost("claude", 0.0)
    assert not path.exists()  # nothing to say: no write per free agent of a burst
    gov.add_cost("codex", None)
    assert json.loads(path.read_text())["unpriced"] == 1
    gov.add_cost("claude", 0.25)
    assert json.loads(path.read_text())["wave_spent_usd"] == 0.25
    gov.begin_wave(wave())  # the next wave: its spend starts at 0, in the file too
    gov.add_cost("local", None)
    saved = json.loads(path.read_text())
    assert (saved["spent_usd"], saved["wave_spent_usd"]) == (0.25, 0)


@pytest.mark.parametrize(
    "planted",
    [
        {"limited_until": {"team": "soon"}, "spent_usd": -5},
        {"limited_until": {"team": T0 + 10**9}, "spent_usd": True},  # past any sane wait
        {"limited_until": ["team"], "unpriced": "x", "warned": "lane"},
        [1, 2],
    ],
)
def test_a_hostile_governor_record_is_left_out_field_by_field(tmp_path: Path, planted: Any) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    record = {"kind": "governor", **planted} if isinstance(planted, dict) else planted
    (folder / "main.jsonl").write_text(json.dumps(record) + "\n")
    gov = resumed_governor(tmp_path)
    assert gov.limited == {} and gov.spent == 0 and gov.unpriced == 0


def test_a_governor_file_that_is_a_fifo_or_a_link_is_not_read_or_written_through(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "governor.json")  # would block an open for reading
    gov = Governor(Governance(), tmp_path / "governor.json", now=lambda: T0)
    gov.add_cost("claude", 1.0)  # its save is refused, not fatal
    target = tmp_path / "elsewhere"
    (tmp_path / "governor.json").unlink()
    (tmp_path / "governor.json").symlink_to(target)
    gov.save()
    assert not target.exists()


def test_an_account_is_the_named_one_else_a_key_digest_else_the_config_home() -> None:
    home = {"HOME": "/home/me"}
    assert account_of("claude", "team", {}, home) == "team"
    keyed = account_of("claude", None, {"ANTHROPIC_API_KEY": "sk-secret"}, home)
    assert keyed is not None and keyed.startswith("claude:key-") and "secret" not in keyed
    assert keyed == account_of("claude", None, {}, {**home, "ANTHROPIC_API_KEY": "sk-secret"})
    assert account_of("claude", None, {}, home) == "claude:~/.claude"
    assert account_of("codex", None, {"CODEX_HOME": "/home/me/c2"}, home) == "codex:~/c2"
    got = account_of("opencode", None, {}, {**home, "XDG_DATA_HOME": "/data"})
    assert got == "opencode:/data/opencode"
