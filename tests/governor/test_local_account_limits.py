"""A ``local`` agent's usage limit: a person's script (often wrapping a real CLI) that ends on
a CLI's limit text is judged from its last lines, and parks an account of its own (``local``,
or the lane account it names) until the reset, holding the other agents of that account."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from wave_orchestrator.agents.limits import read_usage_limit
from wave_orchestrator.definitions.model import (
    DEFAULT_USAGE_LIMIT_PATTERNS,
    Governance,
    UsageLimitPolicy,
    WaveDef,
)
from wave_orchestrator.governor.accounts import account_of
from wave_orchestrator.governor.governor import Governor
from wave_orchestrator.governor.plan import plan_lines
from wave_orchestrator.state.events import short_clock

SAID = "You've hit your session limit · resets 10:20am (UTC)"
SAID_AT = datetime(2026, 12, 5, 9, 58, 12, tzinfo=UTC).timestamp()


def output(tmp_path: Path, *lines: str) -> Path:
    """An output.log as run.sh leaves it: the script's lines, then the wrapper's own."""
    log = tmp_path / "output.log"
    log.write_text("\n".join([*lines, "[wave] run ended: exit 1 after 3s, 1 try"]) + "\n")
    return log


def judged(log: Path, offset: int = 0) -> str | None:
    return read_usage_limit("local", {}, DEFAULT_USAGE_LIMIT_PATTERNS, log, offset)


def test_a_local_script_that_ends_on_a_cli_s_limit_text_is_judged_a_usage_limit(
    tmp_path: Path,
) -> None:
    log = output(tmp_path, "wrapping claude", SAID)
    assert judged(log) == "usage limit, resets 10:20am (UTC)"


def test_limit_words_an_earlier_try_or_the_script_s_middle_said_are_not_judged(
    tmp_path: Path,
) -> None:
    log = output(tmp_path, SAID, *[f"step {n}" for n in range(20)], "Error: build failed")
    assert judged(log) is None  # before its last 20 lines: the model's or a tool's words
    earlier = output(tmp_path, SAID, "Error: build failed")
    offset = len(f"{SAID}\n".encode())  # this try began after the earlier try's limit
    assert judged(earlier, offset) is None


def test_local_agents_have_an_account_of_their_own_or_the_one_they_name() -> None:
    assert account_of("local", None, {}, {}) == "local"
    assert account_of("local", None, {"ANTHROPIC_API_KEY": "sk-x"}, {}) == "local"
    assert account_of("local", "wrapped", {}, {}) == "wrapped"


def test_a_judged_local_limit_parks_its_account_until_the_reset_and_holds_its_agents(
    tmp_path: Path,
) -> None:
    now = [SAID_AT]
    rules = Governance(usage_limit=UsageLimitPolicy(margin_seconds=60))
    gov = Governor(rules, None, now=lambda: now[0])
    detail = judged(output(tmp_path, SAID))
    assert detail is not None
    account = account_of("local", None, {}, {})
    until = gov.park_until(account, detail, SAID_AT)
    reset = datetime(2026, 12, 5, 10, 21, tzinfo=UTC).timestamp()  # the named minute's end
    assert until == reset + 60
    waits = f"waiting for local until {short_clock(until)}"
    assert gov.hold(("local", "local", None), Counter()) == waits
    assert gov.hold(("local", "wrapped", None), Counter()) is None  # another account
    assert gov.hold(("claude", "claude:~/.claude", None), Counter()) is None
    now[0] = until
    assert gov.hold(("local", "local", None), Counter()) is None  # over after the reset


def test_the_dry_run_plan_names_a_local_account_only_when_an_agent_names_one() -> None:
    wave = WaveDef(number=1, title="t", path=Path("w"), agents=())
    scripts = [("A", ("local", "local", None)), ("B", ("local", "local", None))]
    assert plan_lines(Governance(), wave, scripts) == []  # the demo's dry run stays as it was
    named = plan_lines(Governance(), wave, [*scripts, ("C", ("local", "wrapped", None))])
    assert named[:2] == ["account local: 2 agent(s) (A, B)", "account wrapped: 1 agent(s) (C)"]
    assert named[2].startswith("usage limits: a reset within 360 minutes is waited out")
