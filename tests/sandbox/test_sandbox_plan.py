"""The plan gathered for one agent: its channel, wave's hidden state, its CLI's HOME folders,
the programs it runs, the lane's extra paths resolved (and refused where they would open what
wave hides), and ``prepare``, which makes the channel files without following a link."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import committed_repo

from wave_orchestrator.definitions.model import SandboxSettings
from wave_orchestrator.sandbox.bwrap import Entry, Extra, WorktreeGit
from wave_orchestrator.sandbox.home import cli_entries, program_roots
from wave_orchestrator.sandbox.plan import SandboxConflict, SandboxPlan, plan_sandbox, prepare
from wave_orchestrator.state.fsutil import UnsafePath
from wave_orchestrator.state.layout import StateLayout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "wave" / "ledger").mkdir(parents=True)
    root = committed_repo(tmp_path / "repo", {"README.md": "hi\n"})
    (root / "lanes" / "main").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    return root.resolve()


def make_plan(repo: Path, settings: SandboxSettings | None = None, **kw: object) -> SandboxPlan:
    layout = kw.pop("layout", None) or StateLayout(repo / ".wave" / "main", "main", repo=repo)
    env = {"HOME": str(repo.parent / "home"), "PATH": os.environ["PATH"]}
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    return plan_sandbox(
        settings or SandboxSettings(mode="bubblewrap"),
        layout=layout,  # type: ignore[arg-type]
        repo=repo,
        wave=2,
        agent_id="A1",
        executor=str(kw.pop("executor", "codex")),
        env=env,
        **kw,  # type: ignore[arg-type]
    )


def test_its_channel_is_written_its_folder_read(repo: Path) -> None:
    state = repo / ".wave" / "main"
    plan = make_plan(repo)
    own = {e.target: e for e in plan.own}
    folder = own[state / "waves/wave-2/agents/A1"]
    assert not folder.writable and not folder.optional
    for path in (
        "coordination/wave-2.outbox/A1.jsonl",
        "coordination/wave-2.outbox/A1.questions.jsonl",
    ):
        entry = own[state / path]
        assert entry.writable and not entry.optional, path  # its own outboxes
    for path in ("coordination/wave-2.jsonl", "feedback.jsonl"):
        entry = own[state / path]
        assert not entry.writable and not entry.optional, path  # read, merged into by wave
    assert state / "feedback.jsonl.lock" not in own
    assert not own[state / "coordination/wave-2.owners.json"].writable
    assert not own[state / "bin"].writable
    assert state / "desk.sqlite3" not in own
    with_desk = {e.target for e in make_plan(repo, desk=True).own if e.writable}
    assert {state / "desk.sqlite3", state / "desk.sqlite3-journal"} <= with_desk
    assert len(with_desk) == 4  # its two outboxes, the desk and its journal


def test_wave_state_is_hidden_outermost_first(repo: Path, tmp_path: Path) -> None:
    (repo / ".wave" / "main").mkdir(parents=True)
    plan = make_plan(repo)
    assert plan.hidden_state == (repo / ".wave", tmp_path / "xdg" / "wave")  # .wave/main within
    elsewhere = tmp_path / "state-elsewhere"
    elsewhere.mkdir()
    plan = make_plan(repo, layout=StateLayout(elsewhere, "main", repo=repo))
    assert set(plan.hidden_state) == {elsewhere, repo / ".wave", tmp_path / "xdg" / "wave"}
    assert plan.git_hooks == (repo / ".git" / "hooks",)
    assert plan.git_config == repo / ".git" / "config"


def test_the_lanes_extra_paths_are_resolved(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cache" / "go").mkdir(parents=True)
    (repo / "secrets").mkdir()
    (repo / "key.txt").write_text("k")
    settings = SandboxSettings(
        mode="bubblewrap",
        writable=("~/.cache/go", "build"),
        readable=("/opt", "~"),
        hidden=("secrets", "key.txt", "not-there"),
    )
    plan = make_plan(repo, settings)
    assert set(plan.extras) == {
        Extra("writable", home / ".cache/go", "~/.cache/go"),
        Extra("writable", repo / "build", "build"),
        Extra("readable", Path("/opt").resolve(), "/opt"),
        Extra("readable", home, "~"),
        Extra("hidden", repo / "secrets", "secrets", folder=True),
        Extra("hidden", repo / "key.txt", "key.txt", folder=False),
    }  # a hidden path that is not there has nothing to hide


@pytest.mark.parametrize(
    "settings",
    [
        SandboxSettings(mode="bubblewrap", readable=(".wave/main",)),
        SandboxSettings(mode="bubblewrap", writable=(".wave",)),
        SandboxSettings(mode="bubblewrap", readable=("{xdg}/wave/ledger",)),
        SandboxSettings(mode="bubblewrap", writable=(".git/hooks",)),
    ],
)
def test_an_extra_path_may_not_open_what_wave_hides(
    repo: Path, tmp_path: Path, settings: SandboxSettings
) -> None:
    (repo / ".wave" / "main").mkdir(parents=True)
    xdg = str(tmp_path / "xdg")
    settings = settings._replace(
        readable=tuple(p.format(xdg=xdg) for p in settings.readable),
    )
    with pytest.raises(SandboxConflict, match="wave keeps hidden from every agent"):
        make_plan(repo, settings)


def test_an_extra_path_may_not_leave_the_repository_through_a_link(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "out").symlink_to(tmp_path / "home")
    with pytest.raises(SandboxConflict, match="leads out of the repository through a link"):
        make_plan(repo, SandboxSettings(mode="bubblewrap", writable=("out",)))


def test_shared_isolation_keeps_the_lane_files_read_only(repo: Path) -> None:
    plan = make_plan(repo)
    assert [p for p, _ in plan.read_only] == [repo / "lanes"]
    tree = WorktreeGit(repo / "wt", repo / ".git/worktrees/wt", repo / ".git", "wave/main/w2-A1")
    boxed = make_plan(repo, worktree=tree)
    assert boxed.read_only == () and boxed.cwd == repo / "wt"


def test_runtime_folders_are_private(repo: Path, tmp_path: Path) -> None:
    outside = Path(tempfile.mkdtemp(prefix="wave-run-user-", dir="/var/tmp")).resolve()
    try:
        plan = make_plan(
            repo,
            env={
                "XDG_RUNTIME_DIR": str(outside),
                "TMUX_TMPDIR": str(tmp_path),  # under /tmp: private already
                "SSH_AUTH_SOCK": str(outside / "ssh"),
                "TMUX": "x",
            },
        )
    finally:
        shutil.rmtree(outside)
    assert [p for p, _ in plan.private_dirs] == [outside]
    assert plan.unsetenv == ("SSH_AUTH_SOCK", "TMUX")
    assert dict(plan.setenv) == {"TMPDIR": "/tmp", "WAVE_SANDBOX": "bubblewrap"}


def targets(entries: list[Entry]) -> dict[Path, Entry]:
    return {e.target: e for e in entries}


def test_each_cli_gets_its_own_folders_and_nothing_of_the_others(tmp_path: Path) -> None:
    home, mine = tmp_path / "home", tmp_path / "agent"
    git = {
        home / ".gitconfig",
        *(home / ".config/git" / n for n in ("config", "ignore", "attributes")),
    }
    codex = targets(cli_entries("codex", {}, home, mine))
    settings = {home / ".codex/config.toml", home / ".codex/rules"}
    assert set(codex) == {home / ".codex", *settings, *git}  # no shared npm or pip cache
    assert codex[home / ".codex"].writable and not codex[home / ".gitconfig"].writable
    assert not any(codex[p].writable or codex[p].optional for p in settings)  # made, read-only
    moved = targets(cli_entries("codex", {"CODEX_HOME": "~/codex-elsewhere"}, home, mine))
    assert home / "codex-elsewhere" in moved and home / ".codex" not in moved
    claude = targets(cli_entries("claude", {}, home, mine))
    assert claude[home / ".claude"].source == home / ".claude"
    copy = claude[home / ".claude.json"]
    assert copy.source == mine / "claude.json" and copy.writable  # its own copy
    given = targets(cli_entries("claude", {"CLAUDE_CONFIG_DIR": "/srv/claude"}, home, mine))
    assert Path("/srv/claude") in given and home / ".claude.json" not in given
    opencode = targets(cli_entries("opencode", {"XDG_DATA_HOME": "/data"}, home, mine))
    assert {Path("/data/opencode"), home / ".config/opencode", home / ".cache/opencode"} <= set(
        opencode
    )
    assert home / ".local/state/opencode" in opencode
    plugins = opencode[home / ".config/opencode/plugin"]
    assert not plugins.writable and plugins.missing == "/"
    hooks = claude[home / ".claude/settings.json"]
    assert not hooks.writable and hooks.missing == "{}\n"
    assert set(targets(cli_entries("local", {}, home, mine))) == git
    relative = targets(cli_entries("codex", {"CODEX_HOME": "codex"}, home, mine))
    assert home / ".codex" in relative  # a relative CODEX_HOME means nothing: the default


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_programs_in_home_are_found_with_their_installation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    node = home / ".nvm/versions/node/v20"
    package = node / "lib/node_modules/@openai/codex"
    executable(package / "bin/codex.js", "#!/usr/bin/env node\nconsole.log(1)\n")
    (node / "bin").mkdir(parents=True)
    (node / "bin/codex").symlink_to(package / "bin/codex.js")
    executable(node / "bin/node", "\x7fELF not really\n")
    executable(home / "bin/tool", "#!/bin/sh\n")
    venv = home / ".local/share/pipx/venvs/wave"
    executable(venv / "bin/python", "#!/bin/sh\n")
    executable(venv / "bin/wave", f"#!{venv}/bin/python\n")
    (home / ".local/bin").mkdir(parents=True)
    (home / ".local/bin/wave").symlink_to(venv / "bin/wave")
    path = os.pathsep.join(
        [str(node / "bin"), str(home / "bin"), str(home / ".local/bin"), "/usr/bin"]
    )
    roots = program_roots(["codex", "tool", "wave", "sh"], path, [home])
    # node's installation holds codex's package; ~/bin, not HOME; never all of ~/.local
    assert roots == [home / "bin", home / ".local/bin", node, venv]


def test_prepare_makes_the_channel_and_never_follows_a_link(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude.json").write_text('{"oauthAccount": "me"}')
    state = repo / ".wave" / "main"
    plan = make_plan(repo, executor="claude")
    prepare(plan)
    for entry in plan.own:
        if entry.writable:
            assert entry.source.is_file() and not entry.source.is_symlink()
    copy = state / "waves/wave-2/agents/A1/claude.json"
    assert copy.read_text() == '{"oauthAccount": "me"}'
    assert copy.stat().st_mode & 0o777 == 0o600
    assert plan.empty_file is not None and plan.empty_file.read_bytes() == b""
    plan.empty_file.chmod(0o644)
    plan.empty_file.write_text("export PATH=/evil\n")  # written by someone outside
    prepare(plan)
    assert plan.empty_file.read_bytes() == b""  # made anew each time
    log = state / "coordination/wave-2.jsonl"
    log.unlink()
    log.symlink_to(home / ".claude.json")
    with pytest.raises(UnsafePath):
        prepare(plan)
    assert (home / ".claude.json").read_text() == '{"oauthAccount": "me"}'


def test_a_home_of_slash_is_refused(repo: Path) -> None:
    with pytest.raises(SandboxConflict, match="HOME is /"):
        make_plan(repo, env={"HOME": "/"})


def test_a_clis_settings_are_made_before_its_sandbox_and_never_overwritten(
    tmp_path: Path,
) -> None:
    """What would run as the person later (codex's config.toml, claude's hooks) is bound
    read-only, so it must exist: made empty when missing, left alone when there."""
    home, mine = tmp_path / "home", tmp_path / "agent"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude/settings.json").write_text('{"model": "mine"}\n')
    for cli in ("codex", "claude"):
        prepare(
            SandboxPlan(
                tmp_path, tmp_path, home, home_entries=tuple(cli_entries(cli, {}, home, mine))
            )
        )
    assert (home / ".codex/config.toml").read_text() == ""
    assert (home / ".codex/rules").is_dir() and (home / ".claude/hooks").is_dir()
    assert (home / ".claude/settings.json").read_text() == '{"model": "mine"}\n'
    assert (home / ".claude/settings.local.json").read_text() == "{}\n"


def test_the_empty_startup_file_is_made_once_not_replaced_under_a_starting_sandbox(
    tmp_path: Path,
) -> None:
    """Every agent's sandbox binds the same empty file over the shell startup files: replacing
    it (a rename) while another agent's bwrap binds it fails that agent's start."""
    empty = tmp_path / "sandbox" / "empty"
    plan = SandboxPlan(tmp_path, tmp_path, tmp_path / "home", empty_file=empty)
    prepare(plan)
    first = empty.stat()
    prepare(plan)
    assert empty.stat().st_ino == first.st_ino and first.st_mode & 0o777 == 0o444
    empty.chmod(0o644)
    empty.write_text("planted")
    prepare(plan)  # not empty any more: made anew
    assert empty.read_text() == "" and empty.stat().st_ino != first.st_ino


def test_a_shebang_never_binds_home_or_a_secret_folder_back_and_a_fifo_is_not_waited_on(
    tmp_path: Path,
) -> None:
    """A program on PATH is the agent's to write where it can write a PATH folder: what its
    `#!` names must not open HOME or its keys to the next sandbox, nor hang the launcher."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    tools = tmp_path / "tools"
    executable(tools / "whole-home", f"#!{home}/notes\n")
    executable(tools / "keys", f"#!{home}/.ssh/id_rsa\n")
    os.mkfifo(tools / "fifo")
    os.chmod(tools / "fifo", 0o755)
    roots = program_roots(["whole-home", "keys", "fifo"], str(tools), [home, Path("/tmp")])
    assert not any(home == r or home.is_relative_to(r) for r in roots)
    assert home / ".ssh" not in roots


