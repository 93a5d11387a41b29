"""Launcher benchmark: prints figures, asserts nothing.

    .venv/bin/python bench/launch.py [--sizes 10 50 200] [--idle-seconds 30]
    .venv/bin/python bench/launch.py --slurm 50      # the same N agents as Slurm jobs, too

For N no-op agents (stagger 0): per-agent launch overhead and completion-detection latency (the
agent's own exit → the `agent_finished` event), p50/p99, each followed by its floor (the same
sessions and wave's run.sh started by plain tmux calls, a bare watchdog observer: what wave
adds is the difference); then the same with `isolation: worktree`
(a `git worktree add` per agent, the commits and the merges): detection there ends at
`agent_exited`, and "commit" is from it to `agent_finished` (the work on its branch); then a
dependent's start from its dependencies' work. Then the launcher's CPU seconds and
peak RSS while 200 agents run, and while 200 agents are parked on a usage limit, and the
dry-run time of a lane of 20 waves x 10 agents.

With ``--slurm N``: N no-op agents placed as Slurm jobs (one sbatch each), next to the same N
locally. The cluster is the one SLURM_CONF names, else scripts/slurm-dev-cluster.sh starts one
(as root) for the run. Launch overhead there is the submission (sbatch) per agent; detection is
the agent's exit to the launcher's `agent_finished`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LANE = """
closure: {required_roles: []}
defaults: {executor: local, timeout_minutes: 5, max_retries_per_wave: 0, launch_stagger_ms: 0}
"""
NOOP = 'date +%s.%N > "$WAVE_REPO/exit/$WAVE_AGENT_ID"'


def at(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def pct(values: list[float], f: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, max(0, math.ceil(f * len(ordered)) - 1))] if ordered else 0.0
    )


def make_repo(
    root: Path, waves: int, agents: int, command: str, worktree: bool = False, slurm: bool = False
) -> None:
    lane = root / "lanes" / "bench"
    (lane / "waves").mkdir(parents=True)
    extra = ("isolation: worktree\n" if worktree else "") + (
        "placement: {kind: slurm}\n" if slurm else ""
    )
    (lane / "lane.yaml").write_text(LANE + extra)
    (root / "exit").mkdir()
    for w in range(1, waves + 1):
        cmd = json.dumps(command)
        rows = "\n".join(
            f"  - {{id: A{i}, prompt: noop, executor: {{local: {{command: {cmd}}}}}}}"
            for i in range(agents)
        )
        (lane / "waves" / f"wave-{w}.yaml").write_text(f"agents:\n{rows}\n")
    if worktree:
        (root / ".gitignore").write_text(".wave/\nexit/\n")
        git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@localhost"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "bench"], check=True)


def wave_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "wave_orchestrator", *args, "--repo", str(root)]


def env_for(socket: str) -> dict[str, str]:
    return {**os.environ, "WAVE_TMUX_SOCKET": socket}


def kill_server(socket: str) -> None:
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def events(root: Path) -> list[dict[str, Any]]:
    path = root / ".wave" / "bench" / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def bench_launch(n: int, worktree: bool = False, slurm: bool = False) -> None:
    # Slurm jobs must see the repository: under the current folder, not a node-local /tmp.
    with tempfile.TemporaryDirectory(dir="." if slurm else None) as tmp:
        root = Path(tmp).resolve()
        make_repo(root, 1, n, NOOP, worktree, slurm)
        socket = f"wave-bench-{os.getpid()}-{n}"
        try:
            subprocess.run(
                wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
                env=env_for(socket),
                check=True,
                capture_output=True,
            )
        finally:
            kill_server(socket)
        evs = events(root)
        started = at(next(e for e in evs if e["event"] == "wave_started")["at"])
        launched = [at(e["at"]) for e in evs if e["event"] == "agent_launched"]
        finished = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_finished"}
        # In worktree mode an agent's end is noticed (agent_exited), then its work committed
        # (agent_finished): detection is the first, the commit step is shown on its own.
        noticed = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_exited"}
        noticed = {a: noticed.get(a, t) for a, t in finished.items()}
        latency = [(noticed[a] - float((root / "exit" / a).read_text())) * 1000 for a in noticed]
        commit = [(finished[a] - noticed[a]) * 1000 for a in finished]
        per_agent = (max(launched) - started) / n * 1000
        mode = "slurm   " if slurm else "worktree" if worktree else "shared  "
        ended = at(next(e for e in evs if e["event"] == "wave_completed")["at"])
        committed = f"   commit p50 {pct(commit, 0.5):6.1f} ms" if worktree else ""
        print(
            f"N={n:<4} {mode} launch overhead {per_agent:6.1f} ms/agent   "
            f"detection p50 {pct(latency, 0.5):6.1f} ms  p99 {pct(latency, 0.99):6.1f} ms   "
            f"wave {ended - started:5.2f} s{committed}"
        )


def bench_floor(n: int) -> None:
    """The floor under wave's figures, measured beside them: the same N sessions running
    wave's own run.sh (from a dry run of the same lane), started by plain tmux calls in the
    bursts wave makes, and a bare watchdog observer noting each status file. None of the
    launcher's own work (prompts, records, events, the dashboard, budgets, reaping) is in it."""
    from watchdog.events import FileCreatedEvent, FileMovedEvent, FileSystemEventHandler
    from watchdog.observers import Observer
    from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

    from wave_orchestrator.runtime.pool.loop import LAUNCH_BATCH

    InotifyMoveEventGrouper.delay = 0  # as wave's watcher sets it
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_repo(root, 1, n, NOOP)
        dry = wave_cmd(root, "launch", "--lane", "bench", "--dry-run")
        subprocess.run(dry, check=True, capture_output=True)
        agents = root / ".wave" / "bench" / "dry-run" / "waves" / "wave-1" / "agents"
        seen: dict[str, float] = {}

        class Seen(FileSystemEventHandler):
            def on_any_event(self, event: object) -> None:
                path = getattr(event, "dest_path", "") or getattr(event, "src_path", "")
                if str(path).endswith("/status.json"):
                    seen.setdefault(Path(str(path)).parent.name, time.time())

        observer = Observer()
        watched = [FileCreatedEvent, FileMovedEvent]
        observer.schedule(Seen(), str(agents), recursive=True, event_filter=watched)
        observer.start()
        socket = f"wave-bench-floor-{os.getpid()}-{n}"
        tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
        ids = [f"A{i}" for i in range(n)]
        try:
            subprocess.run([*tmux, "start-server", ";", "set", "-g", "remain-on-exit", "on"])
            started = time.time()
            for at in range(0, n, LAUNCH_BATCH):  # as wave's start_sessions: one call a burst
                args: list[str] = []
                for agent in ids[at : at + LAUNCH_BATCH]:
                    session = ["-s", agent, "-x", "200", "-y", "50", "-c", str(root)]
                    script = str(agents / agent / "run.sh")
                    args += [";", "new-session", "-d", "-P", "-F", "#{pane_pid}", *session]
                    args += ["bash", script]
                subprocess.run([*tmux, *args[1:]], check=True, capture_output=True)
            launched = time.time()
            while len(seen) < n and time.time() < launched + 60:
                time.sleep(0.01)
        finally:
            kill_server(socket)
            observer.stop()
        latency = [(t - float((root / "exit" / a).read_text())) * 1000 for a, t in seen.items()]
        print(
            f"N={n:<4} floor    launch overhead {(launched - started) / n * 1000:6.1f} ms/agent   "
            f"detection p50 {pct(latency, 0.5):6.1f} ms  p99 {pct(latency, 0.99):6.1f} ms   "
            f"(the same sessions and run.sh, no launcher; {len(seen)}/{n} seen)"
        )


