"""docs/operating.md shows what wave prints (issue 23 §3): its example lane, taken from the
page, is run through each story the page tells (a detached run watched and stopped, a launcher
killed and cleaned up, a launcher killed and resumed, a Ctrl-C), and every console block's
output is compared line by line with reality once times, pids, sockets, elapsed seconds and
the repository's path are set aside."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from typing import Any

import pytest
from helpers import Repo, alive, git_init, wait_for
from test_docs_console import Shown, compare, console_commands, lane_files, write_files

pytestmark = pytest.mark.e2e

PAGE = "operating.md"


def commands() -> dict[str, list[Shown]]:
    """The page's console commands, by what each is (the page's order kept within a kind)."""
    found: dict[str, list[Shown]] = {}
    for shown in console_commands(PAGE):
        found.setdefault(shown.command.split("  #")[0].split(" #")[0].strip(), []).append(shown)
    return found


def slow_lane(repo: Repo) -> None:
    """The page's example lane, written from its ```yaml blocks (`# lanes/slow/...` first)."""
    files = lane_files(PAGE, "slow")
    assert set(files) == {"lanes/slow/lane.yaml", "lanes/slow/waves/wave-1.yaml"}
    write_files(repo.root, files)
    git_init(repo.root)


def run(repo: Repo, shown: Shown, any_order: bool = False) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(shown.command)
    assert argv[0] == "wave", shown
    done = repo.wave(*argv[1:], timeout=120)
    compare(shown, done.stderr + done.stdout, any_order=any_order)
    return done


def events(repo: Repo, kind: str) -> set[str]:
    return {e.get("agent", "") for e in repo.events("slow") if e["event"] == kind}


def launcher_pid(repo: Repo) -> int:
    done = repo.wave("status", "--lane", "slow", "--json")
    data: dict[str, Any] = json.loads(done.stdout)
    return int(data["launcher"]["pid"])


def test_a_detached_run_watched_and_stopped(tmux_repo: Repo) -> None:
    """`--detach`, `wave status` while it runs, `wave stop --agent`, `wave stop` and the
    status after it, `wave stop` with nothing left to stop."""
    slow_lane(tmux_repo)
    shown = commands()
    run(tmux_repo, shown["wave launch --lane slow --detach"][0])
    assert shown["echo $?"][0].output == ("0",)
    try:
        wait_for(lambda: events(tmux_repo, "agent_finished") >= {"api"}, 30, what="api done")
        wait_for(lambda: "ui" in events(tmux_repo, "agent_launched"), 30, what="ui launched")
        wait_for(
            lambda: tmux_repo.wave("status", "--lane", "slow").stdout.count(" coding ") == 2,
            20,
            what="store and ui coding",
        )
        running, after = shown["wave status --lane slow"][:2]
        run(tmux_repo, running)
        run(tmux_repo, shown["wave stop --lane slow --agent store"][0])
        wait_for(lambda: "store" in events(tmux_repo, "agent_finished"), 20, what="store ended")
        stop, nothing = shown["wave stop --lane slow"][:2]
        run(tmux_repo, stop)
        run(tmux_repo, after)
        run(tmux_repo, nothing)
    finally:
        tmux_repo.wave("stop", "--lane", "slow")


def _killed_before_ui(repo: Repo) -> int:
    """A detached launch killed with SIGKILL once api and store run, before ui starts (the
    lane staggers launches by 1.5 s); returns the launcher's pid."""
    done = repo.wave("launch", "--lane", "slow", "--detach")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: events(repo, "agent_launched") >= {"api", "store"}, 30, what="two agents")
    pid = launcher_pid(repo)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher gone")
    assert "ui" not in events(repo, "agent_launched"), "ui started before the kill: too slow"
    return pid


def test_after_a_crash_wave_stop_cleans_up(tmux_repo: Repo) -> None:
    slow_lane(tmux_repo)
    _killed_before_ui(tmux_repo)
    shown = commands()
    run(tmux_repo, shown["wave stop --lane slow"][2])
    run(tmux_repo, shown["wave status --lane slow"][2])


