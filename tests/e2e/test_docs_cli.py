"""docs/cli.md, lanes.md: the console blocks no page story runs (issue 23 §3). A block that
shows a command a page's story runs must show the same output; the others run here, each in
the state its text describes, and are compared line by line once times, pids, versions and
paths are set aside."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane, wait_for
from test_docs_console import DOCS, Shown, compare, console_commands

pytestmark = pytest.mark.e2e

RUN_ELSEWHERE = ("operating.md", "worktrees.md", "placement.md")
LOCAL = [
    (re.compile(r"tmux \d+\.\d+\w*"), "tmux VERSION"),
    (re.compile(r"git version [\d.]+"), "git version VERSION"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\b(?!\.)"), "TIME"),
    (re.compile(r"^ *\d+ ", re.M), "PID "),
]


def cli(command: str) -> Shown:
    found = [s for s in console_commands("cli.md") if s.command == command]
    assert len(found) == 1, command
    return found[0]


def local(shown: Shown, printed: str, repo: Path) -> None:
    """``compare`` after this machine's versions, times, pids and the repository's path."""

    def plain(text: str) -> str:
        text = text.replace(str(repo), "/home/me/proj")
        for pattern, word in LOCAL:
            text = pattern.sub(word, text)
        return text

    compare(
        Shown(shown.page, shown.line, shown.command, tuple(plain(x) for x in shown.output)),
        plain(printed),
    )


def test_a_block_shown_again_shows_what_the_page_that_runs_it_shows() -> None:
    ran = {s.command: s.output for page in RUN_ELSEWHERE for s in console_commands(page)}
    same = (
        "wave diff tests",
        "wave diff mul --stat",
        "wave worktrees prune --branches",
        "wave worktrees prune --branches --force",
        "wave stop --lane slow --agent store",
    )
    again = [s for s in console_commands("cli.md") if s.command in same]
    assert {s.command for s in again} == set(same)
    for shown in again:
        assert shown.output == ran[shown.command], shown


def test_attach_print_of_the_dashboard_and_the_launcher(tmux_repo: Repo) -> None:
    tmux_repo.lane("slow", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    for command in (
        "wave attach --lane slow --dashboard --print",
        "wave attach --lane slow --launcher --print",
    ):
        shown = cli(command)
        done = tmux_repo.wave(*shlex.split(command)[1:])
        assert done.returncode == 0, done.stderr
        compare(shown, done.stdout)


def test_doctor_after_wave_init_on_a_machine_without_codex(repo: Repo) -> None:
    repo.env["PATH"] = ":".join(
        p for p in repo.env["PATH"].split(":") if not (Path(p) / "codex").exists()
    )
    shutil.rmtree(repo.root / "lanes")
    assert repo.wave("init").returncode == 0
    done = repo.wave("doctor")
    assert done.returncode == 1
    local(cli("wave doctor"), done.stdout, repo.root)


def test_summary_of_an_agent_missing_a_proof_artifact(tmux_repo: Repo) -> None:
    agent = local_agent(
        "A",
        "echo '[wave-phase] coding'; echo ok > A.txt",
        deliverables=["A.txt"],
        proof_artifacts=["proof/A.log", "A.txt"],
    )
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + agent})
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode != 0
    done = tmux_repo.wave("summary", "A")
    assert done.returncode == 0, done.stderr
    local(cli("wave summary A"), done.stdout, tmux_repo.root)


def test_ps_while_a_launcher_runs_three_agents_and_two_are_done(
    tmux_repo: Repo, tmp_path: Path
) -> None:
    tmux_repo.env["XDG_STATE_HOME"] = str(tmp_path / "xdg")  # this test's launchers only
    wait = 'while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.1; done'
    agents = [local_agent(a, "true") for a in ("A", "B")]
    agents += [local_agent(a, wait) for a in ("C", "D", "E")]
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + "".join(agents)})
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:

        def two_done() -> str | None:
            argv = [sys.executable, "-m", "wave_orchestrator", "ps"]  # it takes no --repo
            shown = subprocess.run(
                argv, env=tmux_repo.env, cwd=tmp_path, capture_output=True, text=True, check=True
            ).stdout
            return shown if "3 run, 2 done" in shown else None

        local(cli("wave ps"), wait_for(two_done, 30, what="two agents done"), tmux_repo.root)
    finally:
        (tmux_repo.root / "go").touch()
        launcher.wait(timeout=60)


def test_lanes_md_s_broken_demo_lane_is_refused_as_shown(repo: Repo) -> None:
    """The page's four breaks, made in a copy of the demo lane."""
    shutil.copytree(DOCS.parent / "lanes" / "demo", repo.root / "lanes" / "demo")
    lane = repo.root / "lanes" / "demo"
    edits = {
        "lane.yaml": [("max_delay_seconds: 4", "max_delay_seconds: 0.5")],
        "waves/wave-1.yaml": [
            ("local: {command: [wave-demo-agent, --file, demo-scratch/wave-1/api.md]}", "id: codx")
        ],
        "waves/wave-2.yaml": [
            (
                "deliverables: [demo-scratch/wave-2/docs.md]\n",
                "deliverables: [README.md]\n    timeout: 5\n",
            )
        ],
    }
    for name, pairs in edits.items():
        text = (lane / name).read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new, 1)
        (lane / name).write_text(text)
    shown = next(
        s for s in console_commands("lanes.md") if s.command == "wave validate --lane demo"
    )
    done = repo.wave("validate", "--lane", "demo")
    assert done.returncode == 2
    compare(shown, done.stderr + done.stdout)


STORIES = {"operating.md", "coordination.md", "worktrees.md", "placement.md"}  # their own tests
RUN_HERE = {
    ("cli.md", "wave attach --lane slow --dashboard --print"),
    ("cli.md", "wave attach --lane slow --launcher --print"),
    ("cli.md", "wave attach --lane big A1 --print"),  # test_docs_placement
    ("cli.md", "wave summary A"),
    ("cli.md", "wave summary --lane main A"),  # test_summary_as_it_ends_e2e
    ("cli.md", "wave ps"),
    ("cli.md", "wave doctor"),
    ("lanes.md", "wave validate --lane demo"),
}


def test_every_console_command_of_the_docs_is_run_by_a_test() -> None:
    """A console block added anywhere in docs/ fails here until a test runs it."""
    from test_docs_console import in_scenario

    same = {s.command for s in console_commands("cli.md")} & {
        s.command for page in RUN_ELSEWHERE for s in console_commands(page)
    }
    unrun = [
        f"{s.page}:{s.line}: {s.command}"
        for page in sorted(p.name for p in DOCS.glob("*.md"))
        if page not in STORIES
        for s in console_commands(page)
        if not (in_scenario("demo", s) or in_scenario("init", s) or s.command == "echo $?")
        and (page, s.command) not in RUN_HERE
        and not (page == "cli.md" and s.command in same)
    ]
    assert unrun == []
