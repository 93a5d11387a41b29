"""End to end in real git and tmux: isolation: worktree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, commit_base, local_lane, sh, wait_for

pytestmark = pytest.mark.e2e


def git_repo(repo: Repo, lane_extra: str, agents: list[dict[str, Any]], retries: int = 0) -> str:
    """A git repository with one lane in worktree isolation; returns the base commit."""
    wave = "agents:\n" + "".join("  - " + json.dumps(a) + "\n" for a in agents)
    repo.lane("main", local_lane(retries=retries) + "isolation: worktree\n" + lane_extra, {1: wave})
    root = repo.root
    (root / ".gitignore").write_text(".wave/\nbin/\n")
    (root / "shared.txt").write_text("one\ntwo\nthree\n")
    return commit_base(root)


def agent(agent_id: str, command: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": agent_id,
        "prompt": f"task {agent_id}",
        "owns": [f"{agent_id}.txt"],
        "executor": {"local": {"command": command}},
        **extra,
    }


def worktrees(repo: Repo) -> list[str]:
    folder = repo.state("main") / "worktrees"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_two_agents_merge_into_the_integration_branch_and_your_branch_is_untouched(
    tmux_repo: Repo,
) -> None:
    base = git_repo(
        tmux_repo,
        "",
        [agent("A", "echo a > A.txt; pwd > ../../../../A-cwd"), agent("B", "echo b > B.txt")],
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    root = tmux_repo.root
    assert sh(root, "git", "rev-parse", "HEAD") == base  # merge: none leaves your branch
    assert "git merge wave/main/wave-1" in result.stderr
    files = sh(root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt"} <= set(files)
    log = sh(root, "git", "log", "--format=%s", "wave/main/w1-A")
    assert log.splitlines()[0] == "wave: A attempt 1"  # the launcher committed A's work
    assert (root / "A-cwd").read_text().strip().endswith(".wave/main/worktrees/w1-A")
    assert not (root / "A.txt").exists()  # nothing touched the main checkout
    assert worktrees(tmux_repo) == []  # removed at wave end; branches kept
    branches = sh(root, "git", "branch", "--list", "wave/*", "--format=%(refname:short)")
    assert set(branches.splitlines()) == {"wave/main/w1-A", "wave/main/w1-B", "wave/main/wave-1"}


def test_merge_ff_fast_forwards_your_branch(tmux_repo: Repo) -> None:
    git_repo(tmux_repo, "merge: ff\n", [agent("A", "echo a > A.txt")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert "fast-forwarded main to wave/main/wave-1" in result.stderr
    assert (tmux_repo.root / "A.txt").read_text() == "a\n"


def test_same_lines_changed_by_two_agents_fail_with_merge_conflict_and_the_retry_says_so(
    tmux_repo: Repo,
) -> None:
    b_cmd = (
        '[ "$WAVE_ATTEMPT" = 2 ] && cp "$WAVE_PROMPT_FILE" "$WAVE_REPO/B-retry.md"; '
        "printf 'one\\nTWO by B\\nthree\\n' > shared.txt"
    )
    git_repo(
        tmux_repo,
        "",
        [
            agent("A", "printf 'one\\nTWO by A\\nthree\\n' > shared.txt", owns=["shared.txt"]),
            agent("B", b_cmd, owns=["B.txt"]),
        ],
        retries=1,
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    failed = [e for e in tmux_repo.events("main") if e["event"] == "gate_failed"]
    assert failed and failed[0]["status"] == "merge-conflict"
    assert "B and A changed the same lines of shared.txt" in failed[0]["detail"]
    retry = (tmux_repo.root / "B-retry.md").read_text()
    assert "merge-conflict" in retry and "<<<<<<<" in retry and "TWO by B" in retry
    relaunched = [
        e["agent"]
        for e in tmux_repo.events("main")
        if e["event"] == "agent_launched" and e["attempt"] == 2
    ]
    assert relaunched == ["B"]  # A's work is kept, not rerun
    kept = sh(tmux_repo.root, "git", "show", "wave/main/wave-1:shared.txt")
    assert "TWO by A" in kept


def test_kill_9_and_resume_reuse_the_worktrees(tmux_repo: Repo) -> None:
    slow = "echo started > started.txt; for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done; echo done > A.txt"
    git_repo(tmux_repo, "", [agent("A", slow)])
    launch = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    tree = tmux_repo.state("main") / "worktrees" / "w1-A"
    resumed: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: (tree / "started.txt").exists(), seconds=40, what="A started")
        inode = tree.stat().st_ino
        os.kill(launch.pid, signal.SIGKILL)
        launch.wait(10)
        resumed = tmux_repo.spawn("launch", "--lane", "main", "--resume", "--no-dashboard")
        wait_for(
            lambda: any(e["event"] == "wave_resumed" for e in tmux_repo.events("main")),
            seconds=40,
            what="the resumed launcher",
        )
        assert tree.stat().st_ino == inode  # the same folder: reused, never recreated
        (tree / "go").touch()
        _, err = resumed.communicate(timeout=90)
    finally:
        for proc in (launch, resumed):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert resumed is not None and resumed.returncode == 0, err
    files = sh(tmux_repo.root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "started.txt"} <= set(files)  # started.txt only exists in the first worktree


def test_keep_worktrees_then_prune_refuses_dirty_ones(tmux_repo: Repo) -> None:
    git_repo(tmux_repo, "", [agent("A", "echo a > A.txt"), agent("B", "echo b > B.txt")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--keep-worktrees")
    assert result.returncode == 0, result.stderr
    assert worktrees(tmux_repo) == ["w1-A", "w1-B", "w1-integration"]
    (tmux_repo.state("main") / "worktrees" / "w1-B" / "wip.txt").write_text("wip\n")
    listed = tmux_repo.wave("worktrees", "list", "--lane", "main")
    assert "w1-B  wave/main/w1-B  1 uncommitted change(s)" in listed.stdout
    pruned = tmux_repo.wave("worktrees", "prune", "--lane", "main")
    assert pruned.returncode == 1 and "kept " in pruned.stdout and "--force" in pruned.stdout
    assert worktrees(tmux_repo) == ["w1-B"]
    forced = tmux_repo.wave("worktrees", "prune", "--lane", "main", "--force")
    assert forced.returncode == 0 and worktrees(tmux_repo) == []


def test_dry_run_shows_each_agents_worktree(repo: Repo) -> None:
    git_repo(repo, "", [agent("A", "true")])
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    (shown,) = json.loads(result.stdout)["agents"]
    base = sh(repo.root, "git", "rev-parse", "HEAD")
    assert shown["worktree"]["path"].endswith(".wave/main/worktrees/w1-A")
    assert (shown["worktree"]["branch"], shown["worktree"]["base"]) == ("wave/main/w1-A", base)
    table = repo.wave("launch", "--lane", "main", "--dry-run").stdout
    assert f"A: worktree {shown['worktree']['path']} on wave/main/w1-A from {base[:12]}" in table
    assert not (repo.state("main") / "worktrees").exists()  # a dry run creates nothing


def test_closure_agents_run_on_the_integration_branch_and_their_work_is_kept(
    tmux_repo: Repo,
) -> None:
    doc = (
        'pwd > "$WAVE_REPO/doc-cwd"; ls > "$WAVE_REPO/doc-sees"; echo notes > D.txt; '
        "echo '[wave-doc-closure] state=no-change paths='"
    )
    git_repo(tmux_repo, "", [agent("A", "echo a > A.txt"), agent("D", doc, role="documentation")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    root = tmux_repo.root
    assert (root / "doc-cwd").read_text().strip().endswith("worktrees/w1-integration")
    assert "A.txt" in (root / "doc-sees").read_text().split()  # it sees the merged work
    files = sh(root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "D.txt"} <= set(files)
    assert sh(root, "git", "log", "-1", "--format=%s", "wave/main/wave-1") == "wave: D attempt 1"


def test_a_failing_setup_command_fails_its_agent_not_the_launcher(tmux_repo: Repo) -> None:
    git_repo(tmux_repo, "setup: {command: 'exit 7'}\n", [agent("A", "echo a > A.txt")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    assert "could not prepare its worktree: setup.command bash -c 'exit 7' exited 7" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    (finished,) = [e for e in tmux_repo.events("main") if e["event"] == "agent_finished"]
    assert (finished["agent"], finished["status"]) == ("A", "failed")


def events_of(repo: Repo, name: str) -> list[dict[str, Any]]:
    return [e for e in repo.events("main") if e["event"] == name]


def test_a_dependent_starts_from_its_dependencies_work(tmux_repo: Repo) -> None:
    check = "ls > sees.txt; test -f mul.txt && test -f sub.txt && echo both > tests.txt"
    git_repo(
        tmux_repo,
        "",
        [
            agent("mul", "echo m > mul.txt"),
            agent("sub", "echo s > sub.txt"),
            agent("tests", check, depends_on=["mul", "sub"]),
        ],
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    root = tmux_repo.root
    assert sh(root, "git", "show", "wave/main/w1-tests:tests.txt") == "both"
    log = sh(root, "git", "log", "--format=%s", "wave/main/w1-tests").splitlines()
    assert (
        "wave: tests starts from mul's work" in log and "wave: tests starts from sub's work" in log
    )
    files = sh(root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"mul.txt", "sub.txt", "tests.txt"} <= set(files)


def test_dependencies_that_conflict_fail_the_dependent_with_merge_conflict(
    tmux_repo: Repo,
) -> None:
    git_repo(
        tmux_repo,
        "",
        [
            agent("mul", "echo m > shared.txt"),
            agent("sub", "echo s > shared.txt"),
            agent("tests", "echo t > tests.txt", depends_on=["mul", "sub"]),
        ],
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    (finished,) = [e for e in events_of(tmux_repo, "agent_finished") if e["agent"] == "tests"]
    assert finished["status"] == "failed"
    assert finished["detail"].startswith(
        "merge-conflict: sub and mul changed the same lines of shared.txt"
    )
    assert not any(e["agent"] == "tests" for e in events_of(tmux_repo, "agent_launched"))


def test_a_second_run_starts_from_the_current_base_and_keeps_a_persons_commit(
    tmux_repo: Repo,
) -> None:
    git_repo(tmux_repo, "", [agent("A", "cat news.txt > A.txt 2>/dev/null || echo none > A.txt")])
    root = tmux_repo.root
    first = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert first.returncode == 0, first.stderr
    assert sh(root, "git", "show", "wave/main/wave-1:A.txt") == "none"
    # A person adds a commit on the integration branch, and one on their own branch.
    sh(root, "git", "worktree", "add", "-q", str(root.parent / "mine"), "wave/main/wave-1")
    (root.parent / "mine" / "fix.txt").write_text("by hand\n")
    sh(root.parent / "mine", "git", "add", "fix.txt")
    sh(root.parent / "mine", "git", "commit", "-qm", "my fix")
    sh(root, "git", "worktree", "remove", str(root.parent / "mine"))
    (root / "news.txt").write_text("fresh\n")
    sh(root, "git", "add", "news.txt")
    sh(root, "git", "commit", "-qm", "news")
    second = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert second.returncode == 0, second.stderr
    assert sh(root, "git", "show", "wave/main/wave-1:A.txt") == "fresh"  # the current base
    assert "held 1 commit(s) wave did not make" in second.stderr and "my fix" in second.stderr
    kept = sh(
        root, "git", "branch", "--list", "wave/main/runs/*/wave-1", "--format=%(refname:short)"
    )
    assert kept and sh(root, "git", "show", f"{kept}:fix.txt") == "by hand"  # not lost
    old_a = sh(
        root, "git", "branch", "--list", "wave/main/runs/*/w1-A", "--format=%(refname:short)"
    )
    assert old_a and sh(root, "git", "show", f"{old_a}:A.txt") == "none"  # run 1's branch kept


def test_hooks_and_fsmonitor_an_agent_plants_never_run_in_waves_git(tmux_repo: Repo) -> None:
    marker = tmux_repo.root.parent / "ran"
    plant = (
        'common=$(git rev-parse --git-common-dir); mkdir -p "$common/hooks"; '
        + "".join(
            f"printf '#!/bin/sh\\necho {h} >> {marker}\\n' > \"$common/hooks/{h}\"; "
            f'chmod +x "$common/hooks/{h}"; '
            for h in (
                "post-commit",
                "pre-commit",
                "prepare-commit-msg",
                "post-merge",
                "reference-transaction",
                "post-checkout",
            )
        )
        + f"printf '#!/bin/sh\\necho fsmonitor >> {marker}\\n' > ../fsm; chmod +x ../fsm; "
        + 'git config core.fsmonitor "$PWD/../fsm"; echo a > A.txt'
    )
    git_repo(tmux_repo, "", [agent("A", plant), agent("B", "echo b > B.txt", depends_on=["A"])])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), marker.read_text()
    files = sh(tmux_repo.root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt"} <= set(files)  # committed, merged, and worktrees made meanwhile


def test_an_agent_that_replaces_its_git_file_fails_and_its_worktree_is_kept(
    tmux_repo: Repo,
) -> None:
    fake = 'git init -q ../../fake; rm .git; echo "gitdir: $(cd ../../fake && pwd)/.git" > .git; echo a > A.txt'
    git_repo(tmux_repo, "", [agent("A", fake)])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    (finished,) = events_of(tmux_repo, "agent_finished")
    assert finished["status"] == "failed" and "replaced" in finished["detail"]
    assert worktrees(tmux_repo) == ["w1-A"]  # kept: its work is in it
    assert "Traceback" not in result.stderr


def test_an_ignored_env_from_setup_copy_is_left_out_and_the_work_committed(
    tmux_repo: Repo,
) -> None:
    git_repo(tmux_repo, "setup: {copy: [.env]}\n", [agent("A", "cat .env > A.txt")])
    root = tmux_repo.root
    (root / ".gitignore").write_text(".wave/\nbin/\n.env\n")
    sh(root, "git", "commit", "-qam", "ignore .env")
    (root / ".env").write_text("TOKEN=secret\n")
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert sh(root, "git", "show", "wave/main/w1-A:A.txt") == "TOKEN=secret"
    files = sh(root, "git", "ls-tree", "-r", "--name-only", "wave/main/wave-1").splitlines()
    assert ".env" not in files


def test_a_detached_head_left_by_an_agent_is_committed_on_its_branch(tmux_repo: Repo) -> None:
    detach = "git checkout -q --detach; echo a > A.txt; git add A.txt; git commit -qm mine; echo more > B.txt"
    git_repo(tmux_repo, "", [agent("A", detach)])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    log = sh(tmux_repo.root, "git", "log", "--format=%s", "wave/main/w1-A").splitlines()
    assert log[:2] == ["wave: A attempt 1", "mine"]
    files = sh(tmux_repo.root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt"} <= set(files)


def test_a_slow_worktree_setup_does_not_hold_the_other_agents(tmux_repo: Repo) -> None:
    """The worktree of A takes 6 s to set up; B's is made, run and noticed meanwhile."""
    slow = "setup: {command: 'case $PWD in */w1-A) sleep 6;; esac'}\n"
    git_repo(tmux_repo, slow, [agent("A", "echo a > A.txt"), agent("B", "echo b > B.txt")])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    order = [(e["event"], e.get("agent")) for e in tmux_repo.events("main")]
    assert order.index(("agent_finished", "B")) < order.index(("agent_launched", "A"))


