"""Start-up: each command loads only what it uses; read-only commands none of the heavy
libraries, nor the lane model and `dataclasses`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import Repo

HEAVY = ("libtmux", "watchdog", "rich", "structlog", "sqlite3", "textual")
# Loaded only where used: grep for a lane's own patterns, difflib for a misspelt name, git and
# worktrees for isolated waves, the Slurm placement for Slurm lanes, the launcher's machinery.
LIGHT = (
    "subprocess",
    "socket",
    "difflib",
    "wave_orchestrator.runtime.wave.workspaces",
    "wave_orchestrator.closure.gates",
    "wave_orchestrator.placement.slurm",
    "wave_orchestrator.runtime.agent.run",
)
# Not even these for validate: it writes nothing and reads no run state.
READ_ONLY = ("tempfile", "wave_orchestrator.state.run_state")
PROBE = f"""
import sys
HEAVY = {HEAVY + LIGHT + READ_ONLY!r} + tuple(sys.argv.pop(1).split(",")[1:])
from wave_orchestrator.console import run  # what the `wave` script runs
sys.argv[0] = "wave"
try:
    run()
    code = 0
except SystemExit as exc:
    code = exc.code
heavy = [m for m in HEAVY if m in sys.modules]
import json  # only now: the command's own imports are what is looked at
sys.__stderr__.write("\\nPROBE " + json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def python(repo: Repo, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter in the repository, ``args`` as its sys.argv[1:]."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def loaded(repo: Repo, *args: str, extra: tuple[str, ...] = ()) -> dict[str, object]:
    """What `wave ARGS` left in sys.modules of HEAVY, LIGHT, READ_ONLY and ``extra`` (with
    the command's exit code and its output)."""
    done = python(repo, PROBE, ",".join(("modules", *extra)), *args)
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE ")][-1]
    result: dict[str, object] = json.loads(line.removeprefix("PROBE "))
    result["stdout"] = done.stdout
    return result


@pytest.fixture
def lane_repo(repo: Repo) -> Repo:
    repo.lane(
        "main",
        "closure: {required_roles: []}\nexecutors: {local: {command: [my-agent]}}\n",
        {1: "agents: [{id: A1, prompt: x, executor: {id: local}}]"},
    )
    return repo


@pytest.fixture
def ran_repo(lane_repo: Repo) -> Repo:
    """The lane after a wave its gate failed: its run state, dashboard and governor files
    exist, so `wave status` and `wave lanes` go through every reader they have."""
    state = lane_repo.root / ".wave" / "main"
    (state / "waves" / "wave-1").mkdir(parents=True)
    at = "2026-12-05T10:00:00.000000Z"
    gate = {"stage": "cont-qa", "status": "failed", "detail": "no report", "action": "rerun"}
    wave = {"state": "failed", "attempts": 1, "finished_at": at, "gate_failure": gate}
    run_state = {
        "lane": "main",
        "waves": {"1": wave},
        "history": [{"at": at, "wave": 1, "from": "running", "to": "failed", "reason": ""}],
    }
    (state / "run-state.json").write_text(json.dumps(run_state))
    snapshot = {
        "lane": "main",
        "wave": 1,
        "status": "completed",
        "agents": [{"id": "A1", "state": "completed", "attempt": 1, "tries": 1}],
        "events": [{"at": at, "event": "agent_finished", "wave": 1, "agent": "A1"}],
    }
    (state / "waves" / "wave-1" / "dashboard.json").write_text(json.dumps(snapshot))
    (state / "governor.json").write_text(json.dumps({"spent_usd": 0.5, "limited": []}))
    return lane_repo


# Only commands that load the whole lane need its model, and with it `dataclasses` (and
# `inspect`, `ast`, `dis` behind it): what `wave status`, `wave lanes` and `wave ps` read is
# plain tuples and dicts. Nor do they start threads, log, or reach a launch's placement; and
# `textwrap` wraps a command's description for its help only.
NOT_FOR_READING = (
    "textwrap",
    "dataclasses",
    "inspect",
    "threading",
    "asyncio",
    "uuid",
    "zoneinfo",
    "wave_orchestrator.definitions.model",
    "wave_orchestrator.state.status",
    "wave_orchestrator.state.logs",
    "wave_orchestrator.governor.governor",
    "wave_orchestrator.placement.choose",
)


@pytest.mark.parametrize(
    "args", [("status",), ("status", "--json"), ("lanes",), ("lanes", "--json"), ("ps",)]
)
def test_status_lanes_and_ps_load_neither_the_lane_model_nor_dataclasses(
    ran_repo: Repo, args: tuple[str, ...]
) -> None:
    result = loaded(ran_repo, *args, extra=NOT_FOR_READING)
    assert result["code"] == 0, result
    heavy = set(result["heavy"]) - set(READ_ONLY)  # type: ignore[arg-type]
    assert not heavy, f"wave {' '.join(args)} imported {sorted(heavy)}"
    if args[0] != "ps":  # the failed wave was read (and its gate, by status), not skipped
        assert "failed" in str(result["stdout"]), result["stdout"]
    if args == ("status",):
        assert "cont-qa gate failed: failed - no report" in str(result["stdout"])


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


@pytest.mark.parametrize(
    "args", [("status",), ("status", "--json"), ("lanes",), ("ps",), ("logs",), ("metrics",)]
)
def test_read_only_commands_import_nothing_of_the_runtime(
    lane_repo: Repo, args: tuple[str, ...]
) -> None:
    """The lane lock, the run state and where agents run are rooms of their own: a command
    that only reads never loads the launcher's machinery."""
    probe = PROBE.replace(
        "heavy = [m for m in HEAVY if m in sys.modules]",
        "heavy = [m for m in sys.modules if m.startswith('wave_orchestrator.runtime')]",
    )
    done = python(lane_repo, probe, "modules", *args)
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE ")][-1]
    result = json.loads(line.removeprefix("PROBE "))
    assert result["heavy"] == [], f"wave {' '.join(args)} imported {result['heavy']}"


def test_validate_loads_no_json_or_shutil(lane_repo: Repo) -> None:
    """It reads lane files only: JSON is for state files and --json, shutil for removing."""
    result = loaded(lane_repo, "validate", extra=("json", "shutil"))
    assert result["code"] == 0
    assert result["heavy"] == [], result["heavy"]


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()])
def test_version_and_help_load_no_dataclasses(lane_repo: Repo, args: tuple[str, ...]) -> None:
    """`dataclasses` brings `inspect` (a third of `wave --help`'s start-up); the lane model
    needs it, the top-level parser and the errors do not."""
    result = loaded(lane_repo, *args, extra=("dataclasses", "wave_orchestrator.cli"))
    assert result["code"] == 0
    assert "dataclasses" not in result["heavy"], result["heavy"]
    # --version answers before any parser is built
    assert ("wave_orchestrator.cli" in result["heavy"]) == (args != ("--version",))


