"""`wave doctor` on a lane with skills: what its agents get, and a listed skill none gets."""

from __future__ import annotations

import json

from helpers import Repo
from skills.skill_fixtures import write_skill

LANE = """\
closure: {required_roles: []}
defaults: {executor: local}
skills: {base: [house-style], by_role: {implementation: [deploy-only]}}
"""
WAVE = 'agents:\n  - {id: A, prompt: p, executor: {id: local, local: {command: "true"}}}\n'


def test_doctor_counts_skills_and_warns_of_one_no_agent_gets(repo: Repo) -> None:
    write_skill(repo.root, "house-style")
    write_skill(repo.root, "deploy-only", roles=("deploy",))
    repo.lane("main", LANE, {1: WAVE})
    done = repo.wave("doctor", "--json")
    checks = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "skills main"]
    assert [(c["ok"], c["blocking"]) for c in checks] == [(True, True), (False, False)]
    assert checks[0]["detail"] == "2 bundle(s) in skills/, 1 given to agents"
    assert checks[1]["detail"].endswith("(their activation matches none): deploy-only")


def test_doctor_fails_a_lane_whose_skill_manifest_is_broken(repo: Repo) -> None:
    write_skill(repo.root, "house-style", manifest="id: house-style\n")  # no description
    repo.lane("main", LANE.replace(", by_role: {implementation: [deploy-only]}", ""), {1: WAVE})
    done = repo.wave("doctor", "--json")
    lane = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "lane main")
    assert (
        not lane["ok"]
        and "skills/house-style/skill.yaml:1:1: missing description" in lane["detail"]
    )
    assert done.returncode == 1
