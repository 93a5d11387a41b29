"""Board, shared summary and inboxes: what each shows, their limits, and control characters."""

from __future__ import annotations

from pathlib import Path

from wave_orchestrator.coordination.log import CoordLog
from wave_orchestrator.coordination.views import (
    INBOX_LIMIT,
    SUMMARY_LIMIT,
    InboxOwner,
    board,
    inbox,
    inbox_items,
    shared_summary,
)


def _log(tmp_path: Path) -> CoordLog:
    return CoordLog(tmp_path / "wave-1.jsonl", 1)


def test_board_lists_open_blockers_requests_decisions_and_guidance(tmp_path: Path) -> None:
    log = _log(tmp_path)
    blocker = log.post(kind="blocker", summary="schema undecided", agent="db", priority="urgent")
    req = log.post(kind="request", summary="expose GET /items", agent="api", targets=["ui"])
    log.post(kind="decision", summary="use SQLite", agent="db")
    guide = log.post(
        kind="guidance", summary="keep v1", agent="human", source="human", targets=["api"]
    )
    text = board("main", 1, log.records(), "now")
    blockers = text.split("## Open blockers")[1].split("##")[0]
    assert blocker in blockers and "(urgent)" in blockers
    assert req in text.split("## Open requests and questions")[1].split("##")[0]
    assert "use SQLite" in text.split("## Decisions")[1].split("##")[0]
    assert f"[{guide}] pending -> api" in text
    log.post(kind="ack", summary="ok", agent="api", depends_on=[guide])
    assert f"[{guide}] addressed -> api" in board("main", 1, log.records(), "now")
    log.update(blocker, status="resolved")
    after = board("main", 1, log.records(), "now").split("## Open blockers")[1].split("##")[0]
    assert blocker not in after


def test_inbox_has_targeted_own_open_and_owned_path_items_only(tmp_path: Path) -> None:
    log = _log(tmp_path)
    to_me = log.post(kind="request", summary="need a route", agent="api", targets=["ui"])
    mine = log.post(kind="claim", summary="I take the css", agent="ui")
    done_mine = log.post(kind="evidence", summary="tests pass", agent="ui", status="resolved")
    touching = log.post(
        kind="handoff", summary="moved styles", agent="db", artifacts=["web/styles/main.css"]
    )
    other = log.post(kind="request", summary="not for ui", agent="api", targets=["db"])
    ids = {r.id for r in inbox_items(InboxOwner("ui", ("web/",)), log.records())}
    assert ids == {to_me, mine, touching}
    assert done_mine not in ids and other not in ids
    assert f"[{to_me}]" in inbox(InboxOwner("ui", ("web/",)), log.records())
    assert "empty" in inbox(InboxOwner("nobody"), log.records())


def test_summary_and_inbox_stay_within_their_limits(tmp_path: Path) -> None:
    log = _log(tmp_path)
    for n in range(200):
        log.post(
            kind="request",
            summary=f"item {n} " + "y" * 250,
            agent="api",
            targets=["ui"],
            detail="d" * 3000,
        )
    summary = shared_summary(log.records())
    box = inbox(InboxOwner("ui"), log.records())
    assert len(summary) <= SUMMARY_LIMIT and "more line(s)" in summary
    assert len(box) <= INBOX_LIMIT and "more line(s)" in box
    assert shared_summary({}) == ""


def test_control_characters_from_agents_never_reach_the_board(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.post(
        kind="evidence", summary="done \x1b]52;c;aGk=\x07\x1bc ok\nnext", agent="a", targets=["b"]
    )
    for text in (
        board("l", 1, log.records(), "now"),
        inbox(InboxOwner("b"), log.records()),
        shared_summary(log.records()),
    ):
        assert "\x1b" not in text and "\x07" not in text


def test_the_integration_barrier_names_open_requests_clashing_and_unresolved_claims(
    tmp_path: Path,
) -> None:
    from wave_orchestrator.coordination.views import integration_barrier, newest_first

    log = _log(tmp_path)
    urgent = log.post(kind="request", summary="need the key format", agent="api", priority="urgent")
    log.post(kind="request", summary="nice to have", agent="ui")  # normal priority: no barrier
    one = log.post(kind="claim", summary="owns schema", agent="db", artifacts=["schema.sql"])
    two = log.post(kind="claim", summary="edits schema", agent="api", artifacts=["schema.sql"])
    alone = log.post(kind="claim", summary="docs", agent="ui", artifacts=["README.md"])
    done = log.post(kind="claim", summary="done", agent="ui", artifacts=["x.md"])
    log.update(done, status="resolved")
    found = integration_barrier(newest_first(log.records().values()))
    named = {code: agent for code, _, agent in found}
    assert sorted(named) == [
        "integration-claim-conflict",
        "integration-open-request",
        "integration-unresolved-claim",
    ]
    assert named["integration-open-request"] == "api"
    assert named["integration-unresolved-claim"] == "ui"
    assert named["integration-claim-conflict"] in ("db", "api")  # either holder is named
    said = " ".join(detail for _, detail, _ in found)
    assert urgent in said and one in said and two in said and alone in said and done not in said
    assert "both claim schema.sql" in said
