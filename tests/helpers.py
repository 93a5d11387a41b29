"""Shared test helpers: a temporary repository with lanes, fake agent CLIs and deadline waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T], seconds: float = 10.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll until ``condition()`` is truthy; fail with ``what`` after the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what or condition}")
        time.sleep(interval)


def execed(*pids: int, argv: tuple[str, ...] = ("sleep", "30")) -> None:
    """Wait until each of ``pids`` runs ``argv``. While a process execs, /proc shows it an
    empty environment (and an environment opened before the exec reads empty after it): a
    token scan at that instant, on a busy machine, misses the process."""
    want = "".join(f"{arg}\0" for arg in argv).encode()
    for pid in pids:
        wait_for(lambda pid=pid: _cmdline(pid) == want, 10, what=f"{pid} running {argv}")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def processes_naming(word: str) -> list[int]:
    """Pids of processes on this machine with ``word`` as one argument of their command line
    (a tmux server's socket name, say)."""
    names = (entry.name for entry in Path("/proc").iterdir())
    pids = [int(name) for name in names if name.isdigit()]
    return [pid for pid in pids if word.encode() in _cmdline(pid).split(b"\0")]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (what "left running" means in a test)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Repo:
    """A throwaway repository: lanes, a bin/ of fake CLIs on PATH, and the `wave` command."""

    def __init__(self, root: Path, socket: str | None = None) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        (root / "lanes").mkdir(exist_ok=True)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env.pop("WAVE_STATE_DIR", None)
        self.env.pop("WAVE_REPO", None)
        self.env.pop("TMUX", None)
        if socket:
            self.env["WAVE_TMUX_SOCKET"] = socket

    def lane(self, name: str, lane_yaml: str, waves: dict[int, str]) -> Path:
        folder = self.root / "lanes" / name
        (folder / "waves").mkdir(parents=True, exist_ok=True)
        (folder / "lane.yaml").write_text(textwrap.dedent(lane_yaml))
        for number, body in waves.items():
            (folder / "waves" / f"wave-{number}.yaml").write_text(textwrap.dedent(body))
        return folder

    def fake(self, name: str, body: str) -> Path:
        """A fake CLI on PATH: a bash script named like the real one."""
        path = self.bin / name
        path.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body))
        path.chmod(0o755)
        return path

    def command(self, *args: str) -> list[str]:
        # -P: the repository (the working folder) is not on sys.path, as for wave itself
        return [sys.executable, "-P", "-m", "wave_orchestrator", *args, "--repo", str(self.root)]

    def wave(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args),
            env=self.env,
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def state(self, lane: str) -> Path:
        return self.root / ".wave" / lane

    def agent_dir(self, lane: str, wave: int, agent: str) -> Path:
        return self.state(lane) / "waves" / f"wave-{wave}" / "agents" / agent

    def status(self, lane: str, wave: int, agent: str) -> dict[str, Any]:
        return json.loads((self.agent_dir(lane, wave, agent) / "status.json").read_text())

    def events(self, lane: str) -> list[dict[str, Any]]:
        path = self.state(lane) / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def run_state(self, lane: str) -> dict[str, Any]:
        return json.loads((self.state(lane) / "run-state.json").read_text())

    def wave_state(self, lane: str, wave: int) -> str | None:
        """A wave's state in run-state.json; None until the launcher has written it (a
        detached launcher writes it a moment after `--detach` returns)."""
        path = self.state(lane) / "run-state.json"
        if not path.exists():
            return None
        found = self.run_state(lane)["waves"].get(str(wave), {})
        return found.get("state") if isinstance(found, dict) else None


def parse_at(stamp: str) -> float:
    """Seconds since the epoch for an events.jsonl ``at`` stamp."""
    from datetime import datetime

    return (
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        .replace(tzinfo=__import__("datetime").UTC)
        .timestamp()
    )


def local_agent(agent_id: str, command: str, **extra: Any) -> str:
    """One wave-file agent line (YAML flow) run by the local executor, owning ``<id>.txt``."""
    fields = {"id": agent_id, "prompt": f"task of {agent_id}", "owns": [f"{agent_id}.txt"]}
    fields.update(extra)
    fields["executor"] = {"local": {"command": command}}
    return "  - " + json.dumps(fields) + "\n"