def test_a_clis_settings_file_that_is_a_link_is_refused_not_left_writable(tmp_path: Path) -> None:
    home, mine = tmp_path / "home", tmp_path / "agent"
    (home / ".codex").mkdir(parents=True)
    (tmp_path / "dotfiles.toml").write_text("")
    (home / ".codex" / "config.toml").symlink_to(tmp_path / "dotfiles.toml")
    plan = SandboxPlan(
        tmp_path, tmp_path, home, home_entries=tuple(cli_entries("codex", {}, home, mine))
    )
    with pytest.raises(SandboxConflict, match="is a link"):
        prepare(plan)


def test_claudes_settings_file_is_always_the_agents_own_copy(tmp_path: Path) -> None:
    """`.claude.json` holds its MCP servers: under CLAUDE_CONFIG_DIR too, the agent writes a
    copy of its own, made even when there is none to copy."""
    home, mine, given = tmp_path / "home", tmp_path / "agent", tmp_path / "claude-config"
    entries = targets(cli_entries("claude", {"CLAUDE_CONFIG_DIR": str(given)}, home, mine))
    copy = entries[given / ".claude.json"]
    assert copy.source == mine / "claude.json" and not copy.optional
    prepare(SandboxPlan(tmp_path, tmp_path, home, home_entries=tuple(entries.values())))
    assert (mine / "claude.json").read_text() == "{}\n"
    assert not (given / ".claude.json").exists()


