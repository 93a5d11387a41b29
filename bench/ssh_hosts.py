"""SSH hosts benchmark: a wave of no-op agents on two SSH hosts next to the same wave run
locally. Prints figures, asserts nothing.

    .venv/bin/python bench/ssh_hosts.py [--agents 8] [--runs 3] [--record]

Two hosts are real OpenSSH daemons on 127.0.0.1 (scripts/ssh-hosts.sh, in a temp folder,
always stopped at the end). One git repository holds, for each run, two lanes over the same
wave of N no-op agents (``isolation: worktree``, executor local, command ``true``): one
``placement: local``, one ``placement: ssh`` on both hosts with ``max_agents`` N each (no agent
waits for a slot). Fresh lanes per run: no state, branch or worktree of one run is met by the
next. Launches alternate local, ssh, local, ssh...; each is ``wave launch --lane X
--no-dashboard``, timed from outside (the interpreter's start included).

Per launch: the wall time (and per agent); launch per agent, (last ``agent_launched`` - the
wave's ``wave_started``) / N, and the median gap between consecutive launches; detection, from
the ``finished_at`` the agent's wrapper wrote into its status.json (on the host, for ssh: the
same clock, the hosts are this machine) to the launcher's ``agent_exited`` (its end noticed)
and to ``agent_finished`` (its work committed and, for ssh, fetched back), median and max over
the agents. Then the floor: ``ssh host1 true`` on a new connection, and over a ControlMaster
connection already open, median of 10 each. Medians (min-max) over the runs.

``--record`` rewrites the text between ``<!-- ssh:begin -->`` and ``<!-- ssh:end -->`` in
docs/performance.md with the table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ssh-hosts.sh"
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- ssh:begin -->", "<!-- ssh:end -->"
COMMON = (
    "closure: {required_roles: []}\n"
    "defaults: {executor: local, timeout_minutes: 5, launch_stagger_ms: 0, "
    "max_retries_per_wave: 0}\n"
    "isolation: worktree\n"
)
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=b@localhost"]


def at(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def lane_yaml(kind: str, hosts: Path, n: int) -> str:
    if kind == "local":
        return COMMON + "placement: local\n"
    rows = "".join(
        f"    - {{name: h{i}, destination: host{i}, workdir: {hosts}/host{i}/workdir, "
        f"max_agents: {n}}}\n"
        for i in (1, 2)
    )
    return COMMON + f"placement: ssh\nssh:\n  config: {hosts}/ssh_config\n  hosts:\n{rows}"


def make_repo(root: Path, hosts: Path, n: int, runs: int) -> None:
    """One repository with the lanes of every run (``local-1``, ``ssh-1``, ...), committed."""
    wave = "agents:\n" + "".join(
        f"  - {{id: A{i}, prompt: noop, executor: {{local: {{command: 'true'}}}}}}\n"
        for i in range(n)
    )
    for run in range(1, runs + 1):
        for kind in ("local", "ssh"):
            lane = root / "lanes" / f"{kind}-{run}"
            (lane / "waves").mkdir(parents=True)
            (lane / "lane.yaml").write_text(lane_yaml(kind, hosts, n))
            (lane / "waves" / "wave-1.yaml").write_text(wave)
    (root / ".gitignore").write_text(".wave/\n")
    git = [*GIT, "-C", str(root)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], check=True)


def launch(root: Path, lane: str, n: int) -> dict[str, float]:
    """One launch of ``lane``; its figures, from outside and from its own records."""
    socket = f"wave-bench-ssh-{os.getpid()}-{lane}"
    env = {**os.environ, "WAVE_TMUX_SOCKET": socket}
    for key in ("WAVE_STATE_DIR", "WAVE_REPO", "TMUX"):
        env.pop(key, None)
    command = [sys.executable, "-P", "-m", "wave_orchestrator", "launch", "--lane", lane]
    began = time.time()
    try:
        done = subprocess.run(
            [*command, "--no-dashboard", "--repo", str(root)],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        folder = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (folder / socket).unlink(missing_ok=True)  # a killed server leaves its socket file
    wall = time.time() - began
    if done.returncode != 0:
        raise SystemExit(f"{lane} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    state = root / ".wave" / lane
    evs = [json.loads(x) for x in (state / "events.jsonl").read_text().splitlines() if x]
    started = at(next(e["at"] for e in evs if e["event"] == "wave_started"))
    launched = sorted(at(e["at"]) for e in evs if e["event"] == "agent_launched")
    finished = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_finished"}
    exited = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_exited"}
    agents = state / "waves" / "wave-1" / "agents"
    wrote = {
        a: at(json.loads((agents / a / "status.json").read_text())["finished_at"]) for a in finished
    }
    if len(launched) != n or len(wrote) != n:
        raise SystemExit(f"{lane}: {len(launched)} launched, {len(wrote)} finished of {n}")
    noticed = [(exited.get(a, t) - wrote[a]) * 1000 for a, t in finished.items()]
    back = [(finished[a] - wrote[a]) * 1000 for a in finished]
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(launched)]
    ended = at(next(e["at"] for e in evs if e["event"] in ("wave_completed", "wave_failed")))
    return {
        "wall": wall,
        "wall_per_agent": wall / n * 1000,
        "wave": ended - started,
        "first_launch": (launched[0] - started) * 1000,
        "launch_per_agent": (launched[-1] - started) / n * 1000,
        "launch_gap": statistics.median(gaps) if gaps else 0.0,
        "noticed_p50": statistics.median(noticed),
        "noticed_max": max(noticed),
        "finished_p50": statistics.median(back),
        "finished_max": max(back),
    }


def ssh_floor(hosts: Path, times: int = 10) -> tuple[float, float]:
    """``ssh host1 true``: medians (ms) on a new connection each, and over a shared one."""
    config = ["ssh", "-F", str(hosts / "ssh_config")]

    def timed(argv: list[str]) -> float:
        began = time.perf_counter()
        subprocess.run([*argv, "host1", "true"], check=True, stdin=subprocess.DEVNULL)
        return (time.perf_counter() - began) * 1000

    fresh = [timed(config) for _ in range(times)]
    shared = [*config, "-o", "ControlMaster=auto", "-o", f"ControlPath={hosts}/cm-%C"]
    shared += ["-o", "ControlPersist=30"]
    try:
        timed(shared)  # opens the master; the calls after reuse it
        reused = [timed(shared) for _ in range(times)]
    finally:
        subprocess.run([*shared, "-O", "exit", "host1"], capture_output=True)
    return statistics.median(fresh), statistics.median(reused)


def spread(values: list[float], fmt: str) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, fmt)
    return f"{format(med, fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


ROWS = (
    ("wall", "the launch, wall (s)", ".2f"),
    ("wall_per_agent", "the launch, wall per agent (ms)", ".0f"),
    ("wave", "the wave: wave_started -> wave_completed (s)", ".2f"),
    ("first_launch", "wave start -> first agent_launched (ms)", ".0f"),
    ("launch_per_agent", "launch per agent: last launch - wave start, / N (ms)", ".1f"),
    ("launch_gap", "gap between two `agent_launched` events, median (ms)", ".1f"),
    ("noticed_p50", "detection: status written -> agent_exited, median (ms)", ".0f"),
    ("noticed_max", "detection: status written -> agent_exited, max (ms)", ".0f"),
    ("finished_p50", "status written -> agent_finished (work back), median (ms)", ".0f"),
    ("finished_max", "status written -> agent_finished (work back), max (ms)", ".0f"),
)


def table(results: dict[str, list[dict[str, float]]], floor: tuple[float, float]) -> str:
    lines = ["| figure | local | ssh (2 hosts) |", "|---|---|---|"]
    for key, label, fmt in ROWS:
        cells = [spread([r[key] for r in results[kind]], fmt) for kind in ("local", "ssh")]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    lines.append(f"| floor: `ssh host1 true`, new connection (ms) | | {floor[0]:.1f} |")
    lines.append(f"| floor: `ssh host1 true`, over a ControlMaster (ms) | | {floor[1]:.1f} |")
    return "\n".join(lines)


def record(text: str) -> None:
    doc = DOC.read_text()
    head, found, rest = doc.partition(BEGIN)
    _, ended, tail = rest.partition(END)
    if not (found and ended):
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} section to rewrite")
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def leftovers(hosts: Path, repo: Path) -> list[str]:
    """What a launch left: a tmux server on a host's socket, a launcher's shared connection."""
    from wave_orchestrator.state.layout import repo_tag

    left = []
    shared = subprocess.run(
        ["pgrep", "-af", f"/tmp/wave-ssh-{repo_tag(repo)}-"], text=True, capture_output=True
    )
    left += [f"shared connection: {line}" for line in shared.stdout.splitlines()]
    for socket in hosts.glob("host*/workdir/*/tmux"):
        listed = subprocess.run(["tmux", "-S", str(socket), "ls"], capture_output=True)
        if listed.returncode == 0:
            left.append(f"tmux server on {socket}")
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
    return left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="rewrite docs/performance.md")
    args = parser.parse_args()
    n, runs = args.agents, args.runs
    tmp = Path(tempfile.mkdtemp(prefix="wave-bench-ssh-", dir="/tmp"))
    hosts, repo = tmp / "hosts", tmp / "repo"
    results: dict[str, list[dict[str, float]]] = {"local": [], "ssh": []}
    left: list[str] = []
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", str(hosts), "2"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        if started.returncode != 0:
            raise SystemExit(f"scripts/ssh-hosts.sh failed:\n{started.stderr}")
        repo.mkdir()
        make_repo(repo, hosts, n, runs)
        for run in range(1, runs + 1):
            for kind in ("local", "ssh"):
                got = launch(repo, f"{kind}-{run}", n)
                results[kind].append(got)
                print(f"run {run} {kind:5} " + "  ".join(f"{k} {v:.1f}" for k, v in got.items()))
        floor = ssh_floor(hosts)
        left = leftovers(hosts, repo)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(hosts)], timeout=60, check=False)
        for socket in hosts.glob("host*/workdir/*/tmux"):
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    stayed = subprocess.run(["pgrep", "-af", str(tmp)], text=True, capture_output=True).stdout
    left += [f"process: {line}" for line in stayed.splitlines()]
    load = os.getloadavg()[0]
    text = (
        f"N = {n} no-op agents (`true`, `isolation: worktree`), {runs} runs of each, "
        f"interleaved; median (min-max) over the runs; load average {load:.1f} at the end.\n\n"
        + table(results, floor)
    )
    print(text)
    if left:
        print("left running: " + "; ".join(left))
    if args.record:
        record(text)


if __name__ == "__main__":
    main()