def test_the_command_runs_with_the_collector_on(lane_repo: Repo) -> None:
    """Start-up runs without the cyclic GC (console.py); the command itself, which may be a
    launcher running for hours, must not."""
    probe = """
import gc, json, sys
import wave_orchestrator.cli.validate as validate
seen = {}
def handler(args):
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())
    return 0
validate.run = handler
from wave_orchestrator.console import run
try:
    run()
except SystemExit as exc:
    seen["code"] = exc.code
print(json.dumps(seen))
"""
    done = python(lane_repo, probe, "validate")
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["code"] == 0 and seen["enabled"] is True, seen
    assert seen["frozen"] > 1000, seen  # set-up's objects, moved out of the collector's way


def test_the_fast_exit_waits_for_threads_exit_handlers_and_output(lane_repo: Repo) -> None:
    """console.py ends the process with os._exit once a command returned: only after its
    threads ended, every exit handler ran and its output was flushed, with its own code."""
    probe = """
import atexit, sys, threading, time
import wave_orchestrator.cli.validate as validate
def handler(args):
    def late():
        time.sleep(0.3)
        open("thread-done", "w").write("x")
    threading.Thread(target=late).start()
    atexit.register(lambda: open("atexit-done", "w").write("x"))
    sys.stdout.write("line\\n" * 20000)  # more than a pipe holds: written at exit
    return 3
validate.run = handler
from wave_orchestrator.console import run
run()
"""
    done = python(lane_repo, probe, "validate")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "line\n" * 20000
    assert (lane_repo.root / "thread-done").exists() and (lane_repo.root / "atexit-done").exists()


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
    # it writes (tempfile); the run state only matters to --resume and --auto-next
    assert set(result["heavy"]) <= {"tempfile"}, result["heavy"]  # type: ignore[arg-type]


