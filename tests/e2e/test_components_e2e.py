"""Component promotions, the component matrix and gaps through real launches (issue 24 §4)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

CLOSED = "echo '[wave-doc-closure] state=closed'"


def wave(backend: str, docs: str = CLOSED) -> str:
    return (
        "components: {auth-api: integrated, login-ui: contract}\n"
        "agents:\n"
        + local_agent("backend", backend, components=["auth-api"])
        + local_agent(
            "ui",
            "echo '[wave-component] component=login-ui level=contract state=met'",
            components=["login-ui"],
        )
        + local_agent("docs", docs, role="documentation", owns=["docs.md"])
    )


MET = "echo '[wave-component] component=auth-api level=integrated state=met'"


def test_owners_promote_their_components_into_the_matrix_and_gaps_are_collected(
    tmux_repo: Repo,
) -> None:
    backend = f"{MET}; echo '[wave-gap] kind=docs detail=no API reference yet'"
    tmux_repo.lane("main", local_lane(), {1: wave(backend)})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    matrix = json.loads((tmux_repo.state("main") / "components.json").read_text())["components"]
    assert {k: v["level"] for k, v in matrix.items()} == {
        "auth-api": "integrated",
        "login-ui": "contract",
    }
    assert matrix["auth-api"]["agent"] == "backend"
    shown = tmux_repo.wave("status", "--lane", "main").stdout
    assert "  gap docs (backend): no API reference yet" in shown.splitlines(), shown
    summary = json.loads((tmux_repo.agent_dir("main", 1, "backend") / "summary.json").read_text())
    assert summary["gaps"] == [
        {"agent": "backend", "kind": "docs", "detail": "no API reference yet"}
    ]


@pytest.mark.parametrize(
    ("backend", "code"),
    [
        ("echo nothing said", "missing-wave-component"),
        (
            "echo '[wave-component] component=auth-api level=contract state=met'",
            "component-level-mismatch",
        ),
        (
            "echo '[wave-component] component=auth-api level=integrated state=gap detail=no tests'",
            "component-gap",
        ),
    ],
)
def test_the_implementation_gate_holds_owners_to_their_promotion(
    tmux_repo: Repo, backend: str, code: str
) -> None:
    tmux_repo.lane("main", local_lane(), {1: wave(backend)})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    assert f"gate failed (stage=implementation status={code}" in done.stderr, done.stderr
    assert not (tmux_repo.state("main") / "components.json").exists()


def test_a_matrix_that_does_not_show_the_promotion_fails_documentation(tmux_repo: Repo) -> None:
    tamper = f'echo "{{}}" > "$WAVE_STATE_DIR/components.json"; {CLOSED}'
    tmux_repo.lane("main", local_lane(), {1: wave(MET, docs=tamper)})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    assert "gate failed (stage=documentation status=component-current-level-stale" in done.stderr
    assert "auth-api is absent in the component matrix" in done.stderr
