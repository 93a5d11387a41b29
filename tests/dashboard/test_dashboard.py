"""The dashboard frame, rendered from fixed dashboard.json files."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path

import pytest
from helpers import Repo
from rich.console import Console

from wave_orchestrator.cli import main
from wave_orchestrator.dashboard.render import elapsed, render
from wave_orchestrator.state.events import iso_time, short_clock, utc_stamp

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dashboard"


def frame(data: dict, width: int, height: int) -> str:
    console = Console(
        width=width, height=height, no_color=True, highlight=False, record=True, file=io.StringIO()
    )
    console.print(render(data, width, height))
    return console.export_text()


def test_once_matches_the_fixture(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.lane("main", "closure: {required_roles: []}\n", {1: "agents: [{id: A1, prompt: x}]"})
    wave_dir = repo.state("main") / "waves" / "wave-3"
    wave_dir.mkdir(parents=True)
    shutil.copy(FIXTURES / "wave-3.json", wave_dir / "dashboard.json")
    monkeypatch.delenv("NO_COLOR", raising=False)
    args = [
        "dashboard",
        "--repo",
        str(repo.root),
        "--lane",
        "main",
        "--once",
        "--width",
        "80",
        "--height",
        "30",
    ]
    assert main(args) == 0
    assert capsys.readouterr().out == (FIXTURES / "wave-3.80x30.txt").read_text()


def test_agent_rows_show_markup_as_it_is() -> None:
    """A rich table parses a str cell as markup: `[/]` in an agent's role ended the frame."""
    data = json.loads((FIXTURES / "wave-3.json").read_text())
    link = "[link=file:///etc/passwd]codex[/link]"
    data["agents"][0].update(id="[/]api", role="[bold]impl", state="[/]coding", executor=link)
    data["agents"][0].update(attempt="[/]", tries="[@click=app.quit]")
    text = frame(data, 160, 30)
    for shown in ("[/]api", "[bold]impl", "[/]coding", link, "[@click=app.quit]"):
        assert shown in text
    assert "[/]api" in frame(data, 80, 30)


def test_two_hundred_agents_fit_80_columns_with_a_summary() -> None:
    data = json.loads((FIXTURES / "wave-3-200-agents.json").read_text())
    text = frame(data, 80, 30)
    lines = text.splitlines()
    assert len(lines) <= 30 and all(len(line) <= 80 for line in lines)
    summary = next(line for line in lines if line.startswith("… and "))
    hidden = int(summary.split()[2])
    shown = [line.split()[0] for line in lines if line.startswith("agent") and line[5:8].isdigit()]
    assert hidden + len(shown) == 200
    # Agents that need attention come first: every timed-out agent is on screen.
    assert all(f"agent{i:03d}" in shown for i in range(3, 40, 5))
    assert "40 timeout" not in summary and "completed" in summary


def test_wide_terminals_show_role_and_executor() -> None:
    data = json.loads((FIXTURES / "wave-3.json").read_text())
    wide, narrow = frame(data, 200, 40), frame(data, 80, 40)
    assert "executor" in wide.splitlines()[2] and "opencode" in wide
    assert "executor" not in narrow.splitlines()[2]
    for agent in data["agents"]:
        assert agent["id"] in wide and agent["state"] in wide and agent["id"] in narrow


def test_a_wide_terminal_shows_each_agents_sandbox_once_any_is_sandboxed() -> None:
    data = json.loads((FIXTURES / "wave-3.json").read_text())
    assert "sandbox" not in frame(data, 200, 40).splitlines()[2]  # none is: no column
    data["agents"][0]["sandbox"] = "bubblewrap, no network"
    data["agents"][1]["sandbox"] = "none"
    wide = frame(data, 200, 40)
    assert "sandbox" in wide.splitlines()[2]
    rows = {line.split()[0]: line for line in wide.splitlines()[3:] if line.strip()}
    assert "bubblewrap, no network" in rows[data["agents"][0]["id"]]
    assert "bubblewrap" not in rows[data["agents"][1]["id"]]


def test_the_consoles_rows_name_each_agents_sandbox_in_a_few_letters() -> None:
    from wave_orchestrator.dashboard.agent_rows import COLUMNS, agent_cells

    column = COLUMNS.index("sandbox")
    cells = {
        said: agent_cells({"id": "A", "state": "running", "sandbox": said}, {})[column].plain
        for said in ("none", "bubblewrap", "bubblewrap, no network", None)
    }
    assert cells == {
        "none": "-",
        "bubblewrap": "bwrap",
        "bubblewrap, no network": "bwrap no-net",
        None: "-",
    }


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "-"),
        (0, "0m00s"),
        (499, "0m00s"),
        (500, "0m01s"),
        (125_000, "2m05s"),
        (3_600_000, "1h00m"),
    ],
)
def test_elapsed_rounds_half_up(ms: int | None, text: str) -> None:
    assert elapsed(ms) == text