def test_a_dry_run_prints_the_governors_plan_without_the_governor(repo: Repo) -> None:
    """The plan is words about the lane's limits: the governor itself (its ledger, clock and
    zone database) is the launcher's."""
    repo.lane(
        "main",
        "closure: {required_roles: []}\nexecutors: {local: {command: [my-agent]}}\n"
        "spend_limit_usd: 5\n",
        {1: "agents: [{id: A1, prompt: x, executor: {id: local}}]"},
    )
    unused = (
        "wave_orchestrator.governor.governor",
        "wave_orchestrator.state.ledger",
        "wave_orchestrator.state.logs",
        "zoneinfo",
        "uuid",
        "asyncio",
        "textwrap",
    )
    result = loaded(repo, "launch", "--dry-run", extra=unused)
    assert result["code"] == 0, result
    assert "spend limit $5.00" in str(result["stdout"]), result["stdout"]
    assert set(result["heavy"]) <= {"tempfile"}, result["heavy"]  # type: ignore[arg-type]


# What a live launch of a local lane never uses: structlog's optional renderer (rich, ~40 ms)
# and what it imports for its async methods and a deprecated helper (asyncio, uuid); the zone
# database (for a usage limit's words that name a zone); the Slurm placement.
NOT_FOR_A_LOCAL_LAUNCH = (
    "rich",
    "asyncio",
    "uuid",
    "platform",
    "zoneinfo",
    "wave_orchestrator.placement.slurm",
)


def test_a_launch_loads_structlog_and_nothing_it_does_not_use(tmux_repo: Repo) -> None:
    from helpers import local_agent, local_lane

    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    probe = (
        "import json, sys, runpy\n"
        "sys.argv = ['wave', 'launch', '--lane', 'main', '--no-dashboard', '--repo', sys.argv[1]]\n"
        "try:\n    runpy.run_module('wave_orchestrator', run_name='__main__')\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        f"names = ('structlog', 'watchdog', *{NOT_FOR_A_LOCAL_LAUNCH!r})\n"
        "found = [n for n in names if n in sys.modules]\n"
        "print('RESULT', json.dumps({'code': code, 'loaded': found}), file=sys.__stderr__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmux_repo.root)],
        env=tmux_repo.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("RESULT ")]
    assert line, done.stderr
    result = json.loads(line[-1].removeprefix("RESULT "))
    assert result == {"code": 0, "loaded": ["structlog", "watchdog"]}, done.stderr


@pytest.mark.parametrize("args", [("dashboard", "--once"), ("dashboard", "--plain", "--once")])
def test_the_plain_dashboard_loads_rich_but_not_the_console(
    lane_repo: Repo, args: tuple[str, ...]
) -> None:
    """The interactive console's library (Textual) loads only for the console itself."""
    result = loaded(lane_repo, *args)
    assert result["code"] == 0
    assert "textual" not in result["heavy"] and "rich" in result["heavy"]  # type: ignore[operator]
