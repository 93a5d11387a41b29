"""Fault class 12: terminal escapes. Text that agents (or anyone who can write the state dir)
control reaches the dashboard, `wave status`, `wave logs` on a terminal, `wave metrics`,
`wave desk` and error messages without the sequences a terminal would obey: ESC c (reset),
OSC 52 (clipboard), OSC 0 (title), CSI (screen), the 8-bit C1 forms, other C0 controls."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
from helpers import Repo, local_lane
from rich.console import Console

from wave_orchestrator.dashboard.render import render
from wave_orchestrator.desk.claims import Desk
from wave_orchestrator.sanitize import strip_controls

HOSTILE = [
    "\x1bc",  # full reset
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52: write the clipboard
    "\x1b]0;owned title\x1b\\",  # OSC 0: window title, ST-terminated
    "\x1b[2J\x1b[H",  # clear the screen, home
    "\x9b2J",  # 8-bit CSI
    "\x9d52;c;eA==\x9c",  # 8-bit OSC ... ST
    "\x1bP+q544e\x1b\\",  # DCS request
    "\x07\x08\x0e\x7f",  # BEL, BS, SO, DEL
]
EVIL = "".join(f"part{i}{seq}" for i, seq in enumerate(HOSTILE)) + "end"
VISIBLE = "".join(f"part{i}" for i in range(len(HOSTILE))) + "end"
# What no output may contain: ESC other than colour (SGR), C1 controls, BEL, BS, SO, DEL.
UNSAFE = re.compile(r"\x1b(?!\[[0-9;]*m)|[\x80-\x9f\x07\x08\x0e\x7f]")


def assert_inert(text: str) -> None:
    found = UNSAFE.findall(text)
    assert not found, f"control sequences reached the terminal: {found!r}"


def test_strip_controls_keeps_the_words_and_drops_every_sequence() -> None:
    assert strip_controls(EVIL) == VISIBLE
    coloured = "\x1b[31mred\x1b[0m \x1bc\x1b]52;c;eA==\x07x\nnext\ttab"
    assert strip_controls(coloured, newlines=True, keep_colour=True) == (
        "\x1b[31mred\x1b[0m x\nnext    tab"
    )
    assert strip_controls("a\nb\r\nc") == "a b c"  # one-line fields stay one line


def frame() -> dict[str, object]:
    agent = {
        "id": "A1" + EVIL,
        "role": "implementation" + EVIL,
        "executor": "local" + EVIL,
        "state": "rate-limited",
        "state_note": "CLI retrying" + EVIL,
        "attempt": 1,
        "tries": 1,
        "exit_code": None,
        "elapsed_ms": 1000,
        "last_line": "last" + EVIL,
        "session": "w1-A1",
        "detail": "detail" + EVIL,
    }
    return {
        "lane": "main" + EVIL,
        "wave": 1,
        "title": "title" + EVIL,
        "status": "running" + EVIL,
        "attempt": 2,
        "max_attempts": 2,
        "attempt_reason": "because" + EVIL,
        "updated_at": "2026-01-01T00:00:00Z" + EVIL,
        "stages": [{"stage": "cont-qa" + EVIL, "state": "running"}],
        "agents": [agent, {**agent, "state": "failed"}],
        "events": [{"at": "2026-01-01T00:00:01Z", "event": "x" + EVIL, "agent": "A1" + EVIL}],
    }


@pytest.mark.parametrize("width", [80, 200])
def test_the_dashboard_renders_agent_text_inert_on_a_real_terminal(width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, height=40, color_system="256")
    console.print(render(frame(), width, 40))
    text = out.getvalue()
    assert_inert(text)
    assert "title" in text and "part0part1" in text


def write_state(repo: Repo) -> None:
    """A lane whose state dir says, everywhere a person reads, what an agent chose to print."""
    repo.lane(
        "main",
        local_lane(),
        {1: "agents:\n  - {id: A1, prompt: w, executor: {local: {command: [true]}}}\n"},
    )
    state = repo.state("main")
    wave_dir = state / "waves" / "wave-1"
    wave_dir.mkdir(parents=True)
    (wave_dir / "dashboard.json").write_text(json.dumps(frame()))
    (state / "run-state.json").write_text(
        json.dumps(
            {
                "lane": "main",
                "waves": {
                    "1": {
                        "state": "failed",
                        "attempts": 1,
                        "reason": "gate failed: " + EVIL,
                        "attempt_reason": "retry" + EVIL,
                    }
                },
                "history": [],
            }
        )
    )
    record = {"agent": "A1", "model": "gpt" + EVIL, "reasoning": "high" + EVIL, "role": "x"}
    (state / "metrics.jsonl").write_text(
        json.dumps({**record, "status": "success", "duration_ms": 1000, "tries": 1}) + "\n"
    )


@pytest.mark.parametrize(
    "command",
    [("status",), ("dashboard", "--once"), ("metrics",), ("metrics", "--by", "model-role")],
    ids=" ".join,
)
def test_commands_print_state_written_by_agents_inert(repo: Repo, command: tuple[str, ...]) -> None:
    write_state(repo)
    result = repo.wave(*command, "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout + result.stderr)
    assert "part0part1part2" in result.stdout


def test_status_json_keeps_the_text_and_escapes_every_control(repo: Repo) -> None:
    write_state(repo)
    result = repo.wave("status", "--lane", "main", "--json")
    assert_inert(result.stdout)
    data = json.loads(result.stdout)
    assert data["waves"][0]["reason"] == "gate failed: " + EVIL  # faithful, once decoded


def test_desk_prints_agents_paths_intents_and_notes_inert(repo: Repo) -> None:
    write_state(repo)
    desk = Desk(repo.state("main") / "desk.sqlite3", repo.root, 1)
    desk.claim("A1", "src/a.py", intent="edit" + EVIL)
    desk.claim("A2", "src/a.py", intent="wait" + EVIL)
    desk.handover("A1", "src/a.py", note="done" + EVIL)
    result = repo.wave("desk", "status", "--lane", "main", "--wave", "1")
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout)
    assert "done" + VISIBLE in result.stdout


def run_on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run ``argv`` with a pseudo-terminal as stdout; return what it wrote there."""
    main, secondary = pty.openpty()
    with subprocess.Popen(argv, env=env, cwd=cwd, stdout=secondary, stderr=subprocess.PIPE) as p:
        os.close(secondary)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=30)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_logs_on_a_terminal_are_inert_and_piped_are_byte_for_byte(repo: Repo) -> None:
    write_state(repo)
    log = repo.agent_dir("main", 1, "A1") / "output.log"
    log.parent.mkdir(parents=True)
    raw = ("\x1b[32mgreen\x1b[0m " + EVIL + "\nsecond line\n").encode() + b"\xe2\x82"  # cut UTF-8
    log.write_bytes(raw)
    shown = run_on_a_terminal(repo.command("logs", "A1", "--lane", "main"), repo.env, repo.root)
    assert_inert(shown)
    assert "\x1b[32mgreen\x1b[0m" in shown and VISIBLE in shown and "second line" in shown
    piped = subprocess.run(
        repo.command("logs", "A1", "--lane", "main"), env=repo.env, capture_output=True
    )
    assert piped.stdout == raw