def test_a_failed_gates_report_is_kept_where_wave_status_points(tmux_repo: Repo) -> None:
    qa = "mkdir -p r && echo 'QA found gaps' > r/qa.md; echo '[wave-verdict] pass'"
    git_repo(
        tmux_repo,
        "",
        [agent("A", "echo a > A.txt"), agent("QA", qa, role="cont-qa", owns=["r/qa.md"])],
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    assert worktrees(tmux_repo) == []  # the integration worktree is gone
    report = tmux_repo.run_state("main")["waves"]["1"]["gate_failure"]["report"]
    assert report.startswith(str(tmux_repo.state("main") / "waves" / "wave-1" / "reports"))
    assert Path(report).read_text() == "QA found gaps\n"
    status = tmux_repo.wave("status", "--lane", "main")
    assert report in status.stdout


def test_wave_diff_shows_an_agents_own_change_from_where_it_started(tmux_repo: Repo) -> None:
    git_repo(
        tmux_repo,
        "",
        [agent("A", "echo a > A.txt"), agent("B", "echo b > B.txt", depends_on=["A"])],
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    shown = tmux_repo.wave("diff", "B", "--lane", "main")
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/B.txt" in shown.stdout and "A.txt" not in shown.stdout  # A's work: its start
    stat = tmux_repo.wave("diff", "A", "--lane", "main", "--wave", "1", "--stat")
    assert stat.returncode == 0 and "A.txt | 1 +" in stat.stdout
    unknown = tmux_repo.wave("diff", "nobody", "--lane", "main")
    assert unknown.returncode == 2 and "agent 'nobody' has not run" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_prune_branches_deletes_merged_wave_branches_and_keeps_the_rest(tmux_repo: Repo) -> None:
    git_repo(tmux_repo, "merge: ff\n", [agent("A", "echo a > A.txt")])
    root = tmux_repo.root
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    sh(root, "git", "branch", "wave/main/w9-X", "HEAD~1")  # at the base: nothing unmerged
    sh(root, "git", "checkout", "-q", "-b", "wave/main/w9-Y", "HEAD~1")
    (root / "y.txt").write_text("y\n")
    sh(root, "git", "add", "y.txt")
    sh(root, "git", "commit", "-qm", "unmerged work")
    sh(root, "git", "checkout", "-q", "main")
    pruned = tmux_repo.wave("worktrees", "prune", "--branches", "--lane", "main")
    assert pruned.returncode == 1, pruned.stderr  # one kept: it says so
    assert "deleted branch wave/main/w1-A (merged into main)" in pruned.stdout
    assert "deleted branch wave/main/wave-1 (merged into main)" in pruned.stdout
    assert "kept branch wave/main/w9-Y" in pruned.stdout
    left = sh(root, "git", "branch", "--list", "wave/*", "--format=%(refname:short)")
    assert left.splitlines() == ["wave/main/w9-Y"]
    forced = tmux_repo.wave("worktrees", "prune", "--branches", "--force", "--lane", "main")
    assert forced.returncode == 0 and "deleted branch wave/main/w9-Y (not merged" in forced.stdout
    assert sh(root, "git", "branch", "--list", "wave/*") == ""


def test_work_wave_cannot_commit_fails_the_agent_with_gits_words(tmux_repo: Repo) -> None:
    """A stale index.lock left in the worktree's git dir: git add cannot run; the agent
    fails saying so, its worktree (and its work) is kept, and the retry prompt says why."""
    lock = 'touch "$(git rev-parse --git-dir)/index.lock"; echo a > A.txt'
    git_repo(tmux_repo, "", [agent("A", lock)], retries=1)
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    finished = events_of(tmux_repo, "agent_finished")
    assert [e["status"] for e in finished] == ["failed", "failed"]
    assert finished[0]["detail"].startswith("its work could not be committed: git add --all")
    prompt = (tmux_repo.agent_dir("main", 1, "A") / "prompt.md").read_text()
    assert "its work could not be committed" in prompt and "index.lock" in prompt
    assert worktrees(tmux_repo) == ["w1-A"]
    assert (tmux_repo.state("main") / "worktrees" / "w1-A" / "A.txt").read_text() == "a\n"


def test_a_rebase_left_in_progress_fails_the_agent_and_nothing_is_lost(tmux_repo: Repo) -> None:
    rebase = (
        "git checkout -q -b side; echo side > shared.txt; git commit -qam side; "
        "git checkout -q -; echo mine > shared.txt; git commit -qam mine; "
        "git checkout -q side; git rebase -q wave/main/w1-A >/dev/null 2>&1; echo x > A.txt"
    )
    git_repo(tmux_repo, "", [agent("A", rebase)])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    (finished,) = events_of(tmux_repo, "agent_finished")
    assert "a rebase is in progress" in finished["detail"]
    assert worktrees(tmux_repo) == ["w1-A"]  # kept, with the rebase as the agent left it


def test_an_agent_that_deletes_its_branch_gets_it_back_with_its_work(tmux_repo: Repo) -> None:
    delete = (
        "echo a > A.txt; git add A.txt; git commit -qm mine; git checkout -q --detach; "
        "git branch -q -D wave/main/w1-A; git checkout -q -b wave/main/w1-A 2>/dev/null; "
        "git update-ref -d refs/heads/wave/main/w1-A; echo b > B.txt"
    )
    git_repo(tmux_repo, "", [agent("A", delete)])
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert "merge-conflict" not in result.stderr
    files = sh(tmux_repo.root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert {"A.txt", "B.txt"} <= set(files)


def test_a_report_behind_a_linked_folder_is_not_copied(tmux_repo: Repo) -> None:
    """The QA agent makes r/ a link to a folder outside: wave copies nothing through it."""
    outside = tmux_repo.root.parent / "outside"
    outside.mkdir()
    (outside / "qa.md").write_text("not the agent's to hand over\n")
    qa = f"ln -s {outside} r; echo '[wave-verdict] pass'"
    git_repo(
        tmux_repo,
        "",
        [agent("A", "echo a > A.txt"), agent("QA", qa, role="cont-qa", owns=["r/qa.md"])],
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    report = tmux_repo.run_state("main")["waves"]["1"]["gate_failure"]["report"]
    kept = tmux_repo.state("main") / "waves" / "wave-1" / "reports"
    assert report and not report.startswith(str(kept)) and not kept.exists()


@pytest.mark.parametrize("left", ["worktree removed", "worktree kept"])
def test_a_persons_amend_on_the_integration_branch_survives_the_wave_running_again(
    tmux_repo: Repo, left: str
) -> None:
    """The wave failed overnight (its closure agent D failed); in the morning a person fixes
    its integration branch by amending wave's last commit (its title stays `wave: ...`), in a
    worktree of their own, then resumes the wave. Its rebuild of the branch moves theirs
    aside, saying so: it never resets it over their commit, nor fails because their worktree
    has it checked out."""
    git_repo(
        tmux_repo, "", [agent("A", "echo a > A.txt"), agent("D", "exit 1", role="documentation")]
    )
    root = tmux_repo.root
    first = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert first.returncode == 1, first.stderr
    mine = root.parent / "mine"
    sh(root, "git", "worktree", "add", "-q", str(mine), "wave/main/wave-1")
    (mine / "fix.txt").write_text("by hand\n")
    sh(mine, "git", "add", "fix.txt")
    sh(mine, "git", "commit", "-q", "--amend", "--no-edit")
    amended = sh(mine, "git", "rev-parse", "HEAD")
    if left == "worktree removed":
        sh(root, "git", "worktree", "remove", str(mine))
    again = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", "--resume")
    assert "gate passed (stage=implementation" in again.stderr, again.stderr  # rebuilt
    holding = sh(root, "git", "branch", "--contains", amended, "--format=%(refname:short)")
    (kept,) = holding.splitlines()
    assert kept.startswith("wave/main/runs/") and f"moved to {kept}" in again.stderr
    assert f"{amended[:12]} wave: merge A into wave 1" in again.stderr  # named, title and all
    assert sh(root, "git", "show", f"{kept}:fix.txt") == "by hand"
    if left == "worktree kept":  # the person's worktree is on the kept branch, as it was
        assert sh(mine, "git", "rev-parse", "HEAD") == amended
    files = sh(root, "git", "ls-tree", "--name-only", "wave/main/wave-1").splitlines()
    assert "A.txt" in files and "fix.txt" not in files  # the rebuilt branch is wave's own
