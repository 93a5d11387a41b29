"""eval_targets (wave) and the benchmarks catalog (lane), as loaded and as refused."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import EvalTarget
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"
AGENTS = (
    "agents:\n"
    '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'
    '  - {id: E, role: cont-eval, prompt: p, owns: [eval.md], executor: {local: {command: "true"}}}\n'
)


def test_targets_and_catalog_load(repo: Repo) -> None:
    targets = "eval_targets:\n  - p99\n  - {id: rps, benchmarks: [throughput]}\n"
    repo.lane("main", LANE + "benchmarks: [throughput, p50]\n", {1: targets + AGENTS})
    lane = load_lane(repo.root, "main")
    assert lane.benchmarks == ("throughput", "p50")
    assert lane.wave(1).eval_targets == (EvalTarget("p99"), EvalTarget("rps", ("throughput",)))


@pytest.mark.parametrize(
    ("lane_extra", "wave_extra", "agents", "expect"),
    [
        (
            "benchmarks: [a]\n",
            "eval_targets: [{id: t, benchmarks: [b]}]\n",
            AGENTS,
            "wave-1.yaml:1:37: eval_targets[0].benchmarks[0]: benchmark 'b' is not in the lane's "
            "benchmarks catalog (expected one of: a)",
        ),
        ("", "eval_targets: [t, t]\n", AGENTS, "eval_targets[1]: target 't' is listed twice"),
        (
            "",
            "eval_targets: [t]\n",
            "agents:\n  - {id: A, prompt: p}\n",
            "eval_targets: no agent of the wave has role cont-eval to judge these targets",
        ),
        ("", "eval_targets: ['has space']\n", AGENTS, "eval_targets[0]: invalid id 'has space'"),
        ("", "eval_targets: []\n", AGENTS, "eval_targets: must list at least one target"),
        ("", "eval_targets: [{id: t, bench: [x]}]\n", AGENTS, "eval_targets[0].bench: unknown key"),
        (
            "benchmarks: [a, a]\n",
            "",
            AGENTS,
            "lane.yaml:3:17: benchmarks[1]: benchmark 'a' is listed twice",
        ),
    ],
)
def test_bad_targets_name_file_line_and_field(
    repo: Repo, lane_extra: str, wave_extra: str, agents: str, expect: str
) -> None:
    repo.lane("main", LANE + lane_extra, {1: wave_extra + agents})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)


@pytest.mark.parametrize(
    ("proofs", "expect"),
    [
        ("[/etc/passwd]", "proof_artifacts[0]: path '/etc/passwd' is absolute"),
        ("[{path: a.log, gate: deploy}]", "proof_artifacts[0].gate: unknown gate 'deploy'"),
        ("[{path: a.log, when: now}]", "proof_artifacts[0].when: unknown key"),
        ("a.log", "proof_artifacts: wrong type: string"),
    ],
)
def test_bad_proof_artifacts_name_file_line_and_field(repo: Repo, proofs: str, expect: str) -> None:
    agent = f'  - {{id: A, prompt: p, proof_artifacts: {proofs}, executor: {{local: {{command: "true"}}}}}}\n'
    repo.lane("main", LANE, {1: "agents:\n" + agent})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)


def test_a_proof_artifact_s_gate_defaults_to_the_agent_s_own(repo: Repo) -> None:
    agents = (
        "agents:\n"
        '  - {id: A, prompt: p, proof_artifacts: [a.log], executor: {local: {command: "true"}}}\n'
        "  - {id: S, role: security, prompt: p, owns: [s.md], proof_artifacts: [scan.json,"
        ' {path: x.json, gate: cont-qa}], executor: {local: {command: "true"}}}\n'
    )
    repo.lane("main", LANE, {1: agents})
    wave = load_lane(repo.root, "main").wave(1)
    assert [(p.path, p.gate) for a in wave.agents for p in a.proof_artifacts] == [
        ("a.log", "implementation"),
        ("scan.json", "security"),
        ("x.json", "cont-qa"),
    ]
