"""components (wave) and an agent's owned components, as loaded and as refused."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"


def agent(agent_id: str, extra: str = "") -> str:
    return f'  - {{id: {agent_id}, prompt: p, executor: {{local: {{command: "true"}}}}{extra}}}\n'


def test_promotions_resolve_to_each_owner(repo: Repo) -> None:
    body = "components: {auth: integrated, ui: contract}\nagents:\n"
    body += agent("A", ", components: [auth]") + agent("B", ", components: [ui]")
    repo.lane("main", LANE, {1: body})
    wave = load_lane(repo.root, "main").wave(1)
    assert wave.components == (("auth", "integrated"), ("ui", "contract"))
    assert [a.components for a in wave.agents] == [(("auth", "integrated"),), (("ui", "contract"),)]


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (
            "components: {auth: x}\nagents:\n" + agent("A"),
            "components.auth: no agent owns component 'auth'",
        ),
        (
            "components: {auth: x}\nagents:\n"
            + agent("A", ", components: [auth]")
            + agent("B", ", components: [auth]"),
            "component 'auth' has several owners: A, B",
        ),
        (
            "agents:\n" + agent("A", ", components: [auth]"),
            "agents[0].components[0]: component 'auth' is not promoted by this wave",
        ),
        (
            "components: {auth: Has Space}\nagents:\n" + agent("A", ", components: [auth]"),
            "components.auth: invalid level 'Has Space'",
        ),
        (
            "components: {auth: x}\nagents:\n"
            + agent("A", ", components: [auth]")
            + agent("Q", ", role: cont-qa, owns: [q.md], components: [auth]"),
            "a cont-qa agent cannot own components",
        ),
        ("components: [auth]\nagents:\n" + agent("A"), "components: wrong type: list"),
    ],
)
def test_bad_promotions_name_file_line_and_field(repo: Repo, body: str, expect: str) -> None:
    repo.lane("main", LANE, {1: body})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)
