"""docs/coordination.md shows what wave prints (issue 23 §3): its worked example, taken from
the page, is run as the page tells it (the launch in one terminal; status, the question and
its answer in another), then the log, a refused post and a misspelt comment; every console
block is compared line by line with reality once ids, times, pids and paths are set aside."""

from __future__ import annotations

import re
import shlex

import pytest
from helpers import Repo, wait_for
from test_docs_console import DOCS, Shown, compare, console_commands, lane_files, write_files

pytestmark = pytest.mark.e2e

PAGE = "coordination.md"
ID = re.compile(r"\b([cq])-[0-9a-f]{8,16}\b")


def talk_lane(repo: Repo) -> None:
    files = lane_files(PAGE, "talk")
    assert set(files) == {"lanes/talk/lane.yaml", "lanes/talk/waves/wave-1.yaml"}
    write_files(repo.root, files)
    (repo.root / "scratch").mkdir()  # "mkdir -p scratch first"


def without_ids(shown: Shown) -> Shown:
    return Shown(
        shown.page,
        shown.line,
        ID.sub(r"\1-ID", shown.command),
        tuple(ID.sub(r"\1-ID", line) for line in shown.output),
    )


def check(shown: Shown, printed: str, any_order: bool = False) -> None:
    compare(without_ids(shown), ID.sub(r"\1-ID", printed), any_order=any_order)


def blocks() -> tuple[list[Shown], list[tuple[str, ...]]]:
    """The page's console commands, and the output of its console blocks that show no
    command (what a running launcher goes on to print)."""
    text = (DOCS / PAGE).read_text()
    bare = [
        tuple(x for x in body.splitlines() if x)
        for body in re.findall(r"```console\n(.*?)```", text, re.S)
        if not body.startswith("$ ")
    ]
    return list(console_commands(PAGE)), bare


def test_the_worked_example_prints_what_the_page_shows(tmux_repo: Repo) -> None:
    talk_lane(tmux_repo)
    shown, bare = blocks()
    assert len(bare) == 1  # what the launcher goes on to print: every block is run here
    launch, status, listed, respond, show, post, comment = shown
    assert (launch.command, status.command) == (
        "wave launch --lane talk",
        "wave status --lane talk",
    )
    launcher = tmux_repo.spawn(*shlex.split(launch.command)[1:])
    try:

        def both() -> str | None:  # the board is rewritten within a second of a post
            now = tmux_repo.wave("status", "--lane", "talk").stdout
            # ui shows waiting-human once its `ask --wait` recorded the wait, a moment after
            # the question is saved: the page shows that steady state
            asked = "question q-" in now and "waiting-human" in now
            return now if asked and "open request c-" in now else None

        check(status, wait_for(both, 30, what="api's request and ui's question in status"))
        done = tmux_repo.wave(*shlex.split(listed.command)[1:])
        check(listed, done.stdout)
        question = ID.search(done.stdout)
        assert question is not None
        argv = shlex.split(respond.command)[1:]
        argv[2] = question.group(0)  # the page's id is the page's run's
        check(respond, tmux_repo.wave(*argv).stdout)
        out, err = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.terminate()
            launcher.wait(timeout=60)
    assert launcher.returncode == 0, err
    whole = Shown(launch.page, launch.line, launch.command, launch.output + bare[0])
    check(whole, err + out, any_order=True)
    check(show, tmux_repo.wave(*shlex.split(show.command)[1:]).stdout)
    refused = tmux_repo.wave(*shlex.split(post.command)[1:])
    assert refused.returncode == 2
    check(post, refused.stderr)
    misspelt = tmux_repo.wave(*shlex.split(comment.command)[1:])
    assert misspelt.returncode == 2
    check(comment, misspelt.stderr)
