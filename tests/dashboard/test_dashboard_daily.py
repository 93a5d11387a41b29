"""The dashboard a daily user sees: a failed stage marked ✗, an 80-column header,
agents before events on a short screen, no padding when piped; drawn in a real 80x24 pane."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import libtmux
from helpers import Repo, wait_for
from rich.console import Console

from wave_orchestrator.dashboard.render import render

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard"


def frame(data: dict[str, Any], width: int = 80, height: int = 24) -> list[str]:
    console = Console(width=width, height=height, no_color=True, highlight=False)
    with console.capture() as captured:
        console.print(render(data, width, height))
    return captured.get().splitlines()


def snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "wave-3.json").read_text())
    return data


def test_a_failed_wave_marks_its_failed_stage() -> None:
    data = snapshot()
    data["status"] = "failed"
    stages = next(line for line in frame(data) if line.startswith("stages:"))
    assert "implementation ✗" in stages and "…" not in stages


def test_the_header_fits_80_columns_whatever_the_title() -> None:
    data = snapshot()
    data["title"] = "A very long wave title that goes on and on about what the wave does " * 2
    header = frame(data)[0]
    assert len(header) <= 80
    assert "[running]" in header and "attempt 2/2" in header and "…" in header


def test_a_short_screen_shows_agents_before_events() -> None:
    data = snapshot()
    lines = frame(data, height=10)
    ids = [a["id"] for a in data["agents"]]
    shown = [i for i in ids if any(line.startswith(i + " ") for line in lines)]
    assert len(shown) >= 4, lines  # 10 rows: header, stages, table header, agents...
    assert len(lines) <= 10
    if "recent events:" in "\n".join(lines):
        assert lines.index("recent events:") > max(
            n for n, line in enumerate(lines) if any(line.startswith(i + " ") for i in ids)
        )


def test_in_a_real_80x24_pane(tmp_path: Path, server: libtmux.Server) -> None:
    """What a person sees: captured from a tmux pane of 80 columns and 24 rows."""
    repo = Repo(tmp_path / "repo")
    repo.lane("main", "closure: {required_roles: []}\n", {3: "agents: [{id: A1, prompt: x}]"})
    wave_dir = repo.state("main") / "waves" / "wave-3"
    wave_dir.mkdir(parents=True)
    data = snapshot()
    data["status"] = "failed"
    data["title"] = "x" * 120
    (wave_dir / "dashboard.json").write_text(json.dumps(data))
    cmd = [sys.executable, "-m", "wave_orchestrator", "dashboard", "--repo", str(repo.root)]
    cmd += ["--lane", "main", "--once", "--wave", "3"]
    done = tmp_path / "done"
    session = server.new_session(
        "dash",
        x=80,
        y=24,
        window_command=f"{shlex.join(cmd)}; touch {done}; sleep 30",
        environment={"NO_COLOR": "1", "PATH": repo.env["PATH"], "HOME": str(tmp_path)},
    )
    pane = session.active_window.active_pane
    assert pane is not None
    wait_for(done.exists, 30, what="the dashboard to draw")
    lines = [line for line in pane.capture_pane() if line.strip()]
    assert lines[0].startswith("lane main  wave 3: xxx")
    assert lines[0].rstrip().endswith("…  [failed]  attempt 2/2  updated 08:45:03Z")
    assert all(len(line) <= 80 for line in lines)
    assert any("implementation ✗" in line for line in lines)
    assert any(line.startswith("api ") for line in lines)
    assert shutil.which("tmux")
