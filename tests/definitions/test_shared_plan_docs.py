"""shared_plan_docs (lane): the documents a shared-plan doc impact is about, as loaded and as
refused (file:line:col)."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

LANE = "defaults: {executor: local}\nclosure: {required_roles: []}\n"
AGENTS = (
    "agents:\n  - {id: A, prompt: p, exit_contract: {doc_impact: shared-plan}, "
    'executor: {local: {command: "true"}}}\n'
)


def test_shared_plan_docs_load_normalised(repo: Repo) -> None:
    docs = "shared_plan_docs: [docs/plans/current-state.md, ./docs/plans/master-plan.md]\n"
    repo.lane("main", LANE + docs, {1: AGENTS})
    lane = load_lane(repo.root, "main")
    assert lane.shared_plan_docs == ("docs/plans/current-state.md", "docs/plans/master-plan.md")


def test_a_lane_without_them_has_none(repo: Repo) -> None:
    repo.lane("main", LANE, {1: AGENTS})
    assert load_lane(repo.root, "main").shared_plan_docs == ()


@pytest.mark.parametrize(
    ("docs", "expect"),
    [
        (
            "shared_plan_docs: [docs/a.md, ../b.md]\n",
            "lane.yaml:3:31: shared_plan_docs[1]: path '../b.md' is absolute or leaves the "
            "repository (expected a file path relative to the repository)",
        ),
        ("shared_plan_docs: [/etc/passwd]\n", "shared_plan_docs[0]: path '/etc/passwd' is"),
        ("shared_plan_docs: [docs/]\n", "shared_plan_docs[0]: 'docs/' names a folder"),
        ("shared_plan_docs: [a.md, ./a.md]\n", "shared_plan_docs[1]: 'a.md' is listed twice"),
        ("shared_plan_docs: docs/a.md\n", "shared_plan_docs: wrong type: string"),
        ("shared_plan_docs: [3]\n", "shared_plan_docs[0]: wrong type: number"),
    ],
)
def test_bad_docs_name_file_line_and_field(repo: Repo, docs: str, expect: str) -> None:
    repo.lane("main", LANE + docs, {1: AGENTS})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)
