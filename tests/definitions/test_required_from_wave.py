"""closure.required_from_wave: a closure role the lane requires only from a given wave on."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

WORK = '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'
QA = '  - {id: Q, prompt: q, role: cont-qa, executor: {local: {command: "true"}}}\n'
INTEGRATION = '  - {id: I, prompt: i, role: integration, executor: {local: {command: "true"}}}\n'
LANE = "defaults: {executor: local}\n"


def problems(repo: Repo) -> list[str]:
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    return [str(p) for p in err.value.problems]


def test_waves_before_the_first_one_need_no_agent_of_that_role(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "closure: {required_from_wave: {integration: 3}}\n",
        {
            1: "agents:\n" + WORK + QA,
            2: "agents:\n" + WORK + QA,
            3: "agents:\n" + WORK + INTEGRATION + QA,
            4: "agents:\n" + WORK + INTEGRATION + QA,
        },
    )
    lane = load_lane(repo.root, "main")
    assert [w.number for w in lane.waves] == [1, 2, 3, 4]


def test_from_that_wave_on_a_wave_without_one_is_refused_where_its_agents_are(
    repo: Repo,
) -> None:
    repo.lane(
        "main",
        LANE + "closure: {required_from_wave: {integration: 3}}\n",
        {
            2: "agents:\n" + WORK + QA,  # before wave 3: fine
            3: "agents:\n" + WORK + QA,
            7: "agents:\n" + WORK + QA,
        },
    )
    found = problems(repo)
    assert len(found) == 2, found
    for number, problem in zip((3, 7), found, strict=True):
        assert problem.startswith(f"lanes/main/waves/wave-{number}.yaml:2:3: agents: "), problem
        assert "no agent with the required closure role 'integration'" in problem
        assert "closure.required_from_wave: integration from wave 3" in problem


def test_the_default_cont_qa_stays_required_in_every_wave(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "closure: {required_from_wave: {integration: 2}}\n",
        {1: "agents:\n" + WORK, 2: "agents:\n" + WORK + INTEGRATION + QA},
    )
    (only,) = problems(repo)
    assert only.startswith("lanes/main/waves/wave-1.yaml:")
    assert "required closure role 'cont-qa'" in only


def test_a_listed_role_with_a_first_wave_is_required_from_there(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "closure:\n  required_roles: [cont-qa, integration]\n"
        "  required_from_wave: {integration: 2, cont-qa: 2}\n",
        {1: "agents:\n" + WORK, 2: "agents:\n" + WORK + INTEGRATION + QA},
    )
    lane = load_lane(repo.root, "main")
    assert lane.required_roles == ("cont-qa", "integration")
    repo.lane(
        "main",
        LANE + "closure:\n  required_roles: [cont-qa, integration]\n"
        "  required_from_wave: {integration: 2, cont-qa: 2}\n",
        {1: "agents:\n" + WORK, 2: "agents:\n" + WORK + QA},
    )
    (only,) = problems(repo)
    assert only.startswith("lanes/main/waves/wave-2.yaml:2:3: agents: ")
    assert "'integration'" in only


@pytest.mark.parametrize(
    ("closure", "expect"),
    [
        (
            "{required_from_wave: {integratoin: 3}}",
            "lane.yaml:2:32: closure.required_from_wave.integratoin: unknown role 'integratoin'"
            "; did you mean 'integration'?",
        ),
        (
            "{required_from_wave: {implementation: 3}}",
            "lane.yaml:2:32: closure.required_from_wave.implementation: unknown role",
        ),
        (
            "{required_from_wave: {integration: 0}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: must be greater than 0",
        ),
        (
            "{required_from_wave: {integration: -2}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: must be greater than 0",
        ),
        (
            "{required_from_wave: {integration: 2.5}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: not an integer: 2.5",
        ),
        (
            "{required_from_wave: {integration: 'three'}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: wrong type: string",
        ),
        (
            "{required_from_wave: {integration: true}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: wrong type: boolean",
        ),
        (
            "{required_from_wave: {integration: 100000}}",
            "lane.yaml:2:45: closure.required_from_wave.integration: ",
        ),
        (
            "{required_from_wave: [integration, 3]}",
            "lane.yaml:2:31: closure.required_from_wave: wrong type: list (expected a mapping",
        ),
        (
            "{required_form_wave: {integration: 3}}",
            "lane.yaml:2:11: closure.required_form_wave: unknown key; did you mean "
            "'required_from_wave'?",
        ),
    ],
)
def test_bad_values_name_file_line_and_column(repo: Repo, closure: str, expect: str) -> None:
    repo.lane("main", LANE + f"closure: {closure}\n", {1: "agents:\n" + WORK + QA})
    found = problems(repo)
    assert any(p.startswith(f"lanes/main/{expect}") for p in found), found


def test_a_lane_without_the_key_loads_as_before(repo: Repo) -> None:
    """A lane without the key requires its roles in every wave, and its agents (what a
    reuse fingerprint digests) are what they were."""
    repo.lane("main", LANE, {1: "agents:\n" + WORK + QA})
    before = load_lane(repo.root, "main")
    repo.lane(
        "main",
        LANE + "closure: {required_from_wave: {integration: 5}}\n",
        {1: "agents:\n" + WORK + QA},
    )
    after = load_lane(repo.root, "main")
    assert before.wave(1).agents == after.wave(1).agents
    assert before.required_roles == after.required_roles == ("cont-qa",)
