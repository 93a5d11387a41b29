"""End to end: a closure agent that follows its briefing to the letter passes its gate, and one
that prints the briefing's failing example fails it with the code the briefing names.

The fake agent knows nothing of the roles: it reads its prompt on stdin, writes the report file
the prompt names, and prints the lines under "When the work passes" (or "When it does not
pass") verbatim, as a literal model would.
"""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_lane

from wave_orchestrator.agents.briefings import GUIDES

pytestmark = pytest.mark.e2e

LANE = local_lane()

LITERAL = r"""
prompt=$(cat)
report=$(printf '%s\n' "$prompt" | sed -n 's/^1\. Write your report to: //p')
if [ -n "$report" ]; then
  mkdir -p "$(dirname "$report")"
  verdict=PASS; [ "$1" = fail ] && verdict=BLOCKED
  printf '# %s report\nChecked every agent of the wave.\nVerdict: %s\n' "$WAVE_ROLE" "$verdict" > "$report"
fi
heading='^2\. When the work passes'; [ "$1" = fail ] && heading='^3\. When it does not pass'
printf '%s\n' "$prompt" | awk -v h="$heading" 'f && NF == 0 && n > 0 {exit} f && NF > 0 {print; n++} $0 ~ h {f = 1}'
"""


def closure_wave(role: str, mode: str) -> str:
    agents = [
        {"id": "A1", "prompt": "implement it", "executor": {"local": {"command": "true"}}},
        {
            "id": "R",
            "role": role,
            "prompt": "review the wave",
            "owns": [f"reviews/{role}.md"],
            "executor": {"local": {"command": ["literal-agent", mode]}},
        },
    ]
    return "wave: 1\nagents:\n" + "".join(f"  - {json.dumps(a)}\n" for a in agents)


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_an_agent_that_follows_its_briefing_passes_its_gate(tmux_repo: Repo, role: str) -> None:
    tmux_repo.fake("literal-agent", LITERAL)
    tmux_repo.lane("main", LANE, {1: closure_wave(role, "pass")})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    passed = [e["stage"] for e in tmux_repo.events("main") if e["event"] == "gate_passed"]
    assert passed == ["implementation", role]
    printed = (tmux_repo.agent_dir("main", 1, "R") / "output.log").read_text()
    said = [line for line in printed.splitlines() if not line.startswith("[wave] run ended")]
    assert said == list(GUIDES[role].passing)
    assert (tmux_repo.root / "reviews" / f"{role}.md").is_file()


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_the_briefings_failing_example_fails_with_its_code(tmux_repo: Repo, role: str) -> None:
    tmux_repo.fake("literal-agent", LITERAL)
    tmux_repo.lane("main", LANE, {1: closure_wave(role, "fail")})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1, result.stderr
    failed = [e for e in tmux_repo.events("main") if e["event"] == "gate_failed"]
    assert [(e["stage"], e["status"]) for e in failed] == [(role, GUIDES[role].failing_code)]
