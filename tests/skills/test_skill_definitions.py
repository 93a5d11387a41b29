"""skills of lane.yaml and of an agent: bundles read from the skills folder, resolved per
agent, and every bad id, duplicate or manifest reported as file:line:col."""

from __future__ import annotations

import os

import pytest
from helpers import Repo
from skills.skill_fixtures import write_skill

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid
from wave_orchestrator.runtime.wave.reuse import fingerprint

LANE = "closure: {required_roles: []}\ndefaults:\n  executor: codex\n"
WAVE = "agents:\n  - {id: A, prompt: p}\n  - {id: B, prompt: p, role: infra}\n"


def problems(repo: Repo) -> list[str]:
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    return [str(p) for p in err.value.problems]


def test_resolution_by_base_role_executor_activation_and_explicit(repo: Repo) -> None:
    write_skill(repo.root, "house-style")
    write_skill(repo.root, "infra-only", roles=("infra",))
    write_skill(repo.root, "runtime-codex", executors=("codex",))
    write_skill(repo.root, "runtime-claude", executors=("claude",))
    write_skill(repo.root, "forced", roles=("deploy",))
    repo.lane(
        "main",
        LANE
        + "skills:\n  base: [house-style, infra-only]\n"
        + "  by_executor: {codex: [runtime-codex], claude: [runtime-claude]}\n",
        {
            1: "agents:\n  - {id: A, prompt: p, skills: [forced]}\n  - {id: B, prompt: p, role: infra}\n"
        },
    )
    lane = load_lane(repo.root, "main")
    assert lane.skills is not None and sorted(lane.skills.bundles) == [
        "forced",
        "house-style",
        "infra-only",
        "runtime-claude",
        "runtime-codex",
    ]
    a, b = lane.wave(1).agents
    assert a.skills == ("forced",)
    ids = [s.id for s in lane.skills.resolve(a.role, "codex", a.skills)]
    assert ids == ["house-style", "runtime-codex", "forced"]  # infra-only is not active
    ids = [s.id for s in lane.skills.resolve(b.role, "claude", b.skills)]
    assert ids == ["house-style", "infra-only", "runtime-claude"]  # a fallback's own
    assert a.skill_digest and b.skill_digest and a.skill_digest != b.skill_digest
    bundle = lane.skills.bundles["house-style"]
    assert bundle.files == ("SKILL.md", "skill.yaml") and bundle.title == "Skill house-style"


def test_a_lane_without_skills_keeps_its_fingerprint(repo: Repo) -> None:
    """The digest of an agent of a lane that never names skills, pinned (as the code before
    skills made it): skills add nothing, and an unused skills folder is not even read."""
    repo.lane("main", LANE, {1: "agents:\n  - {id: A, prompt: p, owns: [a.txt]}\n"})
    write_skill(repo.root, "unrelated")  # a skills folder the lane does not use: not read
    (repo.root / "skills" / "unrelated" / "skill.yaml").write_text("{broken")
    agent = load_lane(repo.root, "main").wave(1).agents[0]
    assert agent.skills == () and agent.skill_digest == ""
    assert fingerprint(agent, "codex") == (
        "9ca6b3e9fb87f3de40c2afe011b6b96f09150637963fbf70fc79a9fa1a33880e"
    )


def test_a_changed_skill_changes_the_fingerprint(repo: Repo) -> None:
    write_skill(repo.root, "s1")
    repo.lane("main", LANE + "skills: {base: [s1]}\n", {1: WAVE})
    before = fingerprint(load_lane(repo.root, "main").wave(1).agents[0], "codex")
    (repo.root / "skills" / "s1" / "SKILL.md").write_text("# s1\n\nsomething else\n")
    after = fingerprint(load_lane(repo.root, "main").wave(1).agents[0], "codex")
    assert before != after


