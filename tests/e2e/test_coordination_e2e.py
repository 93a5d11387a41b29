"""End to end in real tmux: agents that post, read their inboxes, ask a person, get steered,
and a blocker that fails the implementation gate (issue: agents that talk)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e


def _wave(*agents: str) -> str:
    return "agents:\n" + "".join(agents)


def _status_agent(repo: Repo, agent: str) -> dict[str, Any] | None:
    done = repo.wave("status", "--lane", "main", "--json")
    if done.returncode != 0:
        return None
    for wave in json.loads(done.stdout).get("waves", []):
        for a in wave.get("agents", []):
            if a.get("id") == agent:
                return dict(a)
    return None


def _pending_questions(repo: Repo) -> list[dict[str, Any]]:
    """The lane's pending questions, once there is one (a deadline, not a sleep)."""
    found: list[dict[str, Any]] = wait_for(
        lambda: json.loads(
            repo.wave("feedback", "list", "--lane", "main", "--pending", "--json").stdout or "[]"
        ),
        seconds=40,
        what="a pending question",
    )
    return found


def _wait_waiting_human(repo: Repo, agent: str) -> None:
    wait_for(
        lambda: (_status_agent(repo, agent) or {}).get("state") == "waiting-human",
        seconds=20,
        what=f"{agent} shown as waiting-human",
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_a_request_reaches_the_dependent_agent_which_acks_it(tmux_repo: Repo) -> None:
    post = (
        "wave coord post --kind request --target agent:B --summary 'expose GET /items' "
        "--artifact B.txt > A-id.txt"
    )
    answer = (
        "wave coord inbox > B-inbox.txt && "
        'wave coord post --kind ack --depends-on "$(cat A-id.txt)" --summary "on it, B here"'
    )
    tmux_repo.lane(
        "main",
        local_lane(),
        {1: _wave(local_agent("A", post), local_agent("B", answer, depends_on=["A"]))},
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    rid = (tmux_repo.root / "A-id.txt").read_text().strip()
    prompt = (tmux_repo.agent_dir("main", 1, "B") / "prompt.md").read_text()
    assert "## messages from the wave" in prompt and f"[{rid}] request" in prompt
    assert "expose GET /items" in (tmux_repo.root / "B-inbox.txt").read_text()
    assert "wave coord inbox" in (tmux_repo.agent_dir("main", 1, "A") / "prompt.md").read_text()
    board = (tmux_repo.state("main") / "coordination" / "wave-1.board.md").read_text()
    activity = board.split("## Activity")[1]
    assert f"[{rid}] request" in activity and "on it, B here" in activity
    shown = json.loads(
        tmux_repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--json").stdout
    )
    assert [r["kind"] for r in shown] == ["ack", "request"]  # newest first
    assert shown[0]["depends_on"] == [rid] and shown[0]["agent"] == "B"


def test_an_agent_asks_a_person_and_waits_for_the_answer(tmux_repo: Repo) -> None:
    ask = (
        "ans=$(wave feedback ask --question 'keep the v1 endpoint?' --wait --timeout-seconds 80)"
        ' && echo "answer: $ans" > Q-answer.txt'
    )
    notified = tmux_repo.root / "notified.json"
    lane = local_lane() + f'notify: {{command: [sh, -c, "cat > {notified}"]}}\n'
    tmux_repo.lane("main", lane, {1: _wave(local_agent("Q", ask))})
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        pending = _pending_questions(tmux_repo)
        (request,) = pending
        wait_for(lambda: notified.exists() and notified.stat().st_size > 0, what="notify ran")
        sent = json.loads(notified.read_text())
        assert (sent["id"], sent["question"], sent["status"]) == (
            request["id"],
            "keep the v1 endpoint?",
            "pending",
        )
        assert (request["agent"], request["question"]) == ("Q", "keep the v1 endpoint?")
        _wait_waiting_human(tmux_repo, "Q")
        done = tmux_repo.wave(
            "feedback",
            "respond",
            request["id"],
            "--lane",
            "main",
            "--response",
            "keep it",
            "--operator",
            "ana",
        )
        assert done.returncode == 0, done.stderr
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err
    assert "wave feedback respond " + request["id"] in err  # the hint on the launcher's terminal
    assert (tmux_repo.root / "Q-answer.txt").read_text() == "answer: keep it\n"
    events = [e["event"] for e in tmux_repo.events("main")]
    asked = events.index("human_feedback_requested")
    assert events.index("human_feedback_answered") > asked
    again = tmux_repo.wave(
        "feedback", "respond", request["id"], "--lane", "main", "--response", "no"
    )
    assert again.returncode == 2 and "--force" in again.stderr


def test_a_pending_question_holds_the_retry_and_a_timeout_ends_the_wave_blocked(
    tmux_repo: Repo,
) -> None:
    ask = "wave feedback ask --question 'which database?' > asked.txt; exit 1"
    lane = local_lane(retries=1) + "feedback: {timeout_minutes: 0.03}\n"
    tmux_repo.lane("main", lane, {1: _wave(local_agent("A", ask))})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 4, result.stderr
    assert "question" in result.stderr and "which database?" in result.stderr
    launched = [e for e in tmux_repo.events("main") if e["event"] == "agent_launched"]
    assert [e["attempt"] for e in launched] == [1]  # the retry never started
    wave = tmux_repo.run_state("main")["waves"]["1"]
    assert wave["state"] == "failed" and wave["reason"].startswith("blocked: question")


def test_a_person_answering_late_does_not_run_out_the_agents_budget(tmux_repo: Repo) -> None:
    ask = "wave feedback ask --question 'go on?' --wait --timeout-seconds 60 && touch went-on"
    lane = local_lane().replace("timeout_minutes: 1", "timeout_minutes: 0.05")  # a 3 s budget
    tmux_repo.lane("main", lane, {1: _wave(local_agent("Q", ask))})
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        pending = _pending_questions(tmux_repo)
        _wait_waiting_human(tmux_repo, "Q")
        time.sleep(4)  # longer than the whole budget: the clock must be paused meanwhile
        assert launch.poll() is None
        tmux_repo.wave(
            "feedback", "respond", pending[0]["id"], "--lane", "main", "--response", "yes"
        )
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err
    assert (tmux_repo.root / "went-on").exists()


def test_an_answer_to_a_pending_question_lets_the_retry_run_with_it(tmux_repo: Repo) -> None:
    ask = (
        '[ "$WAVE_ATTEMPT" = 2 ] && { cp "$WAVE_PROMPT_FILE" retry-prompt.md; exit 0; }; '
        "wave feedback ask --question 'which database?'; exit 1"
    )
    lane = local_lane(retries=1) + "feedback: {timeout_minutes: 2}\n"
    tmux_repo.lane("main", lane, {1: _wave(local_agent("A", ask))})
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        pending = _pending_questions(tmux_repo)
        wait_for(
            lambda: tmux_repo.agent_dir("main", 1, "A").joinpath("status.json").exists(),
            what="attempt 1 finished",
        )
        tmux_repo.wave(
            "feedback", "respond", pending[0]["id"], "--lane", "main", "--response", "use SQLite"
        )
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err
    assert "use SQLite" in (tmux_repo.root / "retry-prompt.md").read_text()


def test_a_comment_reaches_a_running_agents_inbox(tmux_repo: Repo) -> None:
    loop = (
        "touch started; for i in $(seq 600); do "
        "wave coord inbox | grep -q 'use lib/page.py' && exit 0; sleep 0.1; done; exit 1"
    )
    tmux_repo.lane("main", local_lane(), {1: _wave(local_agent("A", loop))})
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: (tmux_repo.root / "started").exists(), seconds=40, what="A started")
        done = tmux_repo.wave(
            "comment", "--lane", "main", "--agent", "A", "--text", "use lib/page.py"
        )
        assert done.returncode == 0, done.stderr
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err
    board = (tmux_repo.state("main") / "coordination" / "wave-1.board.md").read_text()
    assert "pending -> A: use lib/page.py" in board.split("## Guidance from people")[1]


def test_fifty_posts_from_ten_running_agents_lose_nothing(tmux_repo: Repo) -> None:
    burst = (
        "for i in 1 2 3 4 5; do "
        'wave coord post --kind evidence --summary "$WAVE_AGENT_ID post $i" & done; wait'
    )
    agents = [local_agent(f"A{n}", burst) for n in range(10)]
    tmux_repo.lane("main", local_lane(), {1: _wave(*agents)})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=240)
    assert result.returncode == 0, result.stderr
    shown = json.loads(
        tmux_repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--json").stdout
    )
    got = sorted(r["summary"] for r in shown)
    assert got == sorted(f"A{n} post {i}" for n in range(10) for i in range(1, 6))


