"""An agent's skills as each executor takes them: codex --add-dir, claude's system prompt file
and Claude Code's own skill folder, opencode's --file and instructions, the prompt's catalog
for every executor; resolved again when a fallback changes the executor."""

from __future__ import annotations

import json

from helpers import Repo
from skills.skill_fixtures import write_skill

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.runtime.agent.materialize import materialize
from wave_orchestrator.runtime.agent.plan import AgentLaunch, plan_agent
from wave_orchestrator.state.layout import StateLayout

LANE = """\
closure: {required_roles: []}
defaults: {executor: codex}
executors: {claude: {append_system_prompt_file: lane-system.md}}
skills:
  base: [house-style]
  by_executor: {codex: [runtime-codex], claude: [runtime-claude], opencode: [runtime-opencode]}
"""
WAVE = """\
agents:
  - {id: A, prompt: do it, skills: [forced], executor: {id: codex, fallbacks: [claude]}}
  - {id: L, prompt: do it, executor: {id: local, local: {command: "true"}}}
"""


def planned(repo: Repo, agent: str, executor: str | None = None) -> AgentLaunch:
    write_skill(
        repo.root,
        "house-style",
        body="# House style\n\nName things for what they are.\n",
        adapters={"claude": "Claude: prefer Edit over Write.\n", "codex": "Codex: apply_patch.\n"},
        references={"naming.md": "long names are fine\n"},
    )
    for ex in ("codex", "claude", "opencode"):
        write_skill(repo.root, f"runtime-{ex}", executors=(ex,))
    write_skill(repo.root, "forced", roles=("deploy",))  # inactive by role: named, so given
    (repo.root / "lane-system.md").write_text("The lane's own system prompt.\n")
    repo.lane("main", LANE, {1: WAVE})
    lane = load_lane(repo.root, "main")
    wave = lane.wave(1)
    launch = plan_agent(
        lane, StateLayout(lane.state_dir, "main"), wave, wave.agent(agent), 1, executor
    )
    materialize(launch)
    return launch


def test_codex_gets_each_bundle_with_add_dir_and_the_catalog(repo: Repo) -> None:
    launch = planned(repo, "A")
    skills = launch.paths.skills
    argv = list(launch.command.argv)
    assert argv[-1] == "-"
    dirs = [argv[i + 1] for i, a in enumerate(argv) if a == "--add-dir"]
    assert dirs == [str(skills / "bundles" / s) for s in ("house-style", "runtime-codex", "forced")]
    copied = skills / "bundles" / "house-style"
    assert (copied / "SKILL.md").read_text().startswith("# House style")
    assert (copied / "adapters" / "codex.md").exists()
    assert not (copied / "adapters" / "claude.md").exists()  # another executor's adapter
    assert (copied / "references" / "naming.md").read_text() == "long names are fine\n"
    prompt = launch.paths.prompt.read_text()
    assert "## Skill context" in prompt and prompt.index("## Skill context") < prompt.index(
        "## task"
    )
    assert (
        f"- house-style: Skill house-style. What house-style teaches\n  files: {copied}/" in prompt
    )
    resolved = json.loads((skills / "resolved.json").read_text())
    assert resolved["ids"] == ["house-style", "runtime-codex", "forced"]
    assert resolved["executor"] == "codex" and resolved["role"] == "implementation"
    assert launch.env["WAVE_SKILLS"] == "house-style,runtime-codex,forced"
    assert launch.preview()["skills"]["ids"] == resolved["ids"]


def test_a_fallback_to_claude_resolves_again_and_gets_a_system_prompt_file(repo: Repo) -> None:
    launch = planned(repo, "A", "claude")
    skills = launch.paths.skills
    argv = list(launch.command.argv)
    at = argv.index("--append-system-prompt-file")
    assert argv[at + 1] == str(skills / "skills.md")
    assert argv.count("--append-system-prompt-file") == 1  # the lane's file is inside ours
    assert argv[argv.index("--add-dir") + 1] == str(skills / "native")
    text = (skills / "skills.md").read_text()
    assert text.startswith("The lane's own system prompt.\n")
    assert "Name things for what they are." in text and "Claude: prefer Edit over Write." in text
    assert "Codex: apply_patch." not in text
    assert launch.skills is not None and launch.skills.ids == [
        "house-style",
        "runtime-claude",
        "forced",
    ]
    native = (skills / "native" / ".claude" / "skills" / "house-style" / "SKILL.md").read_text()
    assert native.startswith(
        '---\nname: house-style\ndescription: "What house-style teaches"\n---\n'
    )
    assert (
        skills / "native" / ".claude" / "skills" / "house-style" / "references" / "naming.md"
    ).exists()
    # the codex attempt's copies are gone: only this executor's skills are there
    assert not (skills / "bundles" / "runtime-codex").exists()


def test_opencode_gets_files_and_instructions(repo: Repo) -> None:
    launch = planned(repo, "A", "opencode")
    skills = launch.paths.skills
    argv = list(launch.command.argv)
    files = [argv[i + 1] for i, a in enumerate(argv) if a == "-f"]
    assert str(skills / "bundles" / "house-style" / "SKILL.md") in files
    assert str(skills / "bundles" / "house-style" / "skill.yaml") in files
    assert str(skills / "bundles" / "house-style" / "references" / "naming.md") in files
    assert argv[argv.index("-f") :] == [x for f in files for x in ("-f", f)]  # -f goes last
    config = json.loads((skills / "opencode.json").read_text())
    assert config["instructions"] == [str(skills / "skills.md")]
    assert launch.env["OPENCODE_CONFIG"] == str(skills / "opencode.json")


def test_local_gets_the_catalog_only(repo: Repo) -> None:
    launch = planned(repo, "L")
    assert launch.command.argv == ("bash", "-c", "true")
    assert "- house-style: Skill house-style." in launch.paths.prompt.read_text()
    assert "runtime-" not in launch.paths.prompt.read_text()


def test_an_agent_without_skills_is_given_none(repo: Repo) -> None:
    repo.lane(
        "main",
        "closure: {required_roles: []}\ndefaults: {executor: codex}\n",
        {1: WAVE.replace(", skills: [forced]", "")},
    )
    lane = load_lane(repo.root, "main")
    wave = lane.wave(1)
    launch = plan_agent(lane, StateLayout(lane.state_dir, "main"), wave, wave.agent("A"))
    materialize(launch)
    assert launch.skills is None and "--add-dir" not in launch.command.argv
    assert "skills" not in launch.preview() and "WAVE_SKILLS" not in launch.env
    assert "## Skill context" not in launch.paths.prompt.read_text()
    assert not launch.paths.skills.exists()