def test_an_agent_naming_skills_reads_the_default_folder(repo: Repo) -> None:
    write_skill(repo.root, "s1")
    repo.lane("main", LANE, {1: "agents:\n  - {id: A, prompt: p, skills: [s1]}\n"})
    lane = load_lane(repo.root, "main")
    assert lane.skills is not None and list(lane.skills.bundles) == ["s1"]
    assert lane.wave(1).agents[0].skills == ("s1",)


def test_a_moved_folder_and_a_reference_json_manifest(repo: Repo) -> None:
    write_skill(
        repo.root, "ref", folder="docs/agent-skills", json_manifest=True, executors=("claude",)
    )
    repo.lane(
        "main",
        LANE + "skills: {dir: docs/agent-skills, by_role: {implementation: [ref]}}\n",
        {1: WAVE},
    )
    lane = load_lane(repo.root, "main")
    assert lane.skills is not None and lane.skills.dir == "docs/agent-skills"
    assert lane.skills.bundles["ref"].executors == ("claude",)
    assert lane.skills.bundles["ref"].manifest == "skill.json"


def test_unknown_duplicate_and_bad_ids_are_located(repo: Repo) -> None:
    write_skill(repo.root, "s1")
    repo.lane(
        "main",
        LANE + "skills:\n  base: [s1, s1]\n  by_role: {implementation: [nope], wizard: [s1]}\n",
        {1: "agents:\n  - {id: A, prompt: p, skills: [s1, Bad_Id]}\n"},
    )
    found = problems(repo)
    assert (
        "lanes/main/lane.yaml:5:14: skills.base[1]: skill 's1' is named twice (expected each skill once)"
        in found
    )
    assert any(
        p.startswith(
            "lanes/main/lane.yaml:6:30: skills.by_role.implementation[0]: unknown skill 'nope'"
        )
        for p in found
    )
    assert any(
        p.startswith("lanes/main/lane.yaml:6:37: skills.by_role.wizard: unknown key") for p in found
    )
    assert any(
        p.startswith(
            "lanes/main/waves/wave-1.yaml:2:37: agents[0].skills[1]: invalid skill id 'Bad_Id'"
        )
        for p in found
    )


def test_bad_manifests_and_bundles(repo: Repo) -> None:
    write_skill(repo.root, "good")
    write_skill(repo.root, "bad-key", manifest="id: bad-key\ndescription: d\ncolour: red\n")
    write_skill(
        repo.root,
        "bad-role",
        manifest="id: bad-role\ndescription: d\nactivation:\n  roles: [wizard]\n",
    )
    write_skill(repo.root, "wrong-id", manifest="id: other\ndescription: d\n")
    write_skill(repo.root, "no-md").joinpath("SKILL.md").unlink()
    write_skill(repo.root, "bad-adapter", adapters={"gemini": "x"})
    leak = write_skill(repo.root, "leaky")
    outside = repo.root / "secret.txt"
    outside.write_text("secret")
    (leak / "references").mkdir()
    os.symlink(outside, leak / "references" / "secret.txt")
    repo.lane("main", LANE + "skills: {base: [good]}\n", {1: WAVE})
    found = problems(repo)
    assert any(p.startswith("skills/bad-key/skill.yaml:3:1: colour: unknown key") for p in found)
    assert any(
        p.startswith("skills/bad-role/skill.yaml:4:11: activation.roles[0]: unknown role 'wizard'")
        for p in found
    )
    assert any(
        p.startswith("skills/wrong-id/skill.yaml:1:5: id: id 'other' is not the folder's name")
        for p in found
    )
    assert "skills/no-md:1:1: no SKILL.md (the skill's instructions)" in found
    assert any(
        p.startswith("skills/bad-adapter/adapters/gemini.md:1:1: an adapter is") for p in found
    )
    assert (
        "skills/leaky/references/secret.txt:1:1: a symbolic link out of the skills folder" in found
    )


def test_a_skills_folder_that_leaves_the_repository(repo: Repo, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", repo.root / "skills")
    repo.lane("main", LANE + "skills: {}\n", {1: WAVE})
    assert any(
        "skills.dir: the skills folder 'skills' leads out of the repository" in p
        for p in problems(repo)
    )