def test_an_open_high_blocker_fails_the_implementation_gate(tmux_repo: Repo) -> None:
    block = "wave coord post --kind blocker --priority high --summary 'schema undecided' > id.txt"
    tmux_repo.lane("main", local_lane(), {1: _wave(local_agent("A", block))})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    rid = (tmux_repo.root / "id.txt").read_text().strip()
    (failed,) = [e for e in tmux_repo.events("main") if e["event"] == "gate_failed"]
    assert failed["status"] == "open-blocker" and rid in failed["detail"]
    assert "wave coord resolve" in failed["action"]
    assert "open-blocker" in result.stderr and rid in result.stderr
    shown = tmux_repo.wave("status", "--lane", "main").stdout
    assert "implementation gate failed: open-blocker" in shown
    assert "what to do: resolve the blocker (wave coord resolve ID)" in shown
    gate = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)["waves"][0][
        "gate_failure"
    ]
    assert gate["status"] == "open-blocker" and gate["action"] == failed["action"]
    assert gate["log"].endswith("agents/A/output.log")


def test_a_new_run_of_a_wave_starts_a_fresh_log_keeping_a_persons_open_guidance(
    tmux_repo: Repo,
) -> None:
    post = "wave coord post --kind evidence --summary 'run one was here'"
    tmux_repo.lane("main", local_lane(), {1: _wave(local_agent("A", post))})
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    guide = tmux_repo.wave("comment", "--lane", "main", "--agent", "A", "--text", "be brief")
    asked = tmux_repo.wave(
        "feedback",
        "ask",
        "--lane",
        "main",
        "--wave",
        "1",
        "--agent",
        "A",
        "--question",
        "left over?",
    )
    relaunch = ("launch", "--lane", "main", "--no-dashboard", "--fresh")  # A runs again
    assert tmux_repo.wave(*relaunch).returncode == 0
    shown = json.loads(
        tmux_repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--json").stdout
    )
    assert sorted(r["kind"] for r in shown) == ["evidence", "guidance"]  # one evidence: run 2's
    assert guide.stdout.strip() in {r["id"] for r in shown}
    archived = list((tmux_repo.state("main") / "coordination").glob("wave-1.*.jsonl"))
    assert len(archived) == 1 and "run one was here" in archived[0].read_text()
    request = json.loads(
        tmux_repo.wave("feedback", "show", asked.stdout.strip(), "--lane", "main", "--json").stdout
    )
    assert request["status"] == "expired"


