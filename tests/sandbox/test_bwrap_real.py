"""Real bubblewrap: an agent's sandbox, built by ``plan_sandbox`` and run by ``bwrap``, lets it
write its own work and nothing else; commits from its worktree land on its branch; without
network it reaches nothing; nothing of it outlives its wrapper.

The files live outside /tmp (in /var/tmp): the sandbox's /tmp is private, so a write "beside
the repository" would land there, unseen, rather than be refused as it is for a repository
anywhere else."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import libtmux
import pytest
from helpers import alive, committed_repo, sh, wait_for

from wave_orchestrator.coordination.follower import Coordinator
from wave_orchestrator.definitions.model import SandboxSettings
from wave_orchestrator.runtime.agent.programs import ensure_agent_bin
from wave_orchestrator.sandbox.bwrap import WorktreeGit, build_binds, shell_line, to_argv
from wave_orchestrator.sandbox.plan import SandboxPlan, plan_sandbox, prepare
from wave_orchestrator.sandbox.probe import probe
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.ledger import ledger_path
from wave_orchestrator.worktrees.git import detach_head

OUTSIDE_TMP = os.environ.get("WAVE_TEST_OUTSIDE_TMP", "/var/tmp")
BOXED = SandboxSettings(mode="bubblewrap")


class World(NamedTuple):
    site: Path
    repo: Path
    home: Path
    layout: StateLayout
    ledger: Path
    env: dict[str, str]


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="wave-sandbox-", dir=OUTSIDE_TMP)).resolve()
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "xdg-state"))  # the ledger's home
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def world(site: Path) -> World:
    repo = committed_repo(site / "repo", {"README.md": "hi\n", ".gitignore": ".wave/\n"})
    lane = repo / "lanes" / "main"
    (lane / "waves").mkdir(parents=True)
    (lane / "lane.yaml").write_text("defaults: {executor: local}\n")
    (lane / "waves" / "wave-1.yaml").write_text(
        "agents:\n  - {id: A1, prompt: p}\n  - {id: B2, prompt: p}\n"
    )
    home = site / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    (home / ".ssh" / "id_ed25519").write_text("SECRET KEY\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "auth.json").write_text("{}\n")
    layout = StateLayout(repo / ".wave" / "main", "main", repo=repo)
    for agent in ("A1", "B2"):
        folder = layout.agent(1, agent).dir
        folder.mkdir(parents=True)
        (folder / "prompt.md").write_text(f"task of {agent}\n")
    (layout.agent(1, "B2").dir / "status.json").write_text('{"exit_code": 0}\n')
    layout.run_state.write_text('{"waves": {}}\n')
    layout.coordination_dir.mkdir()
    layout.owners(1).write_text('{"A1": ["src/"]}\n')
    ledger = ledger_path(repo, "main")
    ledger.parent.mkdir(parents=True)
    ledger.write_text('{"kind": "launched"}\n')
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "WAVE_REPO": str(repo),
        "WAVE_LANE": "main",
        "WAVE_WAVE": "1",
        "WAVE_AGENT_ID": "A1",
    }
    return World(site, repo, home, layout, ledger, env)


def plan_for(
    w: World, settings: SandboxSettings = BOXED, worktree: WorktreeGit | None = None
) -> SandboxPlan:
    plan = plan_sandbox(
        settings,
        layout=w.layout,
        repo=w.repo,
        wave=1,
        agent_id="A1",
        executor="codex",
        worktree=worktree,
        env=w.env,
    )
    prepare(plan)
    return plan


def boxed(plan: SandboxPlan, command: list[str]) -> list[str]:
    return to_argv(build_binds(plan), command, bwrap=probe().require())


def run_boxed(
    plan: SandboxPlan, script: str, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        boxed(plan, ["bash", "-c", script]),
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


# Each write is tried in a subshell; the line says whether it got through.
TRY = """try() { if ( eval "$2" ) 2>/dev/null; then echo "WROTE $1"; else echo "REFUSED $1"; fi; }
"""


def test_it_writes_its_own_work_and_nothing_else(world: World) -> None:
    w = world
    own_dir = w.layout.agent(1, "A1").dir
    targets = {
        "BESIDE": w.site / "beside",
        "BASHRC": w.home / ".bashrc",
        "OTHER": w.layout.agent(1, "B2").dir / "status.json",
        "RUNSTATE": w.layout.run_state,
        "HOOK": w.repo / ".git" / "hooks" / "post-commit",
        "LEDGER": w.ledger,
        "GITCONFIG": w.repo / ".git" / "config",
        "LANEFILE": w.repo / "lanes" / "main" / "lane.yaml",
        "OWNSTATUS": own_dir / "status.json",
        "ETC": Path("/etc/wave-sandbox-escape"),
    }
    before = {k: p.read_bytes() if p.is_file() else None for k, p in targets.items()}
    script = TRY + "\n".join(
        [
            'try beside "mkdir $BESIDE"',
            'try bashrc "echo evil >> $BASHRC"',
            'try other "echo forged > $OTHER"',
            'try runstate "echo forged > $RUNSTATE"',
            'try hook "echo evil > $HOOK"',
            'try ledger "echo forged >> $LEDGER"',
            'try gitconfig "echo evil >> $GITCONFIG"',
            'try lanefile "echo evil >> $LANEFILE"',
            'try ownstatus "echo forged > $OWNSTATUS"',
            'try etc "echo evil > $ETC"',
            'try sshkey "cat $HOME/.ssh/id_ed25519"',
            'try ownwork "mkdir -p src && echo work > src/own.txt"',
            'try tmp "echo scratch > /tmp/scratch"',
            'try home "echo cache > $HOME/.cache-file"',
            'try prompt "grep -q A1 $OWNPROMPT"',
        ]
    )
    env = {
        **w.env,
        **{k: str(p) for k, p in targets.items()},
        "OWNPROMPT": str(own_dir / "prompt.md"),
    }
    done = run_boxed(plan_for(w), script, env)
    said = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    refused = ["beside", "bashrc", "other", "runstate", "hook", "ledger", "gitconfig"]
    refused += ["lanefile", "ownstatus", "etc", "sshkey"]
    assert said == [f"REFUSED {n}" for n in refused] + [
        "WROTE ownwork",
        "WROTE tmp",  # its private /tmp, and its private HOME: gone with it
        "WROTE home",
        "WROTE prompt",  # its own folder: read, not written
    ]
    after = {k: p.read_bytes() if p.is_file() else None for k, p in targets.items()}
    assert after == before  # nothing changed, nothing appeared
    assert not targets["BESIDE"].exists() and not targets["HOOK"].exists()
    assert (w.repo / "src" / "own.txt").read_text() == "work\n"
    assert not (w.home / ".cache-file").exists()


def test_it_cannot_reach_processes_outside_nor_remount(world: World) -> None:
    script = TRY + "\n".join(
        [
            f'try signal "kill -0 {os.getpid()}"',
            'try remount "mount -o remount,rw / && touch /etc/wave-sandbox-escape"',
            "try pids \"test $(ls /proc | grep -c '^[0-9]') -lt 10\"",
        ]
    )
    done = run_boxed(plan_for(world), script, world.env)
    assert done.stdout.splitlines() == ["REFUSED signal", "REFUSED remount", "WROTE pids"]
    assert not Path("/etc/wave-sandbox-escape").exists()


def test_wave_commands_write_its_channel_inside(world: World) -> None:
    """`wave`, from the private bin folder first on its PATH as every agent has it."""
    w = world
    ensure_agent_bin(w.layout.agent_bin)
    env = {**w.env, "PATH": f"{w.layout.agent_bin}{os.pathsep}{w.env['PATH']}"}
    script = " && ".join(
        [
            'test "$(command -v wave)" = ' + shlex.quote(str(w.layout.agent_bin / "wave")),
            shell_line(["wave", "coord", "post", "--kind", "request", "--summary", "from the box"]),
            shell_line(["wave", "coord", "show"]),
            shell_line(["wave", "feedback", "ask", "--question", "which port?"]),
        ]
    )
    plan = plan_sandbox(
        BOXED, layout=w.layout, repo=w.repo, wave=1, agent_id="A1", executor="local", env=env
    )
    prepare(plan)
    done = run_boxed(plan, script, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("c-")  # its post's id, at once
    outboxes = w.layout.outboxes(1)  # written there; the launcher merges them as A1's
    assert "from the box" in outboxes.coordination("A1").read_text()
    assert "which port?" in outboxes.questions("A1").read_text()
    assert "from the box" not in w.layout.coordination_log(1).read_text()
    coordinator = Coordinator(
        w.layout, EventLog(w.site / "events.jsonl"), lambda _: None, echo=lambda _: None
    )
    coordinator.begin(1, {"A1": ()})
    merged = w.layout.coordination_log(1).read_text()
    assert "from the box" in merged and "which port?" in merged  # the question's mirror item
    assert "which port?" in w.layout.feedback.read_text()


def test_wave_desk_works_inside(world: World) -> None:
    w = world
    plan = plan_sandbox(
        BOXED,
        layout=w.layout,
        repo=w.repo,
        wave=1,
        agent_id="A1",
        executor="local",
        desk=True,
        env=w.env,
    )
    prepare(plan)
    wave = [sys.executable, "-P", "-m", "wave_orchestrator", "desk"]
    script = shell_line([*wave, "claim", "README.md", "--intent", "edit"])
    done = run_boxed(plan, script, w.env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "granted" in done.stdout


def test_a_commit_in_its_worktree_moves_its_head_and_no_branch(world: World) -> None:
    """Its worktree's HEAD detached (as the launcher leaves it), its commit moves that HEAD
    only: wave carries it onto its branch when it ends; no branch file is writable."""
    w = world
    root = w.layout.worktrees
    root.mkdir()
    trees = {}
    for agent in ("A1", "B2"):
        branch = f"wave/main/w1-{agent}"
        sh(w.repo, "git", "worktree", "add", "-q", "-b", branch, str(root / f"w1-{agent}"))
        trees[agent] = WorktreeGit(
            root / f"w1-{agent}", w.repo / ".git/worktrees" / f"w1-{agent}", w.repo / ".git", branch
        )
    detach_head(trees["A1"].path, trees["A1"].admin_dir)
    before = {a: sh(w.repo, "git", "rev-parse", f"wave/main/w1-{a}") for a in ("A1", "B2")}
    script = TRY + "\n".join(
        [
            "try commit \"echo done > work.txt && git add work.txt && git commit -qm 'A1 work'\"",
            'try main "echo x > $REPO_FILE"',
            'try other "echo x > $OTHER_TREE/stolen.txt"',
            'try hook "echo evil > $HOOK"',
            'try sibling "git rev-parse HEAD > $SIBLING"',
            'try own_branch "git update-ref refs/heads/wave/main/w1-A1 HEAD"',
            'try worktree_config "echo [core] >> $ADMIN/config.worktree"',
        ]
    )
    env = {
        **w.env,
        "REPO_FILE": str(w.repo / "README.md"),
        "OTHER_TREE": str(trees["B2"].path),
        "HOOK": str(w.repo / ".git/hooks/post-commit"),
        "SIBLING": str(w.repo / ".git/refs/heads/wave/main/w1-B2"),
        "ADMIN": str(trees["A1"].admin_dir),
    }
    done = run_boxed(plan_for(w, worktree=trees["A1"]), script, env)
    assert done.stdout.splitlines() == [
        "WROTE commit",
        "REFUSED main",
        "REFUSED other",
        "REFUSED hook",
        "REFUSED sibling",
        "REFUSED own_branch",
        "REFUSED worktree_config",  # made empty first, bound read-only
    ], done.stderr
    assert (trees["A1"].admin_dir / "config.worktree").read_text() == ""
    head = sh(trees["A1"].path, "git", "rev-parse", "HEAD")
    assert sh(w.repo, "git", "log", "-1", "--format=%s", head) == "A1 work"
    assert sh(w.repo, "git", "show", f"{head}:work.txt") == "done"
    assert {a: sh(w.repo, "git", "rev-parse", f"wave/main/w1-{a}") for a in before} == before
    assert sh(w.repo, "git", "status", "--porcelain", "README.md") == ""  # main checkout as it was
    assert not (trees["B2"].path / "stolen.txt").exists()


class Listener:
    """A TCP server on 127.0.0.1 that accepts (and counts) connections until closed."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.closing.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.close()


