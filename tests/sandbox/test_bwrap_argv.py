"""The bwrap command line built from a plan: its order (a later mount wins), each option's
reason, and the quoted shell line run.sh would hold."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from wave_orchestrator.sandbox.bwrap import (
    Bind,
    Entry,
    Extra,
    SandboxPlan,
    WorktreeGit,
    build_binds,
    describe,
    shell_line,
    to_argv,
)

REPO = Path("/work/project")
HOME = Path("/home/ann")
STATE = REPO / ".wave"
AGENT_DIR = STATE / "main/waves/wave-1/agents/A1"
LOG = STATE / "main/coordination/wave-1.jsonl"


def plan(**changes: object) -> SandboxPlan:
    base: dict[str, object] = {
        "repo": REPO,
        "cwd": REPO,
        "home": HOME,
        "git_dir": REPO / ".git",
        "git_hooks": (REPO / ".git/hooks",),
        "git_config": REPO / ".git/config",
        "hidden_state": (STATE, HOME / ".local/state/wave"),
        "own": (
            Entry(AGENT_DIR, AGENT_DIR, False, "its own folder", False),
            Entry(LOG, LOG, True, "its coordination log", False),
        ),
        "home_entries": (Entry(HOME / ".codex", HOME / ".codex", True, "codex's login"),),
        "startup_files": (HOME / ".bashrc",),
        "empty_file": STATE / "main/sandbox/empty",
        "programs": (HOME / ".nvm/versions/node/v20",),
        "setenv": (("TMPDIR", "/tmp"), ("WAVE_SANDBOX", "bubblewrap")),
        "unsetenv": ("SSH_AUTH_SOCK",),
    }
    base.update(changes)
    return SandboxPlan(**base)  # type: ignore[arg-type]


def index(binds: list[Bind], flag: str, target: Path | str) -> int:
    """Where the option ``flag`` on ``target`` is (the first one)."""
    for i, b in enumerate(binds):
        if b.flag == flag and b.target == str(target):
            return i
    raise AssertionError(f"no {flag} {target} in {[b.argv() for b in binds]}")


def test_the_process_is_locked_down_first() -> None:
    binds = build_binds(plan())
    assert [b.argv() for b in binds[:5]] == [
        ["--die-with-parent"],
        ["--new-session"],
        ["--unshare-pid"],
        ["--unshare-ipc"],
        ["--cap-drop", "ALL"],
    ]
    assert "--unshare-net" not in [b.flag for b in binds]
    offline = build_binds(plan(network=False))
    assert offline[5].flag == "--unshare-net"
    assert "network: false" in offline[5].reason


def test_every_option_says_why_it_is_there() -> None:
    binds = build_binds(plan())
    assert all(b.reason.strip() for b in binds), [b for b in binds if not b.reason]


def test_the_layers_come_in_order_each_over_the_one_before() -> None:
    binds = build_binds(plan())
    root = index(binds, "--ro-bind", "/")
    tmp = index(binds, "--tmpfs", "/tmp")
    home = index(binds, "--tmpfs", HOME)
    bashrc = index(binds, "--ro-bind", HOME / ".bashrc")
    codex = index(binds, "--bind-try", HOME / ".codex")
    repo = index(binds, "--bind", REPO)
    git = index(binds, "--ro-bind", REPO / ".git")
    state = index(binds, "--tmpfs", STATE)
    hooks = index(binds, "--tmpfs", REPO / ".git/hooks")
    config = index(binds, "--ro-bind", REPO / ".git/config")
    own = index(binds, "--ro-bind", AGENT_DIR)
    log = index(binds, "--bind", LOG)
    sealed = index(binds, "--remount-ro", STATE)
    assert root < tmp < home < bashrc < codex < repo < git < state < hooks < config
    assert config < own < log < sealed  # its own bits inside the hidden state, then sealed
    assert binds[index(binds, "--remount-ro", REPO / ".git/hooks")].flag == "--remount-ro"
    assert binds[-4:] == [
        Bind("--chdir", None, str(REPO), "where it works"),
        Bind("--setenv", "TMPDIR", "/tmp", binds[-3].reason),
        Bind("--setenv", "WAVE_SANDBOX", "bubblewrap", binds[-2].reason),
        Bind("--unsetenv", "SSH_AUTH_SOCK", None, binds[-1].reason),
    ]


def test_startup_files_are_an_empty_read_only_file() -> None:
    binds = build_binds(plan())
    b = binds[index(binds, "--ro-bind", HOME / ".bashrc")]
    assert b.source == str(STATE / "main/sandbox/empty")
    assert "refused" in b.reason


def test_shared_isolation_writes_the_checkout_but_not_git() -> None:
    binds = build_binds(plan())
    assert binds[index(binds, "--bind", REPO)].source == str(REPO)
    assert "does not commit" in binds[index(binds, "--ro-bind", REPO / ".git")].reason
    assert not any(b.target and "objects" in b.target for b in binds)


def test_a_worktree_gets_what_a_commit_writes_and_the_checkout_read_only() -> None:
    tree = WorktreeGit(
        path=STATE / "main/worktrees/w1-A1",
        admin_dir=REPO / ".git/worktrees/w1-A1",
        common_dir=REPO / ".git",
        branch="wave/main/w1-A1",
    )
    binds = build_binds(plan(worktree=tree, cwd=tree.path))
    assert binds[index(binds, "--ro-bind", REPO)].flag == "--ro-bind"
    assert not any(b.flag == "--bind" and b.target == str(REPO) for b in binds)
    state = index(binds, "--tmpfs", STATE)
    hooks = index(binds, "--tmpfs", REPO / ".git/hooks")
    work = index(binds, "--bind", tree.path)
    objects = index(binds, "--bind", REPO / ".git/objects")
    admin = index(binds, "--bind", tree.admin_dir)
    link = index(binds, "--ro-bind", tree.path / ".git")
    gitdir = index(binds, "--ro-bind-try", tree.admin_dir / "gitdir")
    assert state < hooks < work < link < objects < admin < gitdir
    assert work < index(binds, "--remount-ro", STATE)  # bound back in before the seal
    assert "wave/main/w1-A1" in binds[admin].reason  # moved by wave, from its detached HEAD
    refs = str(REPO / ".git/refs")
    assert not any(b.target and b.target.startswith(refs) for b in binds)  # no branch file
    assert binds[index(binds, "--chdir", tree.path)].target == str(tree.path)


def test_extras_go_wider_first_and_hidden_ones_are_closed() -> None:
    extras = (
        Extra("hidden", HOME / "work/keys/id.txt", "~/work/keys/id.txt", folder=False),
        Extra("writable", HOME / "work", "~/work"),
        Extra("hidden", HOME / "work/secrets", "~/work/secrets", folder=True),
        Extra("readable", Path("/opt/tools"), "/opt/tools"),
        Extra("readable", HOME / "work/secrets", "~/work/secrets"),
    )
    binds = build_binds(plan(extras=extras))
    work = index(binds, "--bind-try", HOME / "work")
    tools = index(binds, "--ro-bind-try", "/opt/tools")
    opened = index(binds, "--ro-bind-try", HOME / "work/secrets")
    closed = index(binds, "--tmpfs", HOME / "work/secrets")
    key = index(binds, "--ro-bind", HOME / "work/keys/id.txt")
    assert tools < work < opened < closed < key  # by depth; a path in two lists ends hidden
    assert binds[key].source == "/dev/null"
    assert binds[closed].reason == "sandbox.hidden: ~/work/secrets"
    assert index(binds, "--remount-ro", HOME / "work/secrets") > key
    assert closed < index(binds, "--tmpfs", STATE)  # wave's own hiding comes after the lane's


def test_argv_and_a_shell_line_that_reads_back_the_same() -> None:
    odd = Path("/home/ann/it's $(rm -rf ~) `x` dir")
    binds = build_binds(plan(repo=odd, cwd=odd, git_dir=None, git_hooks=(), git_config=None))
    argv = to_argv(binds, ["codex", "exec", "--", "a prompt; with $HOME"], bwrap="/usr/bin/bwrap")
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-5:] == ["--", "codex", "exec", "--", "a prompt; with $HOME"]
    assert argv[1:3] == ["--die-with-parent", "--new-session"]
    line = shell_line(argv)
    assert shlex.split(line) == argv
    # bash itself reads every word back as it was: nothing is expanded or run
    said = subprocess.run(
        ["bash", "-c", "printf '%s\\n' " + line], capture_output=True, text=True, check=True
    )
    assert said.stdout.splitlines() == argv


def test_the_preview_lists_each_option_with_its_reason() -> None:
    rows = describe(build_binds(plan()))
    assert rows[0] == {"flag": "--die-with-parent", "reason": rows[0]["reason"]}
    home = next(r for r in rows if r.get("target") == str(HOME) and r["flag"] == "--tmpfs")
    assert set(home) == {"flag", "target", "reason"}
    assert "private HOME" in home["reason"]


@pytest.mark.parametrize("flag", ["--bind", "--ro-bind", "--tmpfs", "--remount-ro"])
def test_no_mount_targets_a_relative_path(flag: str) -> None:
    for b in build_binds(plan()):
        if b.flag.startswith(flag) and b.target is not None:
            assert b.target.startswith("/"), b