def test_a_wave_wide_comment_reaches_every_agent_and_those_that_start_later(
    tmux_repo: Repo,
) -> None:
    loop = (
        'touch "started-$WAVE_AGENT_ID"; for i in $(seq 600); do '
        "wave coord inbox | grep -q 'no new deps' && exit 0; sleep 0.1; done; exit 1"
    )
    later = local_agent("C", "true", depends_on=["A"])
    tmux_repo.lane(
        "main", local_lane(), {1: _wave(local_agent("A", loop), local_agent("B", loop), later)}
    )
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        for agent in ("A", "B"):
            wait_for(
                lambda a=agent: (tmux_repo.root / f"started-{a}").exists(),
                seconds=40,
                what=f"{agent} started",
            )
        done = tmux_repo.wave("comment", "--lane", "main", "--wave", "1", "--text", "no new deps")
        assert done.returncode == 0, done.stderr
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err  # A and B each found it in their inbox
    prompt = (tmux_repo.agent_dir("main", 1, "C") / "prompt.md").read_text()
    assert f"[{done.stdout.strip()}] guidance" in prompt and "no new deps" in prompt
    board = (tmux_repo.state("main") / "coordination" / "wave-1.board.md").read_text()
    assert "-> everyone: no new deps" in board


WAIT_FOR_GO = "for i in $(seq 600); do test -f go && exit 0; sleep 0.1; done; exit 1"


def _running_wave(repo: Repo) -> dict[str, Any]:
    done = repo.wave("status", "--lane", "main", "--json")
    waves = json.loads(done.stdout).get("waves", []) if done.returncode == 0 else []
    return waves[0] if waves else {}


def test_status_shows_open_blockers_requests_questions_and_the_board_while_a_wave_runs(
    tmux_repo: Repo,
) -> None:
    talk = (
        "wave coord post --kind blocker --summary 'schema undecided' && "
        "wave coord post --kind request --target agent:B --summary 'expose GET /items' && "
        "wave feedback ask --question 'keep v1 of the API?' > q.txt && " + WAIT_FOR_GO
    )
    tmux_repo.lane(
        "main", local_lane(), {1: _wave(local_agent("A", talk), local_agent("B", WAIT_FOR_GO))}
    )
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        talk_now = wait_for(  # all of it, once the launcher drew it (at most once a second)
            lambda: (lambda t: t if t.get("questions") and t.get("blockers") else None)(
                _running_wave(tmux_repo).get("coordination") or {}
            ),
            seconds=40,
            what="the question and the blocker in wave status --json",
        )
        shown = talk_now["questions"]
        qid = (tmux_repo.root / "q.txt").read_text().strip()
        assert [q["id"] for q in shown] == [qid]
        assert [b["summary"] for b in talk_now["blockers"]] == ["schema undecided"]
        assert "expose GET /items" in [r["summary"] for r in talk_now["requests"]]
        assert talk_now["board"].endswith("coordination/wave-1.board.md")
        text = tmux_repo.wave("status", "--lane", "main").stdout
        assert "open blocker" in text and "schema undecided" in text
        assert f"question {qid} from A: keep v1 of the API?" in text
        raw = json.loads(
            (tmux_repo.state("main") / "waves" / "wave-1" / "dashboard.json").read_text()
        )
        assert raw["coordination"]["questions"][0]["id"] == qid  # what the writer wrote ...
        (tmux_repo.root / "go").write_text("")
        code, _, err = _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert code == 0, err


