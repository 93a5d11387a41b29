"""Start-up: a read-only command loads none of the heavy libraries (issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import Repo

HEAVY = ("libtmux", "watchdog", "rich", "structlog", "sqlite3")
# Loaded only where used: grep for a lane's own patterns, difflib for a misspelt name, git and
# worktrees for isolated waves, the Slurm placement for Slurm lanes, the launcher's machinery.
LIGHT = (
    "subprocess",
    "socket",
    "difflib",
    "wave_orchestrator.runtime.workspaces",
    "wave_orchestrator.closure.gates",
    "wave_orchestrator.runtime.placement.slurm",
    "wave_orchestrator.runtime.agent_run",
)
# Not even these for validate: it writes nothing and reads no run state.
READ_ONLY = ("tempfile", "wave_orchestrator.state.run_state")
PROBE = f"""
HEAVY = {HEAVY + LIGHT + READ_ONLY!r}
import json, sys
from wave_orchestrator.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = [m for m in HEAVY if m in sys.modules]
sys.__stderr__.write("\\nPROBE " + json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def loaded(repo: Repo, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE ")][-1]
    result: dict[str, object] = json.loads(line.removeprefix("PROBE "))
    return result


@pytest.fixture
def lane_repo(repo: Repo) -> Repo:
    repo.lane(
        "main",
        "closure: {required_roles: []}\nexecutors: {local: {command: [my-agent]}}\n",
        {1: "agents: [{id: A1, prompt: x, executor: {id: local}}]"},
    )
    return repo


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("-V",),
        ("validate",),
        ("validate", "--json"),
        ("status",),
        ("status", "--json"),
        ("lanes",),
        ("ps",),
    ],
)
def test_read_only_commands_load_no_heavy_library(lane_repo: Repo, args: tuple[str, ...]) -> None:
    result = loaded(lane_repo, *args)
    assert result["code"] == 0
    heavy = set(result["heavy"])  # type: ignore[arg-type]
    if args[0] in ("status", "ps", "lanes"):  # they read run states or the launcher registry
        heavy -= set(READ_ONLY)
    assert not heavy, f"wave {' '.join(args)} imported {sorted(heavy)}"


@pytest.mark.parametrize("args", [("--help",), (), ("validate", "--help"), ("launch", "-h")])
def test_help_loads_rich_for_the_formatter_and_nothing_else(
    lane_repo: Repo, args: tuple[str, ...]
) -> None:
    """rich-argparse draws the help, so rich may load; tmux, file watching, logging may not."""
    result = loaded(lane_repo, *args)
    assert result["code"] == 0
    assert set(result["heavy"]) - set(LIGHT) <= {"rich"}, result["heavy"]  # type: ignore[arg-type]


def test_a_dry_run_starts_no_tmux_watcher_or_logging(lane_repo: Repo) -> None:
    result = loaded(lane_repo, "launch", "--dry-run")
    assert result["code"] == 0
    assert set(result["heavy"]) <= set(READ_ONLY), result["heavy"]  # type: ignore[arg-type]