def test_once_before_any_wave_says_so(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.lane("main", "closure: {required_roles: []}\n", {1: "agents: [{id: A1, prompt: x}]"})
    assert main(["dashboard", "--repo", str(repo.root), "--lane", "main", "--once"]) == 0
    assert "no wave has started yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    "data",
    [
        {"agents": None, "events": None, "stages": "implementation"},
        {"agents": ["not a row", {"id": "A1"}], "events": [{"no": "event"}, 3]},
        {},
    ],
)
def test_odd_dashboard_files_render_without_crashing(data: dict) -> None:
    text = frame(data, 80, 30)
    assert "lane" in text and "recent events:" in text


def test_status_survives_odd_state_files(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.lane("main", "closure: {required_roles: []}\n", {1: "agents: [{id: A1, prompt: x}]"})
    state = repo.state("main")
    (state / "waves" / "wave-1").mkdir(parents=True)
    (state / "run-state.json").write_text(
        json.dumps(
            {
                "lane": "main",
                "waves": {"1": {"state": "running"}, "x": {}, "2": "garbage"},
                "history": [],
            }
        )
    )
    (state / "waves" / "wave-1" / "dashboard.json").write_text(
        json.dumps({"agents": [{"id": "A1"}, "junk"], "events": [None, {"agent": "A1", "wave": 1}]})
    )
    assert main(["status", "--repo", str(repo.root), "--lane", "main"]) == 0
    out = capsys.readouterr().out
    # recorded running, no launcher alive: shown as interrupted, never as running
    assert "wave 1: interrupted" in out and "launcher not running" in out and "A1" in out


def test_the_reason_for_a_retry_shows_in_one_line_and_the_frame_still_fits() -> None:
    data = json.loads((FIXTURES / "wave-3-200-agents.json").read_text())
    data["attempt"] = 2
    data["attempt_reason"] = "cont-qa gate failed (gate-integration-blocked): rerunning A2"
    lines = frame(data, 80, 30).splitlines()
    assert "why attempt 2: cont-qa gate failed (gate-integration-blocked): rerunning A2" in lines
    assert len(lines) <= 30
    del data["attempt_reason"]
    assert not any(line.startswith("why attempt") for line in frame(data, 80, 30).splitlines())


def test_a_failed_gate_open_blockers_and_the_board_show_and_the_frame_still_fits() -> None:
    data = json.loads((FIXTURES / "wave-3-200-agents.json").read_text())
    data["gate_failure"] = {
        "stage": "implementation",
        "status": "open-blocker",
        "action": "resolve the blocker (wave coord resolve ID)",
    }
    data["coordination"] = {
        "board": ".wave/main/coordination/wave-3.board.md",
        "blockers": [{"id": "c-1", "agent": "A2", "summary": "schema undecided"}],
        "requests": [{"id": "c-2", "agent": "A3", "summary": "expose GET /items"}],
    }
    lines = frame(data, 100, 30).splitlines()
    text = "\n".join(lines)
    assert "implementation gate failed: open-blocker; resolve the blocker" in text
    assert "blocker c-1 A2: schema undecided" in text
    assert "request c-2 A3: expose GET /items" in text
    assert "board: .wave/main/coordination/wave-3.board.md" in text
    assert len(lines) <= 30
    data.pop("coordination")
    data.pop("gate_failure")
    assert "board:" not in frame(data, 100, 30)


def test_a_silent_cluster_controller_shows_since_when_on_this_machine_s_clock() -> None:
    data = json.loads((FIXTURES / "wave-3-200-agents.json").read_text())
    data["cluster_unreachable_since"] = utc_stamp(1_800_000_000.0)
    clock = time.strftime("%H:%M:%S", time.localtime(1_800_000_000.0))
    lines = frame(data, 80, 30).splitlines()
    assert f"cluster unreachable since {clock}" in lines
    assert len(lines) <= 30
    data["cluster_unreachable_since"] = None
    assert "unreachable" not in frame(data, 80, 30)


def test_limited_and_held_agents_and_the_governor_s_view_are_shown() -> None:
    data = json.loads((FIXTURES / "wave-3-200-agents.json").read_text())
    data["agents"] = data["agents"][:3]
    soon = time.time() + 600
    data["agents"][0].update(state="limited", limited_until=iso_time(soon), state_note="x")
    data["agents"][1].update(state="pending", state_note="waiting for team until 09:40")
    data["agents"][2].update(state="pending", state_note="queued (cap codex=8)")
    data["governor"] = {
        "spent_usd": 1.35,
        "spend_limit_usd": 5.0,
        "costs_partial": True,
        "limited": [
            {"account": "team", "until": iso_time(soon), "detail": "usage limit, resets in 10m"}
        ],
    }
    text = frame(data, 120, 30)
    assert f"limited until {short_clock(soon)}" in text
    assert "waiting for team until 09:40" in text and "queued (cap codex=8)" in text
    assert "spend: $1.35 of $5.00; costs partial" in text
    assert f"limited: team until {short_clock(soon)}" in text


def test_a_reset_time_reads_as_the_clock_today_and_with_its_date_on_another_day() -> None:
    now = time.time()
    today = time.localtime(now)
    noon = time.mktime((today.tm_year, today.tm_mon, today.tm_mday, 12, 5, 0, 0, 0, -1))
    assert short_clock(noon) == "12:05"
    later = noon + 2 * 86400
    assert short_clock(later) == time.strftime("%b %d 12:05", time.localtime(later))