def test_a_failed_gate_stays_in_status_while_the_retry_runs(tmux_repo: Repo) -> None:
    gate = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"
    qa = (
        f"mkdir -p r && echo report > r/qa.md; echo '{gate}'; "
        'if [ "$WAVE_ATTEMPT" = 1 ]; then echo "[wave-verdict] blocked detail=flaky"; exit 0; fi; '
        "touch retrying; for i in $(seq 600); do test -f go && break; sleep 0.1; done; "
        "echo '[wave-verdict] pass'"
    )
    tmux_repo.lane(
        "main",
        local_lane(retries=1),
        {
            1: _wave(
                local_agent("A", "true"), local_agent("QA", qa, role="cont-qa", owns=["r/qa.md"])
            )
        },
    )
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(lambda: (tmux_repo.root / "retrying").exists(), seconds=60, what="attempt 2")
        gate = _running_wave(tmux_repo).get("gate_failure") or {}
        assert (gate.get("stage"), gate.get("status")) == ("cont-qa", "cont-qa-blocked")
        assert gate.get("action") and gate.get("detail") == "QA: flaky"
        (tmux_repo.root / "go").write_text("")
        _finish(launch)
    finally:
        if launch.poll() is None:
            launch.kill()


@pytest.mark.parametrize(
    "ask",
    [
        "wave feedback ask --question 'go on?' > q.txt",  # asked, and went on working
        # waiting, until its `ask --wait` was killed: nobody waits any more
        "wave feedback ask --question 'go on?' --wait > q.txt & p=$!; "
        'for i in $(seq 100); do grep -q wait_pid "$WAVE_STATE_DIR/feedback.jsonl" 2>/dev/null && break; '
        "sleep 0.05; done; kill -9 $p",
    ],
    ids=["no-wait", "waiter-killed"],
)
def test_a_question_nobody_waits_on_leaves_the_budget_running(tmux_repo: Repo, ask: str) -> None:
    lane = local_lane().replace("timeout_minutes: 1", "timeout_minutes: 0.05")  # a 3 s budget
    tmux_repo.lane("main", lane, {1: _wave(local_agent("Q", f"{ask}; sleep 60"))})
    began = time.monotonic()
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=50)
    assert result.returncode == 1
    (finished,) = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert finished["status"] == "timeout", finished
    assert time.monotonic() - began < 45  # the 60 s sleep was cut at the budget
    (request,) = json.loads(tmux_repo.wave("feedback", "list", "--lane", "main", "--json").stdout)
    assert request["status"] == "pending"  # the question itself stays for a person


def test_a_failed_gate_is_posted_to_the_board_and_every_inbox_then_resolved(
    tmux_repo: Repo,
) -> None:
    gate = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"
    qa = (
        f"mkdir -p r && echo report > r/qa.md; echo '{gate}'; "
        'if [ "$WAVE_ATTEMPT" = 1 ]; then echo "[wave-verdict] blocked owner=A detail=login untested"; '
        "else echo '[wave-verdict] pass'; fi"
    )
    # On attempt 2 A reads its inbox, where the launcher's word on the failed gate waits.
    impl = '[ "$WAVE_ATTEMPT" = 2 ] && wave coord inbox > "$WAVE_REPO/A-inbox.txt"; true'
    tmux_repo.lane(
        "main",
        local_lane(retries=1),
        {1: _wave(local_agent("A", impl), local_agent("QA", qa, role="cont-qa", owns=["r/qa.md"]))},
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr  # QA blocked once naming A; A reran
    items = json.loads(
        tmux_repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--json").stdout
    )
    (item,) = [i for i in items if i["kind"] == "gate-blocked"]
    assert (item["agent"], item["source"]) == ("launcher", "launcher")
    assert item["summary"] == "cont-qa gate failed: cont-qa-blocked (QA)"
    assert item["status"] == "resolved" and "passed on attempt 2" in item["detail"]
    inbox = (tmux_repo.root / "A-inbox.txt").read_text()
    assert "cont-qa gate failed: cont-qa-blocked" in inbox
    board = (tmux_repo.state("main") / "coordination" / "wave-1.board.md").read_text()
    assert "cont-qa gate failed: cont-qa-blocked" in board
