"""The commands a person at a terminal reaches for (issue 26 §2): `wave logs --all -f` (every
agent's lines, prefixed with its id, as they are written, and on into the next wave), `wave diff`
in a shared checkout and `wave rerun`."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from queue import Empty, Queue

import pytest
from helpers import Repo, git_init, local_agent, local_lane, sh, wait_for

pytestmark = pytest.mark.e2e


def gate(name: str) -> str:
    return f'until [ -e "$WAVE_REPO/go-{name}" ]; do sleep 0.05; done'


def test_follow_interleaves_the_agents_as_they_write_and_goes_on_to_the_next_wave(
    tmux_repo: Repo,
) -> None:
    # A and B take turns, each waiting for the test to have seen the other's line: the view
    # must show each line as it is written, not each log once it is done.
    a = f"echo a1; {gate('a2')}; echo a2"
    b = f"{gate('b1')}; echo b1; {gate('b2')}; echo b2"
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n" + local_agent("A", a) + local_agent("B", b),
            2: "agents:\n" + local_agent("C", "echo c1"),
        },
    )
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: (tmux_repo.state("main") / "run-state.json").exists(), 20, what="start")
    view = subprocess.Popen(
        tmux_repo.command("logs", "--lane", "main", "--all", "-f"),
        env=tmux_repo.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: Queue[str] = Queue()
    threading.Thread(
        target=lambda: [lines.put(x.rstrip("\n")) for x in view.stdout or []], daemon=True
    ).start()
    seen: list[str] = []

    def next_line(want: str) -> None:
        while True:
            try:
                line = lines.get(timeout=30)
            except Empty:
                raise AssertionError(f"no {want!r} in {seen}") from None
            seen.append(line)
            if line == want:
                return

    try:
        next_line("A | a1")
        (tmux_repo.root / "go-b1").touch()
        next_line("B | b1")
        (tmux_repo.root / "go-a2").touch()
        next_line("A | a2")
        (tmux_repo.root / "go-b2").touch()
        next_line("B | b2")
        next_line("--- wave 2 ---")
        next_line("C | c1")
        assert view.wait(timeout=30) == 0  # it ends with the launcher
    finally:
        view.kill()
        launcher.wait(timeout=60)
    assert launcher.returncode == 0


def test_without_follow_each_agent_s_lines_are_printed_prefixed(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n"
            + local_agent("api", "echo one; printf 'two'")
            + local_agent("ui", "printf 'x\\033]0;title\\007y\\n'"),
        },
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    out = tmux_repo.wave("logs", "--lane", "main", "--all").stdout.splitlines()
    assert out[0] == "api | one" and out[1].startswith("api | two")  # `two` had no newline
    assert sum(line.startswith("api | ") for line in out) == 2
    assert "ui  | x\x1b]0;title\x07y" in out  # to a pipe, the log as it is
    refused = tmux_repo.wave("logs", "--lane", "main", "--all", "api")
    assert refused.returncode == 2 and "give no agent id" in refused.stderr


def test_wave_diff_in_a_shared_checkout_shows_the_owned_paths_changes(tmux_repo: Repo) -> None:
    root = tmux_repo.root
    root.mkdir(parents=True, exist_ok=True)
    (root / "api.txt").write_text("v1\n")
    (root / "ui.txt").write_text("old\n")
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n"
            + local_agent(
                "api", "echo v2 >> api.txt; echo new > api-new.txt", owns=["api.txt", "api-new.txt"]
            )
            + local_agent("ui", "echo changed > ui.txt", owns=["ui.txt"])
        },
    )
    git_init(root)
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    shown = tmux_repo.wave("diff", "api", "--lane", "main")
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/api.txt" in shown.stdout and "+v2" in shown.stdout
    assert "new file, not in git yet: api-new.txt" in shown.stdout
    assert "ui.txt" not in shown.stdout  # another agent's path
    stat = tmux_repo.wave("diff", "ui", "--lane", "main", "--stat")
    assert "ui.txt | 2 +-" in stat.stdout
    sh(root, "git", "add", "-A")
    sh(root, "git", "-c", "user.name=Me", "-c", "user.email=me@example.com", "commit", "-qm", "x")
    same = tmux_repo.wave("diff", "ui", "--lane", "main")
    assert same.returncode == 0 and same.stdout == ""
    assert "agent ui of wave 1: no change since HEAD in the paths it owns" in same.stderr


def test_rerun_runs_the_agent_again_with_why_then_the_closure_and_reuses_the_rest(
    tmux_repo: Repo,
) -> None:
    count = (
        'n=$(cat "$WAVE_REPO/n-$WAVE_AGENT_ID" 2>/dev/null || echo 0); '
        'echo $((n + 1)) > "$WAVE_REPO/n-$WAVE_AGENT_ID"'
    )
    qa = (
        count + "; mkdir -p docs; echo ok > docs/qa.md; "
        "echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass "
        "docs=pass'; echo '[wave-verdict] pass'"
    )
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n"
            + local_agent("A", count)
            + local_agent("B", count)
            + local_agent("Q", qa, role="cont-qa", owns=["docs/qa.md"])
        },
    )
    git_init(tmux_repo.root)
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    again = tmux_repo.wave(
        "rerun", "A", "--lane", "main", "--reason", "flaky tests", "--no-dashboard"
    )
    assert again.returncode == 0, again.stderr
    runs = {a: int((tmux_repo.root / f"n-{a}").read_text()) for a in ("A", "B", "Q")}
    assert runs == {"A": 2, "B": 1, "Q": 2}  # A again, B reused, the closure sweep again
    prompt = (tmux_repo.agent_dir("main", 1, "A") / "prompt.md").read_text()
    assert "A person asked for it (`wave rerun`): flaky tests" in prompt
    assert "rerun" not in tmux_repo.run_state("main")["waves"]["1"]  # asked once, done
    unknown = tmux_repo.wave("rerun", "Z", "--lane", "main", "--wave", "1")
    assert unknown.returncode == 2 and "has no agent 'Z'" in unknown.stderr


def test_rerun_in_a_running_wave_stops_the_agent_s_try_and_runs_it_again_now(
    tmux_repo: Repo,
) -> None:
    """The first try of A waits for a minute; the rerun stops it and the second try reads
    the person's reason in its prompt and finishes: the wave completes within seconds."""
    a = (
        "echo first-try-output; grep -q 'A person asked for it (`wave rerun`): flaky' "
        '"$WAVE_PROMPT_FILE" && { echo again > A.txt; exit 0; }; sleep 60'
    )
    waves = {
        1: "agents:\n"
        + local_agent("A", a)
        + local_agent("B", "sleep 4")
        + local_agent("C", "true", depends_on=["B"])
    }
    tmux_repo.lane("main", local_lane(), waves)
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    folder = tmux_repo.agent_dir("main", 1, "A")
    try:
        wait_for(
            lambda: "first-try-output" in _text(folder / "output.log"),
            20,
            what="A's first try to run",
        )
        # C waits on B (4 s): not started while the request is answered (within a second)
        pending = tmux_repo.wave("rerun", "C", "--lane", "main")
        assert pending.returncode == 2 and "C has not started yet" in pending.stderr
        other = tmux_repo.wave("rerun", "A", "--lane", "main", "--wave", "2")
        assert other.returncode == 2 and "a launcher runs wave 1" in other.stderr
        again = tmux_repo.wave("rerun", "A", "--lane", "main", "--reason", "flaky")
        assert again.returncode == 0, again.stderr
        assert "agent A of wave 1 runs again now" in again.stdout
        assert launcher.wait(timeout=40) == 0  # not the 60 s of the first try
    finally:
        if launcher.poll() is None:
            launcher.terminate()
            launcher.wait(timeout=60)
    assert (tmux_repo.root / "A.txt").read_text() == "again\n"
    assert "first-try-output" in (folder / "attempt-1.rerun1.log").read_text()
    reruns = [e for e in tmux_repo.events("main") if e["event"] == "agent_rerun"]
    assert [(e["agent"], e.get("reason")) for e in reruns] == [("A", "flaky")]
    finished = [
        e for e in tmux_repo.events("main") if e["event"] == "agent_finished" and e["agent"] == "A"
    ]
    assert [e["status"] for e in finished] == ["success"]  # the stopped try is no result


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def test_all_logs_show_a_line_of_megabytes_in_parts_and_never_hold_it_whole(
    tmux_repo: Repo,
) -> None:
    big = "yes x | tr -d '\\n' | head -c 5000000"  # 5 MB, no newline
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", big)})
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    shown = subprocess.run(
        tmux_repo.command("logs", "--lane", "main", "--all"), env=tmux_repo.env, capture_output=True
    )
    assert shown.returncode == 0
    parts = [line for line in shown.stdout.split(b"\n") if line.startswith(b"A | x")]
    payload = b"".join(line[len(b"A | ") :] for line in parts)  # the line, then the footer
    assert payload.startswith(b"x" * 5_000_000) and payload[5_000_000:].startswith(
        b"[wave] run ended"
    )
    assert len(parts) >= 2 and max(len(line) for line in parts) <= 2 * (1 << 20) + 8
