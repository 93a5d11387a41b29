"""What dashboard.json says of an agent's output: the last line a person would read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wave_orchestrator.runtime.wave.snapshot import last_line, last_phase

USAGE = Path(__file__).parents[1] / "fixtures" / "usage"


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("claude-stream-json.jsonl", "All 3 tests pass."),
        ("claude-json.json", "Hello"),
        ("codex-one-turn.jsonl", "Hello"),
        ("opencode-one-step.jsonl", "Hello"),
        ("claude-text.log", "All 3 tests pass."),
    ],
)
def test_last_line_of_json_output_is_prose(fixture: str, expected: str) -> None:
    assert last_line((USAGE / fixture).read_text()) == expected


def test_last_line_strips_colour_and_progress() -> None:
    assert last_line("one\n\x1b[32mtwo\x1b[0m\n50%\r100% done\n\n") == "100% done"
    assert last_line("") == ""


def test_last_phase_is_the_latest_phase_marker() -> None:
    text = "[wave-phase] coding\nwork\n  - [wave-phase] validating\n[wave-phase] bogus\n"
    assert last_phase(text) == "validating"
    assert last_phase("no phases here") is None


def test_last_phase_is_read_inside_json_output_but_not_from_tool_output() -> None:
    said = {
        "type": "item.completed",
        "item": {"type": "agent_message", "text": "[wave-phase] validating"},
    }
    quoted = {
        "type": "item.completed",
        "item": {"type": "command_execution", "aggregated_output": "[wave-phase] deploying"},
    }
    text = "\n".join(json.dumps(e) for e in (said, quoted)) + "\n"
    assert last_phase(text) == "validating"


def test_a_marker_as_the_last_line_is_shown_as_what_it_says() -> None:
    gate = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=concerns"
    assert last_line(f"work\n{gate} detail=two pages left\n") == (
        "gate: architecture pass, integration pass, durability pass, live pass, docs concerns "
        "(two pages left)"
    )
    assert last_line("work\n[wave-verdict] pass\n") == "verdict: pass"
    assert last_line("[wave-phase] nonsense\n") == "[wave-phase] nonsense"  # invalid: as it is


def test_an_ended_agents_log_is_not_looked_at_again(tmp_path: Path) -> None:
    """A burst of 500 finishes redraws the picture; logs of agents that ended are read once
    more after their end, then taken from the cache (no stat for each of 500 files)."""
    from wave_orchestrator.runtime.wave.snapshot import OutputCache

    log = tmp_path / "output.log"
    log.write_text("working\n")
    cache = OutputCache()
    assert cache.read(log)[0] == "working"
    log.write_text("working\nlast words\n")
    assert cache.read(log, final=True)[0] == "last words"  # the look after the end
    log.write_text("working\nlast words\nwritten by a leftover\n")
    assert cache.read(log, final=True)[0] == "last words"  # then never again
    assert cache.read(log)[0] == "written by a leftover"  # a running agent's: always