def local_lane(
    retries: int = 0, stall: float | None = None, rate_retries: int | None = None
) -> str:
    """A lane.yaml for tests: local executor, no required closure role, no stagger, 1-minute
    budget, ``retries`` wave retries (and optionally a stall window and rate-limit retries)."""
    lines = [
        "closure: {required_roles: []}",
        "defaults:",
        "  executor: local",
        "  timeout_minutes: 1",
        f"  max_retries_per_wave: {retries}",
        "  launch_stagger_ms: 0",
    ]
    if stall is not None:
        lines.append(f"  stall_minutes: {stall}")
    if rate_retries is not None:
        lines.append(f"  rate_limit: {{retries: {rate_retries}}}")
    return "\n".join(lines) + "\n"


def git_init(root: Path) -> str:
    """Make ``root`` a git repository whose one commit holds what is in it now (``.wave/``
    ignored, as a real project would), with an identity of its own; that commit."""

    def git(*args: str) -> str:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "-c",
                "user.name=Me",
                "-c",
                "user.email=me@example.com",
                *args,
            ],
            check=True,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".wave/\n")
    git("add", "--all")
    git("commit", "-qm", "base")
    return git("rev-parse", "HEAD")


def committed(root: Path) -> str:
    """``root`` made a repository of one commit (``git_init``), with an identity its agents
    commit as: that commit."""
    base = git_init(root)
    for key, value in (("user.email", "me@example.com"), ("user.name", "Me")):
        sh(root, "git", "config", key, value)
    return base


def sh(cwd: Path, *argv: str) -> str:
    """Run a command in ``cwd`` (it must succeed); its stdout, stripped."""
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def sandboxed_agent_site(site: Path) -> tuple[Path, Any, dict[str, str]]:
    """Under ``site``: a committed repository with a lane of one agent, A1 of wave 1, its
    folder and wave's bin folder made; the environment it starts with in a sandbox, wave's
    bin first on its PATH. (repository, its StateLayout, environment)."""
    from wave_orchestrator.runtime.agent.programs import ensure_agent_bin
    from wave_orchestrator.state.layout import StateLayout

    repo = committed_repo(site / "repo", {"README.md": "hi\n", ".gitignore": ".wave/\n"})
    lane = repo / "lanes" / "main"
    (lane / "waves").mkdir(parents=True)
    (lane / "lane.yaml").write_text("defaults: {executor: local}\n")
    (lane / "waves" / "wave-1.yaml").write_text("agents:\n  - {id: A1, prompt: p}\n")
    layout = StateLayout(repo / ".wave" / "main", "main", repo=repo)
    layout.agent(1, "A1").dir.mkdir(parents=True)
    ensure_agent_bin(layout.agent_bin)
    (site / "home").mkdir()
    env = {
        "HOME": str(site / "home"),
        "PATH": f"{layout.agent_bin}{os.pathsep}{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        "XDG_STATE_HOME": str(site / "xdg-state"),
        "WAVE_REPO": str(repo),
        "WAVE_LANE": "main",
        "WAVE_WAVE": "1",
        "WAVE_AGENT_ID": "A1",
    }
    return repo, layout, env


def committed_repo(root: Path, files: dict[str, str]) -> Path:
    """``root`` made a git repository on ``main`` with a person's identity in its config and
    one commit, "base", holding ``files``: for tests of wave's own git."""
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    commit_base(root, *files)
    return root


def commit_base(root: Path, *paths: str) -> str:
    """``root`` (files already there) made a git repository on ``main`` with a person's
    identity and one commit, "base", of ``paths`` (default: everything); its sha."""
    sh(root, "git", "init", "-q", "-b", "main")
    sh(root, "git", "config", "user.email", "me@example.com")
    sh(root, "git", "config", "user.name", "Me")
    sh(root, "git", "add", "--", *(paths or (".",)))
    sh(root, "git", "commit", "-qm", "base")
    return sh(root, "git", "rev-parse", "HEAD")


@dataclass
class Hook:
    """A local webhook's URL and every POST it got: (headers, body)."""

    url: str
    posts: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
