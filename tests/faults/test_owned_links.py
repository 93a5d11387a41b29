"""Fault class 13: owned paths through links. An owned path, shared path, deliverable or prompt
file that leads out of the repository through a symbolic link (a folder on the way, the file
itself, a loop) fails validation; at gate time a deliverable or a closure report that became
such a link does not satisfy the gate, however old and real the file outside is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import Repo, local_lane

from wave_orchestrator.closure.gates import AgentResult, judge_cont_qa
from wave_orchestrator.closure.implementation_gate import judge_implementation
from wave_orchestrator.closure.markers import parse_markers
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec

LOCAL = "executor: {local: {command: [echo, hi]}}"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the repository, holding an old file an agent never wrote."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "result.md").write_text("stale, from elsewhere\n")
    (folder / "prompt.md").write_text("a prompt from outside\n")
    return folder


def validate(repo: Repo, agent_fields: str, shared: str = "") -> list[dict[str, object]]:
    wave = f"{shared}agents:\n  - {{id: A1, {LOCAL}, {agent_fields}}}\n"
    repo.lane("main", local_lane(), {1: wave})
    result = repo.wave("validate", "--lane", "main", "--json")
    assert "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    return [] if data["valid"] else list(data["errors"])


@pytest.mark.parametrize(
    ("links", "fields", "field"),
    [
        ({"out": "{outside}"}, "prompt: w, owns: [out/]", "agents[0].owns[0]"),
        ({"docs": "{outside}"}, "prompt: w, owns: [docs/result.md]", "agents[0].owns[0]"),
        ({"r.md": "{outside}/result.md"}, "prompt: w, owns: [r.md]", "agents[0].owns[0]"),
        ({"a/b": "{outside}"}, "prompt: w, owns: [a/b/c/d.md]", "agents[0].owns[0]"),
        (
            {"docs": "{outside}"},
            "prompt: w, owns: [src/], deliverables: [docs/result.md]",
            "agents[0].deliverables[0]",
        ),
        (
            {"p.md": "{outside}/prompt.md"},
            "prompt_file: p.md, owns: [src/]",
            "agents[0].prompt_file",
        ),
        ({"loop1": "loop2", "loop2": "loop1"}, "prompt: w, owns: [loop1/x]", "agents[0].owns[0]"),
    ],
)
def test_a_path_through_a_link_out_of_the_repository_fails_validation(
    repo: Repo, outside: Path, links: dict[str, str], fields: str, field: str
) -> None:
    for name, target in links.items():
        link = repo.root / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target.format(outside=outside), link)
    errors = validate(repo, fields)
    assert [e["field"] for e in errors] == [field], errors
    assert "leads out of the repository through a symbolic link" in str(errors[0]["message"])
    assert errors[0]["file"] == "lanes/main/waves/wave-1.yaml" and errors[0]["line"] == 2


def test_a_shared_path_through_a_link_fails_too(repo: Repo, outside: Path) -> None:
    os.symlink(outside, repo.root / "common")
    errors = validate(repo, "prompt: w, owns: [src/]", shared="shared: [common/]\n")
    assert [e["field"] for e in errors] == ["shared[0]"]


def test_links_that_stay_inside_are_fine(repo: Repo) -> None:
    (repo.root / "real" / "docs").mkdir(parents=True)
    os.symlink("real/docs", repo.root / "docs")
    os.symlink(repo.root / "real", repo.root / "abs")  # absolute, but inside
    assert validate(repo, "prompt: w, owns: [docs/, abs/x.md], deliverables: [docs/a.md]") == []


def agent(
    deliverables: tuple[str, ...] = (), owns: tuple[str, ...] = (), role: str = "implementation"
) -> AgentDef:
    return AgentDef(
        id="A1",
        title="A1",
        role=role,
        executor=ExecutorSpec(id="local"),
        prompt="w",
        owns=owns,
        deliverables=deliverables,
    )


@pytest.mark.parametrize("where", ["the file", "a folder on the way"])
def test_a_deliverable_that_became_a_link_out_does_not_satisfy_the_gate(
    tmp_path: Path, outside: Path, where: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    if where == "the file":
        (repo / "out").mkdir()
        os.symlink(outside / "result.md", repo / "out" / "result.md")
    else:
        os.symlink(outside, repo / "out")
    result = AgentResult(
        agent(("out/result.md",), ("out/",)), "success", 0, parse_markers(""), repo
    )
    gate = judge_implementation([result])
    assert [f.code for f in gate.failures] == ["deliverable-outside-repository"]
    # the same deliverable, a real file inside: passes
    os.unlink(repo / ("out/result.md" if where == "the file" else "out"))
    (repo / "out").mkdir(exist_ok=True)
    (repo / "out" / "result.md").write_text("new\n")
    assert judge_implementation([result]).passed


def test_a_closure_report_that_is_a_link_out_is_not_written(tmp_path: Path, outside: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (outside / "qa.md").write_text("Verdict: PASS\n")
    os.symlink(outside / "qa.md", repo / "docs" / "qa.md")
    gate_line = "[wave-gate] " + " ".join(
        f"{d}=pass" for d in ("architecture", "integration", "durability", "live", "docs")
    )
    qa = AgentResult(
        agent(owns=("docs/qa.md",), role="cont-qa"), "success", 0, parse_markers(gate_line), repo
    )
    codes = [f.code for f in judge_cont_qa([qa]).failures]
    assert "missing-cont-qa-report" in codes and "missing-cont-qa-verdict" in codes


@pytest.mark.e2e
def test_an_agent_that_links_its_deliverable_out_fails_the_wave(
    tmux_repo: Repo, outside: Path
) -> None:
    """Valid at launch; the agent swaps its folder for a link to an old file outside."""
    command = json.dumps(f"rm -rf out && ln -s {outside} out")
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n  - {id: A1, prompt: w, owns: [out/], deliverables: [out/result.md], "
            f"executor: {{local: {{command: {command}}}}}}}\n"
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [e for e in tmux_repo.events("main") if e["event"] == "gate_failed"]
    assert [(e["stage"], e["status"]) for e in failed] == [
        ("implementation", "deliverable-outside-repository")
    ]
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "failed"