CONNECT = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3)"


@pytest.mark.parametrize("network", [True, False])
def test_network_false_reaches_nothing(world: World, listener: Listener, network: bool) -> None:
    settings = SandboxSettings(mode="bubblewrap", network=network)
    argv = boxed(plan_for(world, settings), ["python3", "-c", CONNECT, str(listener.port)])
    done = subprocess.run(argv, env=world.env, capture_output=True, text=True, timeout=30)
    if network:
        assert done.returncode == 0, done.stderr
        wait_for(lambda: listener.accepted == 1, 5, what="the connection")
    else:
        assert done.returncode != 0
        assert "Connection refused" in done.stderr or "unreachable" in done.stderr
        assert listener.accepted == 0


def sandboxed_sleepers(marker: str) -> list[int]:
    """Pids of processes whose command line holds ``marker`` and that are not bwrap."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args and not args[0].endswith(b"bwrap"):
            found.append(int(entry.name))
    return found


def test_nothing_outlives_its_wrapper(world: World) -> None:
    marker = f"wave-sandbox-sleeper-{os.getpid()}"
    script = f"sleep 300 & exec -a {marker} sleep 300"  # a child of its own, and itself
    proc = subprocess.Popen(boxed(plan_for(world), ["bash", "-c", script]), env=world.env)
    try:
        wait_for(lambda: sandboxed_sleepers(marker), 10, what="the sandboxed sleeper")
        proc.send_signal(signal.SIGTERM)  # what run.sh's trap sends to its CLI
        proc.wait(10)
        wait_for(lambda: not any(alive(p) for p in sandboxed_sleepers(marker)), 10, what="its end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_in_a_tmux_pane_it_has_no_terminal_and_no_tmux(
    world: World, server: libtmux.Server
) -> None:
    """An agent's wrapper runs in a tmux pane: sandboxed, it runs there all the same, but has
    no controlling terminal to type into and cannot reach the tmux server's socket."""
    w = world
    result = w.repo / "result.txt"
    sock = f"/tmp/tmux-{os.getuid()}/{server.socket_name}"
    script = TRY + f'{{ try tty "exec 3<>/dev/tty"; try tmux "test -S {sock}"; }} > {result}'
    line = "env " + " ".join(f"{k}={v}" for k, v in w.env.items() if k in ("HOME", "PATH"))
    line += " " + shell_line(boxed(plan_for(w), ["bash", "-c", script]))
    session = server.new_session("boxed", window_command=line + "; sleep 60")  # the pane stays
    try:
        assert Path(sock).is_socket()  # there for everyone outside
        wait_for(
            lambda: result.exists() and len(result.read_text().splitlines()) == 2,
            15,
            what="the pane's result",
        )
        assert result.read_text().splitlines() == ["REFUSED tty", "REFUSED tmux"]
    finally:
        session.kill()