def test_an_editable_install_of_wave_in_the_repository_is_read_only(tmp_path: Path) -> None:
    from wave_orchestrator.sandbox import plan as sandbox_plan

    package = Path(sandbox_plan.__file__).resolve().parents[1]
    kept = dict(sandbox_plan._not_its_own(package.parent, shared=True))
    assert package in kept  # the checkout wave runs from, seen as a lane's repository


def test_a_loop_of_links_in_a_lane_path_is_a_conflict_not_a_traceback(repo: Path) -> None:
    loop = repo / "loop"
    loop.symlink_to(repo / "loop")
    settings = SandboxSettings(mode="bubblewrap", writable=(str(loop / "x"),))
    with pytest.raises(SandboxConflict):
        make_plan(repo, settings)


def test_a_checkout_whose_git_is_a_file_keeps_it_and_the_real_hooks_out_of_reach(
    repo: Path, tmp_path: Path
) -> None:
    """A linked worktree (or a submodule) as the lane's repository, isolation shared: its
    `.git` pointer read-only (re-pointed, your next git would run what it names), and the
    repository's real hooks hidden, its config read-only."""
    from wave_orchestrator.runtime.agent.confine import _shared_git_dir

    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(linked)], check=True)
    (repo / ".git" / "hooks").mkdir(exist_ok=True)
    git_dir = _shared_git_dir(linked.resolve())
    assert git_dir == repo / ".git"
    plan = make_plan(linked.resolve(), git_dir=git_dir)
    assert linked.resolve() / ".git" in dict(plan.read_only)
    assert plan.git_hooks == (repo / ".git" / "hooks",)
    assert plan.git_config == repo / ".git" / "config"
    assert _shared_git_dir(repo) is None  # a folder: the plan finds it itself
