"""`wave coord`, `wave feedback` and `wave comment` as a person and as an agent run them."""

from __future__ import annotations

import json

from helpers import Repo, local_lane

WAVE = 'agents:\n  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'


def _repo(repo: Repo, **env: str) -> Repo:
    repo.lane("main", local_lane(), {1: WAVE})
    repo.env.update(env)
    return repo


def test_an_agent_posts_bare_from_its_environment(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    done = repo.wave("coord", "post", "--kind", "decision", "--summary", "use SQLite", "--json")
    assert done.returncode == 0, done.stderr
    item = json.loads(done.stdout)
    assert (item["agent"], item["wave"], item["source"], item["kind"]) == (
        "A",
        1,
        "agent",
        "decision",
    )
    assert (repo.state("main") / "coordination" / "wave-1.jsonl").exists()


def test_bad_values_exit_2_naming_the_valid_set(repo: Repo) -> None:
    _repo(repo)
    bad_kind = repo.wave("coord", "post", "--wave", "1", "--kind", "rumour", "--summary", "x")
    assert bad_kind.returncode == 2 and "'request', 'ack', 'claim'" in bad_kind.stderr
    bad_target = repo.wave(
        "coord", "post", "--wave", "1", "--kind", "request", "--summary", "x", "--target", "a b"
    )
    assert bad_target.returncode == 2 and "agent:ID or ID" in bad_target.stderr
    assert not (repo.state("main") / "coordination" / "wave-1.jsonl").exists()
    assert repo.wave("coord", "inbox", "--wave", "1").returncode == 2  # whose inbox?
    assert repo.wave("comment", "--text", "hi").returncode == 2  # for whom?


def test_a_person_resolves_and_updates_by_id(repo: Repo) -> None:
    _repo(repo)
    rid = repo.wave(
        "coord",
        "post",
        "--wave",
        "1",
        "--kind",
        "blocker",
        "--summary",
        "stuck",
        "--priority",
        "urgent",
    ).stdout.strip()
    assert rid.startswith("c-")
    assert repo.wave("coord", "resolve", rid, "--wave", "1", "--note", "fixed").returncode == 0
    (item,) = json.loads(repo.wave("coord", "show", "--wave", "1", "--json").stdout)
    assert (item["status"], item["detail"], item["source"]) == ("resolved", "fixed", "human")
    assert repo.wave("coord", "show", "--wave", "1", "--open").stdout.startswith(
        "wave 1: no open coordination items"
    )
    missing = repo.wave("coord", "resolve", "c-nothere", "--wave", "1")
    assert missing.returncode == 2 and "no coordination item" in missing.stderr


def test_feedback_ask_respond_and_watch(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    rid = repo.wave("feedback", "ask", "--question", "keep v1?").stdout.strip()
    watch = repo.wave("feedback", "watch", "--count", "1")
    assert rid in watch.stdout and f"wave feedback respond {rid} --lane main" in watch.stdout
    del repo.env["WAVE_AGENT_ID"]  # the person answers from their own shell
    assert repo.wave("feedback", "respond", rid, "--response", "yes").returncode == 0
    again = repo.wave("feedback", "respond", rid, "--response", "no")
    assert again.returncode == 2 and "--force" in again.stderr
    forced = repo.wave("feedback", "respond", rid, "--response", "no", "--force")
    assert forced.returncode == 0
    shown = json.loads(repo.wave("feedback", "show", rid, "--json").stdout)
    assert (shown["status"], shown["response"]["text"]) == ("answered", "no")
    assert "no pending questions" in repo.wave("feedback", "list", "--pending").stdout


def test_ask_wait_times_out_with_exit_4_and_expires(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    done = repo.wave("feedback", "ask", "--question", "q?", "--wait", "--timeout-seconds", "0.3")
    assert done.returncode == 4 and "expired" in done.stderr
    (request,) = json.loads(repo.wave("feedback", "list", "--json").stdout)
    assert request["status"] == "expired"


def test_a_comment_before_launch_is_in_the_agents_prompt(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: WAVE})
    rid = tmux_repo.wave("comment", "--agent", "A", "--wave", "1", "--text", "keep it small")
    assert rid.returncode == 0, rid.stderr
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    prompt = (tmux_repo.agent_dir("main", 1, "A") / "prompt.md").read_text()
    assert f"[{rid.stdout.strip()}] guidance" in prompt and "keep it small" in prompt


def test_a_desk_claim_from_a_worktree_is_keyed_by_the_repository_path(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    tree = repo.root / ".wave" / "main" / "worktrees" / "w1-A"
    repo.env["WAVE_WORKTREE"] = str(tree)
    done = repo.wave("desk", "claim", str(tree / "src" / "a.py"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == "src/a.py"


TWO = (
    "agents:\n"
    '  - {id: store, prompt: p, executor: {local: {command: "true"}}}\n'
    '  - {id: api, prompt: p, executor: {local: {command: "true"}}}\n'
)


def test_a_comment_for_an_agent_or_wave_the_lane_lacks_is_exit_2(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: TWO})
    typo = repo.wave("comment", "--wave", "1", "--agent", "stroe", "--text", "hi")
    assert typo.returncode == 2
    assert "no agent 'stroe' in wave 1 of lane 'main'; did you mean 'store'?" in typo.stderr
    far = repo.wave("comment", "--wave", "1", "--agent", "nobody", "--text", "hi")
    assert far.returncode == 2 and "its agents: store, api" in far.stderr
    no_wave = repo.wave("comment", "--wave", "99", "--text", "hi")
    assert no_wave.returncode == 2 and "lane 'main' has no wave 99 (its waves: 1)" in no_wave.stderr
    assert not (repo.state("main") / "coordination").exists()  # nothing went anywhere
    ok = repo.wave("comment", "--wave", "1", "--agent", "api", "--text", "hi")
    assert ok.returncode == 0, ok.stderr


def test_an_agent_cannot_speak_as_a_person(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    for argv in (
        ("coord", "post", "--kind", "guidance", "--summary", "do as I say", "--agent", ""),
        ("coord", "post", "--kind", "guidance", "--summary", "do as I say", "--agent", "human"),
        ("comment", "--wave", "1", "--text", "do as I say"),
    ):
        refused = repo.wave(*argv)
        assert refused.returncode == 2, argv
        assert "person" in refused.stderr and "Traceback" not in refused.stderr
    asked = repo.wave("feedback", "ask", "--question", "may I?").stdout.strip()
    answered = repo.wave("feedback", "respond", asked, "--response", "yes, you may")
    assert answered.returncode == 2 and "agent's session" in answered.stderr
    shown = json.loads(repo.wave("coord", "show", "--json").stdout)
    assert [(r["kind"], r["source"]) for r in shown] == [("human-feedback", "agent")]
    del repo.env["WAVE_AGENT_ID"]  # a person, in their own shell
    person = repo.wave("coord", "post", "--kind", "guidance", "--summary", "ok", "--json")
    assert json.loads(person.stdout)["source"] == "human"


def test_durations_that_never_end_are_refused(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    for value in ("nan", "inf", "-inf", "1e400", "-1"):
        done = repo.wave(
            "feedback", "ask", "--question", "q?", "--wait", f"--timeout-seconds={value}"
        )
        assert done.returncode == 2 and "number of seconds" in done.stderr, value
        assert repo.wave("desk", "wait", "x.txt", f"--timeout={value}").returncode == 2
        assert repo.wave("stop", f"--timeout={value}").returncode == 2
    assert not (repo.state("main") / "feedback.jsonl").exists()  # nothing was asked


def test_feedback_watch_to_a_pipe_prints_changes_not_the_list_again(repo: Repo) -> None:
    _repo(repo, WAVE_LANE="main", WAVE_WAVE="1", WAVE_AGENT_ID="A")
    rid = repo.wave("feedback", "ask", "--question", "keep v1?").stdout.strip()
    watch = repo.wave("feedback", "watch", "--count", "5", "--interval", "0.05")
    assert watch.returncode == 0, watch.stderr
    assert watch.stdout.count(rid) == 2  # once listed, once in its answer command
    assert watch.stdout.count("pending question(s)") == 1
