"""Launch plans: environment, deadlines, redaction, and the prompt every agent reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Repo

from wave_orchestrator.definitions.lane_loader import load_lane
from wave_orchestrator.runtime import planner
from wave_orchestrator.runtime.planner import materialize, missing_programs, plan_agent, redact_env
from wave_orchestrator.state.layout import StateLayout

LANE = """
closure: {required_roles: []}
defaults: {executor: codex, timeout_minutes: 30}
role_prompts: {cont-qa: prompts/qa.md}
"""


def test_plan_env_deadline_and_prompt(repo: Repo) -> None:
    folder = repo.lane(
        "main",
        LANE,
        {
            1: """
        title: Login
        agents:
          - {id: A1, prompt: Build it., owns: [src/], deliverables: [src/a.py],
             executor: {budget: {minutes: 5}, env: {TOKEN_X: s3cret}}}
          - {id: Q, role: cont-qa, prompt: Review., owns: [r/qa.md]}
    """
        },
    )
    (folder / "prompts").mkdir()
    (folder / "prompts" / "qa.md").write_text("STANDING QA PROMPT")
    lane = load_lane(repo.root, "main")
    layout = StateLayout(lane.state_dir, "main")
    wave = lane.wave(1)
    a1 = plan_agent(lane, layout, wave, wave.agent("A1"), attempt=2)
    assert a1.deadline_minutes == 5  # min(timeout_minutes, budget)
    assert plan_agent(lane, layout, wave, wave.agent("Q")).deadline_minutes == 30
    for key, value in {
        "WAVE_LANE": "main",
        "WAVE_NUMBER": "1",
        "WAVE_WAVE": "1",
        "WAVE_AGENT_ID": "A1",
        "WAVE_ROLE": "implementation",
        "WAVE_ATTEMPT": "2",
        "WAVE_EXECUTOR": "codex",
        "WAVE_REPO": str(repo.root),
        "TOKEN_X": "s3cret",
    }.items():
        assert a1.env[key] == value
    assert a1.env["WAVE_PROMPT_FILE"] == str(a1.paths.prompt)
    assert a1.preview()["env"]["TOKEN_X"] == "***"
    materialize(a1)
    prompt = a1.paths.prompt.read_text()
    assert "agent A1" in prompt and "src/a.py" in prompt and prompt.rstrip().endswith("Build it.")
    q = plan_agent(lane, layout, wave, wave.agent("Q"))
    materialize(q)
    qa_prompt = q.paths.prompt.read_text()
    assert qa_prompt.startswith("STANDING QA PROMPT") and "[wave-gate]" in qa_prompt


def test_redaction_names() -> None:
    env = {
        "OPENAI_API_KEY": "a",
        "GH_TOKEN": "b",
        "DB_PASSWORD": "c",
        "MY_SECRET": "d",
        "HOME": "/root",
    }
    assert redact_env(env) == {
        "OPENAI_API_KEY": "***",
        "GH_TOKEN": "***",
        "DB_PASSWORD": "***",
        "MY_SECRET": "***",
        "HOME": "/root",
    }


def test_missing_programs_names_every_agent_though_each_program_is_looked_for_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    real_which = planner.shutil.which

    def which(program: str, path: str | None = None) -> str | None:
        looked.append(program)
        return real_which(program, path=path)

    monkeypatch.setattr(planner.shutil, "which", which)
    needs = [("w1/A1", "codex", "no-such-agent-cli"), ("w1/A2", "codex", "no-such-agent-cli")]
    missing = missing_programs([*needs, ("w1/A3", "local", "sh")], "/usr/bin:/bin", tmp_path)
    assert [m.split(":")[0] for m in missing] == ["agent w1/A1", "agent w1/A2"]
    assert sorted(looked) == ["no-such-agent-cli", "sh"]