def test_a_plan_leaves_the_person_files_alone(world: World) -> None:
    """``prepare`` makes only wave's own files: the channel, the empty startup file."""
    w = world
    plan = plan_for(w)
    assert (w.home / ".bashrc").read_text() == "# mine\n"
    assert w.layout.coordination_log(1).is_file() and w.layout.feedback.is_file()
    assert plan.empty_file is not None and plan.empty_file.read_bytes() == b""
    assert time.time() - plan.empty_file.stat().st_mtime < 60


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="root starts it")
def test_as_a_normal_user_it_writes_its_own_work_and_nothing_else(world: World) -> None:
    """Unprivileged, where user namespaces are allowed: the same sandbox, started by a user
    who owns the repository and HOME (nobody, here), refuses the same writes."""
    w = world
    for path in [w.site, *w.site.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    plan = plan_for(w)
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    targets = {"BASHRC": w.home / ".bashrc", "RUNSTATE": w.layout.run_state, "LEDGER": w.ledger}
    script = TRY + "\n".join(
        [
            'try bashrc "echo evil >> $BASHRC"',
            'try runstate "echo forged > $RUNSTATE"',
            'try ledger "echo forged >> $LEDGER"',
            'try beside "mkdir $BESIDE"',
            'try ownwork "echo work > own.txt"',
            "try who 'test \"$(id -u)\" != 0'",
        ]
    )
    env = {**w.env, **{k: str(p) for k, p in targets.items()}, "BESIDE": str(w.site / "beside")}
    before = {k: p.read_bytes() for k, p in targets.items()}
    done = subprocess.run(
        [*user, *boxed(plan, ["bash", "-c", script])],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    refused = ["bashrc", "runstate", "ledger", "beside"]
    assert done.stdout.splitlines() == [f"REFUSED {n}" for n in refused] + [
        "WROTE ownwork",
        "WROTE who",  # not root inside either
    ]
    assert {k: p.read_bytes() for k, p in targets.items()} == before
    assert (w.repo / "own.txt").read_text() == "work\n" and not (w.site / "beside").exists()