def test_error_messages_quote_hostile_text_inert(repo: Repo) -> None:
    """YAML's double-quoted `\\e` and `\\a` put ESC and BEL in a key, which the problem names."""
    lane_yaml = local_lane() + '"\\e]52;c;eA==\\a\\ec\\x9b2J": 1\n'
    repo.lane(
        "main",
        lane_yaml,
        {1: "agents:\n  - {id: A1, prompt: w, executor: {local: {command: [true]}}}\n"},
    )
    for args in (("validate",), ("launch", "--dry-run")):
        result = repo.wave(*args, "--lane", "main")
        assert result.returncode == 2 and "unknown key" in result.stderr, result.stderr
        assert_inert(result.stderr)


@pytest.mark.e2e
def test_an_agent_printing_escapes_in_its_markers_and_output(tmux_repo: Repo) -> None:
    """A real run: the agent's last line goes to the dashboard, its marker's detail to the
    wave's reason; both reach the person's terminal inert."""
    said = (
        "printf 'hello \\033c\\033]52;c;cHduZWQ=\\007world\\n'; "
        "printf '[wave-proof] completion=integrated durability=none proof=unit state=gap "
        "detail=\\033]0;owned\\007gap\\033c\\n'"
    )
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n  - {id: A1, prompt: w, exit_contract: {completion: integrated, "
            "durability: none, proof: unit, doc_impact: none}, "
            f"executor: {{local: {{command: {json.dumps(said)}}}}}}}\n"
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    assert_inert(result.stdout + result.stderr)
    reason = tmux_repo.run_state("main")["waves"]["1"]["reason"]
    assert "gap" in reason
    for command in (("status",), ("dashboard", "--once")):
        shown = tmux_repo.wave(*command, "--lane", "main")
        assert shown.returncode == 0, shown.stderr
        assert_inert(shown.stdout + shown.stderr)
    status = tmux_repo.wave("status", "--lane", "main").stdout
    assert "gap" in status
