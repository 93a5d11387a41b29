"""Launch plans: environment, deadlines, redaction, and the prompt every agent reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import Repo, git_init

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.runtime.agent import programs as planner
from wave_orchestrator.runtime.agent.materialize import materialize
from wave_orchestrator.runtime.agent.plan import plan_agent
from wave_orchestrator.runtime.agent.programs import missing_programs
from wave_orchestrator.sanitize import redact_env
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


def script(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)


def local(agent_id: str, program: str, role: str = "implementation") -> str:
    command = f"{{id: local, local: {{command: [{program}]}}}}"
    return f"  - {{id: {agent_id}, role: {role}, prompt: p, executor: {command}}}\n"


def test_a_worktree_agents_program_must_be_committed_at_base_or_copied(repo: Repo) -> None:
    """run.sh starts in the agent's worktree, made from the base commit: a script that is only
    in the main checkout is not there (exit 127), unless setup.copy copies it in. Closure
    agents start in the integration worktree, which gets no copies."""
    agents = [("A", "./agent.sh"), ("B", "./tools/committed.sh"), ("C", "./copied.sh")]
    agents += [("D", "kit/run.sh"), ("E", "./absent.sh")]
    wave = "".join(local(a, program) for a, program in agents)
    wave += local("qa", "./copied.sh", role="cont-qa")
    repo.lane(
        "main",
        "closure: {required_roles: []}\nisolation: worktree\nsetup: {copy: [copied.sh, kit/]}\n",
        {1: "agents:\n" + wave, 2: "isolation: shared\nagents:\n" + wave},
    )
    script(repo.root / "tools" / "committed.sh")
    base = git_init(repo.root)
    for rel in ("agent.sh", "copied.sh", "kit/run.sh"):  # in the main checkout, untracked
        script(repo.root / rel)
    lane = load_lane(repo.root, "main")
    path_env = "/usr/bin:/bin"
    absent = f"executor local needs `./absent.sh`, not found in {repo.root}"
    assert planner.missing_at_start(lane, [lane.wave(1)], path_env) == [
        f"agent w1/E: {absent}",
        f"agent w1/A: executor local needs `./agent.sh`, which is not committed at base "
        f"{base[:12]} (isolation: worktree starts from it): commit it, or list it in setup.copy",
        f"agent w1/qa: executor local needs `./copied.sh`, which is not committed at base "
        f"{base[:12]} (the integration worktree, where closure agents run, starts from it and "
        "gets no setup.copy): commit it",
    ]
    # the shared checkout: exactly today's check, which finds the scripts where they are
    shared = planner.missing_at_start(lane, [lane.wave(2)], path_env)
    assert shared == missing_programs(
        planner.required_programs([lane.wave(2)]), path_env, repo.root
    )
    assert shared == [f"agent w2/E: {absent}"]


def test_a_program_committed_after_the_base_is_not_in_the_worktree(repo: Repo) -> None:
    repo.lane(
        "main",
        "closure: {required_roles: []}\nisolation: worktree\nbase: v1\n",
        {1: "agents:\n" + local("A", "./agent.sh")},
    )
    base = git_init(repo.root)
    subprocess.run(["git", "-C", str(repo.root), "tag", "v1"], check=True)
    script(repo.root / "agent.sh")
    subprocess.run(["git", "-C", str(repo.root), "add", "agent.sh"], check=True)
    me = ["-c", "user.name=Me", "-c", "user.email=me@example.com"]
    subprocess.run(["git", "-C", str(repo.root), *me, "commit", "-qm", "agent"], check=True)
    lane = load_lane(repo.root, "main")
    assert planner.missing_at_start(lane, lane.waves, "/usr/bin:/bin") == [
        f"agent w1/A: executor local needs `./agent.sh`, which is not committed at base "
        f"{base[:12]} (isolation: worktree starts from it): commit it, or list it in setup.copy"
    ]
    with_head = lane.wave(1)._replace(isolation=lane.wave(1).isolation._replace(base=None))
    assert planner.missing_at_start(lane, [with_head], "/usr/bin:/bin") == []  # HEAD has it
