"""End to end in real tmux, git and bubblewrap: `sandbox: bubblewrap` agents write their own
work and nothing else, commit in their worktree, and go without network when told."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, committed, local_agent, local_lane, sh

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (setup.sh)"),
]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder beside the repository on a real disk (under /tmp a sandbox has its own)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="wave-outside-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def launch(repo: Repo) -> Any:
    return repo.wave("launch", "--lane", "main", "--no-dashboard")


def agents_row(repo: Repo, agent_id: str) -> dict[str, Any]:
    done = repo.wave("status", "--lane", "main", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["waves"][0]["agents"]
    return next(r for r in rows if r["id"] == agent_id)


def test_a_sandboxed_agent_writes_its_work_and_every_other_write_is_refused(
    tmux_repo: Repo, outside: Path
) -> None:
    root, state = tmux_repo.root, tmux_repo.state("main")
    ledger = Path(tmux_repo.env.get("XDG_STATE_HOME", "")) / "wave"
    targets = {
        "beside": outside / "planted",
        "bashrc": Path(tmux_repo.env.get("HOME", str(Path.home()))) / ".bashrc",
        "peer": state / "waves" / "wave-1" / "agents" / "B" / "planted",
        "run_state": state / "run-state.json",
        "hook": root / ".git" / "hooks" / "post-commit",
        "ledger": ledger / "planted",
    }
    tries = "".join(
        f"if echo x >> {json.dumps(str(p))}; then echo {name}=written; "
        f"else echo {name}=refused; fi >> A.txt; "
        for name, p in targets.items()
    )
    before = {name: p.read_bytes() if p.is_file() else None for name, p in targets.items()}
    wave = "agents:\n" + local_agent("A", tries) + local_agent("B", "echo b > B.txt")
    lane = local_lane() + "  sandbox: bubblewrap\n"
    tmux_repo.lane("main", lane, {1: wave})
    sh(root, "git", "init", "-q", "-b", "main")
    result = launch(tmux_repo)
    assert result.returncode == 0, result.stderr
    said = dict(line.split("=") for line in (root / "A.txt").read_text().split())
    assert said == dict.fromkeys(targets, "refused")
    after = {name: p.read_bytes() if p.is_file() else None for name, p in targets.items()}
    json.loads(after.pop("run_state") or b"")  # the launcher's, whole: no line of the agent's
    before.pop("run_state")
    assert after == before  # nothing written through, nothing made
    assert not (outside / "planted").exists() and not targets["peer"].exists()
    assert (root / "B.txt").read_text() == "b\n"
    assert agents_row(tmux_repo, "A")["sandbox"] == "bubblewrap"
    assert json.loads((state / "waves/wave-1/agents/A/launch.json").read_text())["sandbox"] == (
        "bubblewrap"
    )


def test_a_sandboxed_agent_commits_in_its_worktree_and_the_commit_is_integrated(
    tmux_repo: Repo,
) -> None:
    root = tmux_repo.root
    commit = "echo a > A.txt && git add A.txt && git commit -qm 'A commits itself'"
    wave = "agents:\n" + local_agent("A", commit)
    lane = local_lane() + "  sandbox: bubblewrap\nisolation: worktree\n"
    tmux_repo.lane("main", lane, {1: wave})
    committed(root)
    result = launch(tmux_repo)
    assert result.returncode == 0, result.stderr
    log = sh(root, "git", "log", "--format=%s", "wave/main/wave-1")
    assert "A commits itself" in log.splitlines()
    assert sh(root, "git", "show", "wave/main/wave-1:A.txt") == "a"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and closes: its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.parametrize("network", [False, True])
def test_network_false_leaves_an_agent_no_network(
    tmux_repo: Repo, listener: int, network: bool
) -> None:
    probe = (
        f"if (exec 3<>/dev/tcp/127.0.0.1/{listener}) 2>/dev/null; "
        "then echo connected > A.txt; else echo refused > A.txt; fi"
    )
    wave = "agents:\n" + local_agent("A", probe)
    sandbox = "{mode: bubblewrap, network: " + ("true" if network else "false") + "}"
    tmux_repo.lane("main", local_lane() + f"  sandbox: {sandbox}\n", {1: wave})
    sh(tmux_repo.root, "git", "init", "-q", "-b", "main")
    result = launch(tmux_repo)
    assert result.returncode == 0, result.stderr
    assert (tmux_repo.root / "A.txt").read_text().strip() == ("connected" if network else "refused")
    label = "bubblewrap" if network else "bubblewrap, no network"
    assert agents_row(tmux_repo, "A")["sandbox"] == label


def test_where_bubblewrap_cannot_run_bubblewrap_fails_the_agent_and_auto_runs_it_unsandboxed(
    tmux_repo: Repo, tmp_path: Path
) -> None:
    """A container without the rights: said at launch with the fix; `bubblewrap` agents fail
    with it and never run unconfined, `auto` agents run unsandboxed."""
    refusing = tmp_path / "bwrap"
    refusing.write_text(
        "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
    )
    refusing.chmod(0o755)
    tmux_repo.env["WAVE_BWRAP"] = str(refusing)
    strict = local_agent("A", "echo a > A.txt", sandbox="bubblewrap")
    lenient = local_agent("B", "echo b > B.txt", sandbox="auto")
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + strict + lenient})
    sh(tmux_repo.root, "git", "init", "-q", "-b", "main")
    result = launch(tmux_repo)
    assert result.returncode == 1, result.stderr  # the wave failed: A could not run
    fix = "--cap-add SYS_ADMIN"
    assert "sandbox: bubblewrap agents will fail" in result.stderr and fix in result.stderr
    assert "sandbox: auto runs its agents unsandboxed" in result.stderr
    assert not (tmux_repo.root / "A.txt").exists()  # never ran unconfined
    assert (tmux_repo.root / "B.txt").read_text() == "b\n"
    a, b = agents_row(tmux_repo, "A"), agents_row(tmux_repo, "B")
    assert a["state"] == "failed" and fix in (a["detail"] or ""), a
    assert b["sandbox"] == "none" and b["state"] == "completed", b


def test_the_dry_run_shows_each_sandboxed_agents_bwrap_command_and_why(tmux_repo: Repo) -> None:
    """The exact command a live launch would run, every option of bwrap with its reason, and a
    line under the table; an unsandboxed agent shows `none`."""
    root = tmux_repo.root
    boxed = local_agent("A", "echo a > A.txt", sandbox={"mode": "bubblewrap", "network": False})
    wave = "agents:\n" + boxed + local_agent("B", "echo b > B.txt")
    tmux_repo.lane("main", local_lane() + "isolation: worktree\n", {1: wave})
    committed(root)
    done = tmux_repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    agents = {a["agent"]: a for a in json.loads(done.stdout)["agents"]}
    assert agents["B"]["sandbox"] == {"mode": "none"}
    sandbox = agents["A"]["sandbox"]
    assert sandbox["mode"] == "bubblewrap" and sandbox["network"] is False
    argv = sandbox["argv"]
    assert argv[0].endswith("bwrap") and argv[argv.index("--") + 1 :] == agents["A"]["argv"]
    options = sandbox["options"]
    assert all(o["reason"] for o in options)
    flags = [o["flag"] for o in options]
    assert "--unshare-net" in flags and "--cap-drop" in flags
    tree = str(tmux_repo.state("main") / "worktrees" / "w1-A")
    assert any(o["flag"] == "--bind" and o.get("target") == tree for o in options)
    table = tmux_repo.wave("launch", "--lane", "main", "--dry-run")
    assert "A: sandbox bubblewrap, no network (without network;" in table.stdout + table.stderr
    assert not (root / "A.txt").exists()  # nothing ran


def test_the_demo_lane_runs_whole_with_every_agent_sandboxed(tmux_repo: Repo) -> None:
    """The demo's simulated 429 needs no file of its own (a sandboxed agent writes only its work)."""
    lane = tmux_repo.root / "lanes" / "demo"
    shutil.copytree(Path(__file__).parents[2] / "lanes" / "demo", lane)
    text = (lane / "lane.yaml").read_text()
    (lane / "lane.yaml").write_text(
        text.replace("defaults:\n", "defaults:\n  sandbox: bubblewrap\n")
    )
    result = tmux_repo.wave("launch", "--lane", "demo", "--no-dashboard")
    assert result.returncode == 0, result.stdout + result.stderr
    state = json.loads((tmux_repo.state("demo") / "run-state.json").read_text())
    assert {k: v["state"] for k, v in state["waves"].items()} == {
        "1": "completed",
        "2": "completed",
    }
    store = tmux_repo.status("demo", 1, "store")
    assert (store["tries"], store["rate_limited"]) == (2, 1)
    launched = [e for e in tmux_repo.events("demo") if e["event"] == "agent_launched"]
    assert launched and {e.get("sandbox") for e in launched} == {"bubblewrap"}
