"""Every `--json` document has exactly the keys docs/cli.md shows for it (issue 14)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, local_lane, wait_for

pytestmark = pytest.mark.e2e

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def documented() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"<!-- json: (.+?) -->\n```json\n(.*?)```", text, re.S)
    return {name: json.loads(body) for name, body in found}


def shape_problems(doc: Any, real: Any, where: str = "$") -> list[str]:
    """Keys missing or extra at any depth (lists: their first items; `{"*": ...}`: any keys)."""
    if isinstance(doc, dict) and isinstance(real, dict):
        if list(doc) == ["*"]:
            return []
        problems = [f"{where}: undocumented key {k!r}" for k in real if k not in doc]
        problems += [f"{where}: documented key {k!r} missing" for k in doc if k not in real]
        for key in doc.keys() & real.keys():
            problems += shape_problems(doc[key], real[key], f"{where}.{key}")
        return problems
    if isinstance(doc, list) and isinstance(real, list) and doc and real:
        return shape_problems(doc[0], real[0], f"{where}[0]")
    return []


def run_json(repo: Repo, *args: str, with_repo: bool = True) -> Any:
    argv = repo.command(*args, "--json")
    if not with_repo:
        argv = argv[:-2]
    done = subprocess.run(argv, env=repo.env, cwd=repo.root, capture_output=True, text=True)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def test_every_json_document_matches_docs_cli_md(tmux_repo: Repo) -> None:
    docs = documented()
    gate = tmux_repo.root / "go"
    lane = local_lane() + "executors: {local: {model: demo}}\n"
    wait = f"while [ ! -e {gate} ]; do sleep 0.1; done; echo done"
    tmux_repo.lane(
        "main",
        lane,
        {
            1: "title: First\nagents:\n"
            f"  - {{id: A, prompt: x, executor: {{local: {{command: {json.dumps(wait)}}}}}}}\n"
            "  - {id: B, prompt: y, depends_on: [A], executor: {local: {command: 'echo b'}}}\n"
        },
    )
    tmux_repo.lane("broken", local_lane(), {1: "agents: [{id: A, prompt: x, timout_minutes: 3}]\n"})
    real: dict[str, Any] = {
        "wave validate": run_json(tmux_repo, "validate", "--lane", "main"),
        "wave validate (invalid)": run_json(tmux_repo, "validate", "--lane", "broken"),
        "wave launch --dry-run": run_json(tmux_repo, "launch", "--lane", "main", "--dry-run"),
        "wave debug-info": run_json(tmux_repo, "debug-info"),
    }
    detached = tmux_repo.wave("launch", "--lane", "main", "--detach", "--no-dashboard")
    assert detached.returncode == 0, detached.stderr
    try:
        real["wave ps"] = wait_for(
            lambda: (run := run_json(tmux_repo, "ps", with_repo=False))["launchers"] and run,
            20,
            interval=0.2,
            what="wave ps to list the launcher",
        )
    finally:
        gate.write_text("go")
    wait_for(
        lambda: not run_json(tmux_repo, "status", "--lane", "main")["launcher"]["alive"],
        30,
        interval=0.2,
        what="the launcher to finish",
    )
    launch = ("launch", "--lane", "main", "--no-dashboard", "--fresh")  # A and B run again
    real["wave launch"] = run_json(tmux_repo, *launch)
    real["wave status"] = run_json(tmux_repo, "status", "--lane", "main")
    real["wave lanes"] = run_json(tmux_repo, "lanes")
    real["wave metrics"] = run_json(tmux_repo, "metrics", "--lane", "main")
    on_wave_1 = ("--lane", "main", "--wave", "1")
    real["wave desk status"] = run_json(tmux_repo, "desk", "status", *on_wave_1)
    real["wave desk mine"] = run_json(tmux_repo, "desk", "mine", *on_wave_1, "--agent", "A")
    real["wave coord post"] = run_json(
        tmux_repo, "coord", "post", *on_wave_1, "--kind", "request", "--summary", "hi"
    )
    real["wave coord show"] = run_json(tmux_repo, "coord", "show", *on_wave_1)
    real["wave comment"] = run_json(tmux_repo, "comment", *on_wave_1, "--text", "hello")

    assert sorted(real) == sorted(docs), "a documented shape is not tested, or the reverse"
    problems = [f"{name}: {p}" for name in docs for p in shape_problems(docs[name], real[name])]
    assert not problems, "\n".join(problems)
    # the values issue 14 asked for
    assert real["wave metrics"]["groups"][0]["reasoning"] is None
    agent = real["wave status"]["waves"][0]["agents"][0]
    assert agent["last_event"]["event"] == "agent_finished" and agent["last_event"]["at"]