def test_after_a_crash_a_plain_launch_refuses_and_resume_carries_on(tmux_repo: Repo) -> None:
    slow_lane(tmux_repo)
    pid = _killed_before_ui(tmux_repo)
    shown = commands()
    kill = shown["kill -9 32468"][0]
    assert kill.output == () and "32468" in kill.command  # what the test did, with its pid
    run(tmux_repo, shown["wave status --lane slow"][3])
    refused = shown["wave launch --lane slow"][0]
    done = run(tmux_repo, refused)
    assert [str(done.returncode)] == list(shown["echo $?"][1].output)
    assert str(pid) in done.stderr
    # The page's resume prints one heartbeat (every 30 s): here at 20 s, well before the end.
    tmux_repo.env["WAVE_HEARTBEAT_SECONDS"] = "20"
    api = tmux_repo.agent_dir("slow", 1, "api") / "status.json"
    wait_for(api.exists, 30, what="api to finish with no launcher")
    resumed = run(tmux_repo, shown["wave launch --lane slow --resume"][0], any_order=True)
    assert resumed.returncode == 0


def test_ctrl_c_on_a_foreground_json_launch(tmux_repo: Repo) -> None:
    slow_lane(tmux_repo)
    shown = commands()
    block = shown["wave launch --lane slow --json"][0]
    launch = tmux_repo.spawn("launch", "--lane", "slow", "--json")
    try:
        wait_for(
            lambda: events(tmux_repo, "agent_launched") >= {"api", "store", "ui"},
            30,
            what="three agents launched",
        )
        launch.send_signal(signal.SIGINT)
        out, err = launch.communicate(timeout=60)
    finally:
        if launch.poll() is None:
            launch.kill()
    shown_lines = Shown(
        block.page, block.line, block.command, tuple(x.replace("^C", "", 1) for x in block.output)
    )
    compare(shown_lines, err + out, any_order=True)
    assert [str(launch.returncode)] == list(shown["echo $?"][2].output)
    assert json.loads(out)["code"] == 130
    time.sleep(0)  # nothing left to wait for: the launcher ended its agents before exiting


def test_every_console_block_of_the_page_is_run_by_one_of_the_stories() -> None:
    """A block added to the page fails here until a story above runs it."""
    counts = {command: len(shown) for command, shown in commands().items()}
    assert counts == {
        "wave launch --lane slow --detach": 1,  # a detached run
        "echo $?": 3,  # after --detach, the refused launch, the Ctrl-C
        "wave status --lane slow": 4,  # running; stopped; after a crash and stop; crashed
        "wave stop --lane slow": 3,  # a launcher; none; after a crash
        "wave stop --lane slow --agent store": 1,
        "kill -9 32468": 1,
        "wave launch --lane slow": 1,  # refused after a crash
        "wave launch --lane slow --resume": 1,
        "wave launch --lane slow --json": 1,  # Ctrl-C
        "wave doctor": 2,  # bubblewrap works; a container without the rights
        "wave doctor --json | jq '.checks[] | select(.name == \"bubblewrap\")'": 1,
    }


def test_doctor_says_whether_a_sandbox_runs_here_and_what_fixes_it(repo: Repo) -> None:
    """The sandbox section's `wave doctor` blocks: the demo lane with `sandbox: bubblewrap`,
    on this machine (bubblewrap works) and in a container without the rights (a bwrap that
    refuses, as such a container's does)."""
    works, refused = commands()["wave doctor"]
    (jq,) = [
        s for c, shown in commands().items() if c.startswith("wave doctor --json") for s in shown
    ]
    assert repo.wave("init", "--demo").returncode == 0
    lane = repo.root / "lanes" / "demo" / "lane.yaml"
    lane.write_text(
        lane.read_text().replace("defaults:\n", "defaults:\n  sandbox: bubblewrap\n", 1)
    )
    git_init(repo.root)

    def doctor(shown: Shown, code: int) -> None:
        done = repo.wave("doctor", timeout=120)
        assert done.returncode == code, done.stdout + done.stderr
        compare(shown, (done.stderr + done.stdout).replace(str(repo.root), "/home/me/proj"))

    doctor(works, 0)
    bwrap = repo.root.parent / "refusing-bwrap"
    said = "bwrap: Creating new namespace failed: Operation not permitted"
    bwrap.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    bwrap.chmod(0o755)
    repo.env["WAVE_BWRAP"] = str(bwrap)
    doctor(refused, 1)
    filtered = subprocess.run(
        ["jq", shlex.split(jq.command)[-1]],
        input=repo.wave("doctor", "--json").stdout,
        capture_output=True,
        text=True,
        check=True,
    )
    compare(jq, filtered.stdout)