def bench_chain(deps: int) -> None:
    """A dependent's start-up in worktree mode: from its last dependency's finish (work
    committed) to its own launch, which makes its branch with each dependency merged in."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_repo(root, 1, deps, 'echo "$WAVE_AGENT_ID" > "$WAVE_AGENT_ID.txt"', worktree=True)
        wave = root / "lanes" / "bench" / "waves" / "wave-1.yaml"
        needs = ", ".join(f"A{i}" for i in range(deps))
        with wave.open("a") as fh:
            fh.write(
                f"  - {{id: D, prompt: noop, depends_on: [{needs}], "
                "executor: {local: {command: 'ls > seen.txt'}}}\n"
            )
        git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@localhost"]
        subprocess.run([*git, "commit", "-qam", "chain"], check=True)
        socket = f"wave-bench-chain-{os.getpid()}-{deps}"
        try:
            subprocess.run(
                wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
                env=env_for(socket),
                check=True,
                capture_output=True,
            )
        finally:
            kill_server(socket)
        evs = events(root)
        last_dep = max(
            at(e["at"]) for e in evs if e["event"] == "agent_finished" and e["agent"] != "D"
        )
        launched = next(
            at(e["at"]) for e in evs if e["event"] == "agent_launched" and e["agent"] == "D"
        )
        print(
            f"dependent of {deps:<3} agents: last dependency done -> its launch "
            f"{(launched - last_dep) * 1000:6.1f} ms (worktree add + {deps} merge(s))"
        )


def proc_cpu_rss(pid: int) -> tuple[float, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    hwm = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM")
    )
    return cpu, hwm


PARKED_CLAUDE = """#!/usr/bin/env bash
cat > /dev/null
echo "You've hit your session limit · resets in 2h"
exit 1
"""


def bench_idle(n: int, seconds: float, parked: bool = False) -> None:
    """The launcher's CPU while ``n`` agents run (sleep), or while they are parked on a usage
    limit (``parked``: a stand-in claude that meets one whose reset is 2 hours away)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, 1, n, "sleep 600")
        env = env_for(socket := f"wave-bench-idle-{os.getpid()}")
        if parked:
            (root / "bin").mkdir()
            (root / "bin" / "claude").write_text(PARKED_CLAUDE)
            (root / "bin" / "claude").chmod(0o755)
            env["PATH"] = f"{root / 'bin'}:{env['PATH']}"
            rows = "".join(  # an account each: every one starts, then waits for its reset
                f"  - {{id: A{i}, prompt: p, executor: {{id: claude, env: "
                f"{{CLAUDE_CONFIG_DIR: {root}/c{i}}}}}}}\n"
                for i in range(n)
            )
            (root / "lanes/bench/waves/wave-1.yaml").write_text("agents:\n" + rows)
        proc = subprocess.Popen(
            wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        waited = "agent_limited" if parked else "agent_launched"
        try:
            deadline = time.monotonic() + 120
            while sum(e["event"] == waited for e in events(root)) < n:
                if time.monotonic() > deadline:
                    raise SystemExit(f"agents did not all reach {waited}")
                time.sleep(0.2)
            time.sleep(2)  # let launch-time work settle
            cpu0, _ = proc_cpu_rss(proc.pid)
            time.sleep(seconds)
            cpu1, hwm = proc_cpu_rss(proc.pid)
            used = cpu1 - cpu0
            print(
                f"idle with {n} {'parked' if parked else 'running'} agents for {seconds:g}s: "
                f"launcher CPU {used:.2f}s "
                f"({used / seconds * 100:.2f}% of a core), peak RSS {hwm / 1024:.1f} MB"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            kill_server(socket)


def bench_dry_run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, 20, 10, "true")
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(
                wave_cmd(root, "launch", "--lane", "bench", "--dry-run"),
                check=True,
                capture_output=True,
                env=env_for("wave-bench-unused"),
            )
            runs.append(time.perf_counter() - t0)
        print(
            f"dry run, 20 waves x 10 agents: best {min(runs):.3f}s of 3 (whole command, "
            "interpreter start included)"
        )


def dev_cluster(action: str, folder: str) -> str:
    """scripts/slurm-dev-cluster.sh ``action`` on ``folder``; returns what it printed."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "slurm-dev-cluster.sh"
    env = {**os.environ, "WAVE_SLURM_DIR": folder}
    done = subprocess.run(
        ["bash", str(script), action], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"slurm-dev-cluster.sh {action} failed:\n{done.stderr}")
    return done.stdout


def bench_slurm(n: int) -> None:
    """N no-op agents as Slurm jobs, next to the same N locally."""
    folder = None
    if not os.environ.get("SLURM_CONF"):
        folder = tempfile.mkdtemp(prefix="wave-bench-slurm-")
        dev_cluster("start", folder)
        os.environ["SLURM_CONF"] = str(Path(folder) / "slurm.conf")
    try:
        bench_launch(n)
        bench_launch(n, slurm=True)
    finally:
        if folder is not None:
            dev_cluster("stop", folder)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    p.add_argument("--idle-seconds", type=float, default=30)
    p.add_argument("--idle-agents", type=int, default=200)
    p.add_argument("--worktree-sizes", type=int, nargs="*", default=[10, 50])
    p.add_argument("--chain-sizes", type=int, nargs="*", default=[1, 5, 20])
    p.add_argument("--slurm", type=int, metavar="N", help="only: N agents on Slurm and locally")
    p.add_argument(
        "--idle-only", action="store_true", help="only: idle cost with agents running, then parked"
    )
    args = p.parse_args()
    if args.idle_only:
        bench_idle(args.idle_agents, args.idle_seconds)
        bench_idle(args.idle_agents, args.idle_seconds, parked=True)
        return
    if args.slurm:
        bench_slurm(args.slurm)
        return
    for n in args.sizes:
        bench_launch(n)
        bench_floor(n)
    for n in args.worktree_sizes:
        bench_launch(n, worktree=True)
    for n in args.chain_sizes:
        bench_chain(n)
    if args.idle_seconds > 0:  # --idle-seconds 0: no idle figures
        bench_idle(args.idle_agents, args.idle_seconds)
        bench_idle(args.idle_agents, args.idle_seconds, parked=True)
    bench_dry_run()


if __name__ == "__main__":
    main()
