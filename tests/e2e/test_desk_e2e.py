"""End to end: two agents of one wave share a file through the desk (SPEC 10)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo

pytestmark = pytest.mark.e2e

LANE = """
shared_files: true
closure: {required_roles: []}
defaults: {executor: local, timeout_minutes: 1, max_retries_per_wave: 0, launch_stagger_ms: 0}
"""

FIRST = (
    "wave desk claim notes.md --intent 'write the intro' > claim-A.txt; touch A-holds; sleep 1; "
    "echo 'intro by A' >> notes.md; {finish}"
)
SECOND = (
    "for i in $(seq 900); do [ -e A-holds ] && break; sleep 0.1; done; "
    "wave desk claim notes.md --intent 'append the outro' > claim-B.txt; "
    "wave desk wait --timeout 30 > got-B.txt || exit 3; echo 'outro by B' >> notes.md"
)


def run(repo: Repo, finish: str) -> None:
    wave = (
        "agents:\n"
        f"  - {{id: A, prompt: first, owns: [notes.md], executor: {{local: {{command: {json.dumps(FIRST.format(finish=finish))}}}}}}}\n"
        f"  - {{id: B, prompt: second, owns: [notes.md], executor: {{local: {{command: {json.dumps(SECOND)}}}}}}}\n"
    )
    repo.lane("main", LANE, {1: wave})
    result = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr


def test_second_agent_waits_for_the_handover_and_gets_the_note(tmux_repo: Repo) -> None:
    run(tmux_repo, "wave desk handover notes.md --note 'intro done; keep the heading'")
    root = tmux_repo.root
    assert (root / "claim-A.txt").read_text().strip() == "granted notes.md"
    assert (
        (root / "claim-B.txt")
        .read_text()
        .startswith("queued notes.md: held by A (write the intro); you are number 1")
    )
    assert (
        root / "got-B.txt"
    ).read_text().strip() == "granted notes.md by A: intro done; keep the heading"
    assert (root / "notes.md").read_text() == "intro by A\noutro by B\n"
    status = json.loads(
        tmux_repo.wave("desk", "status", "--lane", "main", "--wave", "1", "--json").stdout
    )
    assert (status["handovers"][0]["from"], status["handovers"][0]["to"]) == ("A", "B")
    # Agents of a shared wave are told the desk commands in their prompt.
    assert "wave desk claim PATH" in (tmux_repo.agent_dir("main", 1, "A") / "prompt.md").read_text()


def test_a_finished_agents_files_are_handed_over_with_its_last_output(tmux_repo: Repo) -> None:
    run(tmux_repo, "echo 'A: intro written, 3 paragraphs'")  # A never hands over itself
    got = (tmux_repo.root / "got-B.txt").read_text().strip()
    assert got == (
        "granted notes.md by A: A finished: completed; files changed: notes.md; "
        "its last output: A: intro written, 3 paragraphs"
    )
    assert (tmux_repo.root / "notes.md").read_text() == "intro by A\noutro by B\n"
    events = [e for e in tmux_repo.events("main") if e["event"] == "desk_handover"]
    # A's file went to B; when B finished nobody waited, so it was released.
    assert [(e["agent"], e["path"], e.get("to")) for e in events] == [
        ("A", "notes.md", "B"),
        ("B", "notes.md", None),
    ]


def test_the_holder_is_told_who_waits_and_the_request_is_resolved_by_the_handover(
    tmux_repo: Repo,
) -> None:
    run(
        tmux_repo, "wave coord inbox > inbox-A.txt; wave desk handover notes.md --note 'intro done'"
    )
    inbox = (tmux_repo.root / "inbox-A.txt").read_text()
    assert "B waits for notes.md: hand it over when you are done with it" in inbox
    shown = json.loads(
        tmux_repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--json").stdout
    )
    waits = [r for r in shown if r["kind"] == "request" and r["agent"] == "B"]
    assert [(r["targets"], r["artifacts"], r["status"]) for r in waits] == [
        (["A"], ["notes.md"], "resolved")
    ]


def test_a_shared_file_changed_without_a_checkout_is_named_at_wave_end(tmux_repo: Repo) -> None:
    wave = (
        "agents:\n"
        "  - {id: A, prompt: a, owns: [notes.md], executor: {local: {command: 'echo a >> notes.md'}}}\n"
        "  - {id: B, prompt: b, owns: [notes.md], executor: {local: {command: 'true'}}}\n"
    )
    tmux_repo.lane("main", LANE, {1: wave})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert "file checkout was not enforced for notes.md (owners=A, B" in done.stderr
    events = [e for e in tmux_repo.events("main") if e["event"] == "desk_unenforced"]
    assert [(e["path"], e["owners"]) for e in events] == [("notes.md", ["A", "B"])]
