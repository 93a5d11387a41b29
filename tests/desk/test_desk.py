"""The file desk: claims, queues, handovers, waits, and claims from many processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from wave_orchestrator.desk.claims import Desk, DeskRefused, DeskTimeout
from wave_orchestrator.errors import UsageError


@pytest.fixture
def desk(tmp_path: Path) -> Desk:
    repo = tmp_path / "repo"
    repo.mkdir()
    return Desk(tmp_path / "desk.sqlite3", repo, wave=1)


def test_claim_free_file_is_granted_then_held(desk: Desk) -> None:
    assert desk.claim("A1", "src/a.py", "add a route").outcome == "granted"
    again = desk.claim("A1", "./src/a.py", "add two routes")
    assert (again.outcome, again.holder) == ("held", "A1")
    assert desk.mine("A1").held == [("src/a.py", "add two routes")]  # the intent is updated


def test_paths_are_normalised_relative_to_the_repository(desk: Desk) -> None:
    desk.claim("A1", "a.py")
    for spelling in ("./a.py", str(desk.repo / "a.py"), "sub/../a.py"):
        assert desk.claim("B1", spelling).path == "a.py"
    assert len(desk.status()["queues"]["a.py"]) == 1  # type: ignore[index]
    for outside in ("../a.py", "/etc/passwd", ".", ""):
        with pytest.raises(UsageError):
            desk.claim("A1", outside)


def test_queued_claim_names_holder_intent_and_place(desk: Desk) -> None:
    desk.claim("A1", "a.py", "refactor")
    b = desk.claim("B1", "a.py", "fix typo")
    c = desk.claim("C1", "a.py")
    assert (b.outcome, b.holder, b.holder_intent, b.position) == ("queued", "A1", "refactor", 1)
    assert c.position == 2
    assert desk.claim("B1", "a.py", "fix two typos").position == 1  # re-claim keeps the place
    assert desk.mine("C1").queued == [("a.py", 2, "A1")]


def test_only_the_holder_hands_over_and_the_queue_is_walked_in_order(desk: Desk) -> None:
    desk.claim("A1", "a.py")
    desk.claim("B1", "a.py")
    desk.claim("C1", "a.py")
    with pytest.raises(DeskRefused, match="only the holder"):
        desk.handover("B1", "a.py", "not mine")
    assert desk.handover("A1", "a.py", "routes done").to_agent == "B1"
    assert desk.take_handover("B1").note == "routes done"  # type: ignore[union-attr]
    assert desk.handover("B1", "a.py", "typos done").to_agent == "C1"
    last = desk.handover("C1", "a.py", "all yours")
    assert last.to_agent is None  # nobody waits: the file is released
    assert desk.claim("D1", "a.py").outcome == "granted"
    log = desk.status()["handovers"]
    assert [(h["from"], h["to"]) for h in log] == [("A1", "B1"), ("B1", "C1"), ("C1", None)]  # type: ignore[union-attr, index]


def test_wait_returns_the_handover_with_its_note(desk: Desk) -> None:
    desk.claim("A1", "a.py")
    desk.claim("B1", "a.py")
    desk.handover("A1", "a.py", "schema changed, rerun migrations")
    got = desk.wait("B1", timeout=1)
    assert (got.path, got.from_agent, got.note) == (
        "a.py",
        "A1",
        "schema changed, rerun migrations",
    )
    with pytest.raises(DeskRefused, match="nothing to wait for"):
        desk.wait("B1", timeout=0.1)  # holds a.py now and waits for nothing


def test_wait_times_out(desk: Desk) -> None:
    desk.claim("A1", "a.py")
    desk.claim("B1", "a.py")
    with pytest.raises(DeskTimeout):
        desk.wait("B1", timeout=0.3, interval=0.05)


def test_wait_is_refused_while_holding_a_file_someone_waits_for(desk: Desk) -> None:
    # A1 holds a.py and wants b.py; B1 holds b.py and wants a.py: neither may wait.
    desk.claim("A1", "a.py")
    desk.claim("B1", "b.py")
    desk.claim("A1", "b.py")
    desk.claim("B1", "a.py")
    for agent, held, waiter in (("A1", "a.py", "B1"), ("B1", "b.py", "A1")):
        with pytest.raises(DeskRefused, match=f"hand over first.*{held} \\({waiter} waiting\\)"):
            desk.wait(agent, timeout=5)
    desk.handover("A1", "a.py", "go ahead")
    with pytest.raises(DeskTimeout):  # A1 may wait now: it is not refused, nothing came yet
        desk.wait("A1", timeout=0.1, interval=0.05)
    desk.handover("B1", "b.py", "your turn")
    assert desk.wait("A1", timeout=1).path == "b.py"


def test_finishing_agent_hands_everything_over_and_leaves_queues(desk: Desk) -> None:
    desk.claim("A1", "a.py")
    desk.claim("A1", "b.py")
    desk.claim("B1", "a.py")
    desk.claim("C1", "c.py")
    desk.claim("A1", "c.py")  # A1 also queues for c.py
    done = desk.release_all("A1", "A1 finished (success); its last output: all tests pass")
    assert {(h.path, h.to_agent) for h in done} == {("a.py", "B1"), ("b.py", None)}
    assert desk.take_handover("B1").note.endswith("all tests pass")  # type: ignore[union-attr]
    assert desk.mine("A1").held == [] and desk.mine("A1").queued == []
    assert "c.py" not in desk.status()["queues"]  # type: ignore[operator]


def test_waves_have_separate_desks_and_reset_clears_one(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    one, two = Desk(tmp_path / "d.sqlite3", repo, 1), Desk(tmp_path / "d.sqlite3", repo, 2)
    one.claim("A1", "a.py")
    assert two.claim("A1", "a.py").outcome == "granted"
    one.reset()
    assert one.status()["holders"] == [] and two.status()["holders"] != []


def _claim_in_process(args: tuple[str, str, str]) -> tuple[str, str, int]:
    db, repo, agent = args
    result = Desk(Path(db), Path(repo), 1).claim(agent, "shared.py", f"{agent} edits")
    return agent, result.outcome, result.position


def test_twenty_processes_claim_at_once(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    db = tmp_path / "desk.sqlite3"
    Desk(db, repo, 1)  # create the schema before the race
    agents = [f"A{i:02d}" for i in range(20)]
    with multiprocessing.get_context("spawn").Pool(20) as pool:
        results = pool.map(_claim_in_process, [(str(db), str(repo), a) for a in agents])
    granted = [a for a, outcome, _ in results if outcome == "granted"]
    queued = sorted((pos, a) for a, outcome, pos in results if outcome == "queued")
    assert len(granted) == 1 and len(queued) == 19
    assert [pos for pos, _ in queued] == list(range(1, 20))
    desk = Desk(db, repo, 1)
    holder = granted[0]
    for _, expected in queued:  # handing over walks the queue in order
        done = desk.handover(holder, "shared.py", f"from {holder}")
        assert done.to_agent == expected
        holder = expected
    assert desk.handover(holder, "shared.py", "last").to_agent is None


def test_a_handover_is_not_delivered_once_the_file_moved_on(desk: Desk) -> None:
    desk.claim("A", "x")
    desk.claim("B", "x")
    desk.handover("A", "x", "x is yours")
    assert desk.claim("B", "x").outcome == "held"  # B learned it from claim, not from wait
    desk.handover("B", "x", "done with x")
    desk.claim("C", "y")
    desk.claim("B", "y")
    with pytest.raises(DeskTimeout):  # the old handover of x is not news any more
        desk.wait("B", timeout=0.2, interval=0.05)


def test_parent_steps_are_collapsed(desk: Desk) -> None:
    assert desk.claim("A", "sub/../a.py").path == "a.py"
    with pytest.raises(UsageError):
        desk.claim("A", "sub/..")
