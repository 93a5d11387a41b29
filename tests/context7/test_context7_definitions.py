"""context7 in lane.yaml, a wave and an agent, and the bundle index they name: the bundle an
agent gets (agent → wave → lane → index default), its query (its own, its wave's, or its
prompt's first lines), and every bad value located as file:line:col."""

from __future__ import annotations

import json

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import Context7Selection
from wave_orchestrator.definitions.sections.context7 import derive_query
from wave_orchestrator.errors import LaneInvalid
from wave_orchestrator.runtime.wave.reuse import fingerprint

LANE = "closure: {required_roles: []}\ndefaults:\n  executor: local\n"
INDEX = {
    "version": 1,
    "defaultBundle": "none",
    "laneDefaults": {"main": "web"},
    "bundles": {
        "none": {"description": "no docs", "libraries": []},
        "web": {"libraries": [{"libraryId": "/vercel/next.js", "queryHint": "app router"}]},
        "db": {"libraries": [{"libraryName": "sqlalchemy"}]},
    },
}


def agent(agent_id: str, extra: str = "", prompt: str = "p") -> str:
    return (
        f"  - {{id: {agent_id}, prompt: {json.dumps(prompt)}{extra}, "
        'executor: {local: {command: "true"}}}\n'
    )


def write_index(repo: Repo, data: object, rel: str = "docs/context7/bundles.json") -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))


def problems(repo: Repo) -> list[str]:
    with pytest.raises(LaneInvalid) as caught:
        load_lane(repo.root, "main")
    return [str(p) for p in caught.value.problems]


def test_a_lane_without_context7_or_index_gets_no_docs_and_keeps_its_digest(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n" + agent("A")})
    lane = load_lane(repo.root, "main")
    a = lane.wave(1).agents[0]
    assert lane.context7 is None and a.context7 is None
    assert fingerprint(a, "local") == fingerprint(a._replace(context7=None), "local")
    assert "context7" not in json.dumps(a._asdict(), default=str).replace('"context7": null', "")


def test_selection_goes_agent_then_wave_then_lane_then_index(repo: Repo) -> None:
    write_index(repo, INDEX)
    repo.lane(
        "main",
        LANE,
        {
            1: "agents:\n" + agent("A", prompt="Build the login page\nowns: web/\nUse forms"),
            2: "context7: {bundle: db, query: orm sessions}\nagents:\n"
            + agent("B")
            + agent("C", ", context7: {bundle: web, query: routing}")
            + agent("D", ", context7: none"),
        },
    )
    lane = load_lane(repo.root, "main")
    assert lane.context7 is not None and lane.context7.index_file == "docs/context7/bundles.json"
    a = lane.wave(1).agents[0].context7  # the index's laneDefaults for lane main
    assert a == Context7Selection(
        "web", "Build the login page Use forms", (("/vercel/next.js", "", "app router"),)
    )
    b, c, d = (x.context7 for x in lane.wave(2).agents)
    assert b == Context7Selection("db", "orm sessions", (("", "sqlalchemy", ""),))
    assert c is not None and (c.bundle, c.query) == ("web", "routing")
    assert d is None  # bundle none: no docs, digested as an agent of a lane without


def test_lane_yaml_bundle_beats_the_index_lane_default(repo: Repo) -> None:
    write_index(repo, INDEX)
    repo.lane(
        "main",
        LANE + "context7: {bundle: db, url: 'http://127.0.0.1:9/'}\n",
        {1: "agents:\n" + agent("A")},
    )
    lane = load_lane(repo.root, "main")
    assert lane.context7 is not None and lane.context7.url == "http://127.0.0.1:9"
    assert lane.wave(1).agents[0].context7.bundle == "db"  # type: ignore[union-attr]


def test_the_selection_is_part_of_the_fingerprint(repo: Repo) -> None:
    write_index(repo, INDEX)
    repo.lane("main", LANE, {1: "agents:\n" + agent("A")})
    a = load_lane(repo.root, "main").wave(1).agents[0]
    assert a.context7 is not None
    other = a._replace(context7=a.context7._replace(query="something else"))
    assert fingerprint(a, "local") != fingerprint(a._replace(context7=None), "local")
    assert fingerprint(a, "local") != fingerprint(other, "local")


def test_derived_query_skips_ownership_lines_and_is_cut() -> None:
    prompt = "# Task\n\nOwns: src/a\n- owned paths: x\n" + "\n".join(f"line {i}" for i in range(9))
    assert derive_query(prompt) == "Task line 0 line 1 line 2 line 3 line 4"
    assert len(derive_query("word " * 200)) <= 260
    assert derive_query("evil\x1b[31m\u202eline") == "evil[31mline"


def test_bad_index_and_keys_are_located(repo: Repo) -> None:
    bad = {
        "version": "one",
        "defaultBundle": "missing",
        "bundles": {
            "web": {"libraries": [{"libraryId": "no-slash"}, {"queryHint": "only a hint"}]},
            "Bad Id": {},
            "x": {"libraries": [{"libraryName": "ok", "colour": 1}]},
        },
    }
    write_index(repo, bad)
    repo.lane("main", LANE, {1: "agents:\n" + agent("A")})
    got = "\n".join(problems(repo))
    assert "docs/context7/bundles.json:2:" in got and "version: wrong type" in got
    assert "does not define bundle 'none'" in got
    assert "defaultBundle: unknown bundle 'missing'" in got
    assert "bundles.web.libraries[0].libraryId: invalid library id 'no-slash'" in got
    assert "a library needs libraryId or libraryName" in got
    assert "invalid bundle id 'Bad Id'" in got
    assert "bundles.x.libraries[0].colour: unknown key" in got


def test_unknown_bundles_and_bad_keys_in_lane_and_wave_files(repo: Repo) -> None:
    write_index(repo, INDEX)
    repo.lane(
        "main",
        LANE + "context7: {bundle: nope, url: 'ftp://x', extra: 1}\n",
        {1: "context7: {bundle: gone}\nagents:\n" + agent("A", ", context7: {query: 5}")},
    )
    got = problems(repo)
    assert any(
        p.startswith("lanes/main/lane.yaml:4:") and "context7.bundle: unknown bundle 'nope'" in p
        for p in got
    ), got
    assert any("context7.url: invalid URL 'ftp://x'" in p for p in got), got
    assert any("context7.extra: unknown key" in p for p in got), got
    assert any(
        p.startswith("lanes/main/waves/wave-1.yaml:1:") and "unknown bundle 'gone'" in p
        for p in got
    ), got
    assert any("agents[0].context7.query: wrong type" in p for p in got), got


def test_a_wave_naming_a_bundle_needs_an_index(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n" + agent("A", ", context7: web")})
    got = problems(repo)
    assert any("agents[0].context7: the lane has no Context7 bundle index" in p for p in got), got


def test_a_lane_naming_context7_needs_its_index(repo: Repo) -> None:
    repo.lane("main", LANE + "context7: {index: docs/c7.json}\n", {1: "agents:\n" + agent("A")})
    got = problems(repo)
    assert any("context7.index: no bundle index at docs/c7.json" in p for p in got), got


def test_an_index_that_is_not_json_is_located(repo: Repo) -> None:
    write_index(repo, '{"bundles": {"none": {}}, "version": [1,\n')
    repo.lane("main", LANE, {1: "agents:\n" + agent("A")})
    got = problems(repo)
    assert any(p.startswith("docs/context7/bundles.json:") for p in got), got
