"""Launcher benchmark: prints figures, asserts nothing.

    .venv/bin/python bench/launch.py [--sizes 10 50 200] [--idle-seconds 30]
    .venv/bin/python bench/launch.py --slurm 50      # the same N agents as Slurm jobs, too
    .venv/bin/python bench/launch.py --sandbox [--sizes 10 50 200] [--rounds 2]

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

With ``--sandbox``: the same N no-op agents with ``sandbox: bubblewrap`` in the lane defaults
and without, interleaved (none, bwrap, then bwrap, none: ``--rounds`` 2 is one ABBA), then
the difference of the medians per agent; "start" is from an agent's `agent_launched` to its
command's first act (bwrap's own start shows there, in the pane, not in the launcher). Then
the floor: the same bwrap command line wave wrote into run.sh, started by hand (no wave, no
tmux; one at a time, then in wave's bursts) against the bare command, so bwrap's own cost
shows apart from wave's; and wave's planning of the sandbox, in-process on a lane of 200
agents: the plan, ``plan_sandbox``, ``prepare`` and the command line per agent, and run.sh
written with and without it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import statistics
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
# The same, its first act stamped too (a builtin: no process more than NOOP's)
STAMPED = 'echo "$EPOCHREALTIME" > "$WAVE_REPO/exit/$WAVE_AGENT_ID.start"; ' + NOOP


def at(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def pct(values: list[float], f: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, max(0, math.ceil(f * len(ordered)) - 1))] if ordered else 0.0
    )


def make_repo(
    root: Path,
    waves: int,
    agents: int,
    command: str,
    worktree: bool = False,
    slurm: bool = False,
    sandbox: bool = False,
) -> None:
    lane = root / "lanes" / "bench"
    (lane / "waves").mkdir(parents=True)
    extra = ("isolation: worktree\n" if worktree else "") + (
        "placement: {kind: slurm}\n" if slurm else ""
    )
    text = (
        LANE.replace("stagger_ms: 0}", "stagger_ms: 0, sandbox: bubblewrap}") if sandbox else LANE
    )
    (lane / "lane.yaml").write_text(text + extra)
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


def bench_launch(
    n: int, worktree: bool = False, slurm: bool = False, sandbox: bool | None = None
) -> dict[str, float]:
    """One wave of ``n`` no-op agents; its figures printed and returned. ``sandbox`` (True or
    False; None for the plain bench) runs the stamped command, with or without bubblewrap."""
    # Slurm jobs must see the repository: under the current folder, not a node-local /tmp.
    with tempfile.TemporaryDirectory(dir="." if slurm else None) as tmp:
        root = Path(tmp).resolve()
        command = NOOP if sandbox is None else STAMPED
        make_repo(root, 1, n, command, worktree, slurm, bool(sandbox))
        socket = f"wave-bench-{os.getpid()}-{n}"
        try:
            done = subprocess.run(
                wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
                env=env_for(socket),
                capture_output=True,
                text=True,
            )
        finally:
            kill_server(socket)
        evs = events(root)
        failed = [e["agent"] for e in evs if e["event"] == "agent_finished" and e["code"] != 0]
        if done.returncode != 0 and (sandbox is None or not failed):
            raise SystemExit(f"the wave of {n} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        started = at(next(e for e in evs if e["event"] == "wave_started")["at"])
        launches = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_launched"}
        finished = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_finished"}
        # In worktree mode an agent's end is noticed (agent_exited), then its work committed
        # (agent_finished): detection is the first, the commit step is shown on its own.
        noticed = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_exited"}
        noticed = {a: noticed.get(a, t) for a, t in finished.items()}
        exits = {a: root / "exit" / a for a in noticed if a not in failed}
        latency = [(noticed[a] - float(path.read_text())) * 1000 for a, path in exits.items()]
        commit = [(finished[a] - noticed[a]) * 1000 for a in finished]
        per_agent = (max(launches.values()) - started) / n * 1000
        mode = "slurm   " if slurm else "worktree" if worktree else "shared  "
        mode = {None: mode, False: "none    ", True: "bwrap   "}[sandbox]
        ended = at(next(e for e in evs if e["event"] in ("wave_completed", "wave_failed"))["at"])
        committed = f"   commit p50 {pct(commit, 0.5):6.1f} ms" if worktree else ""
        start = [  # agent_launched is written once tmux returned: a start can come before it
            (float((root / "exit" / f"{a}.start").read_text()) - t) * 1000
            for a, t in launches.items()
            if sandbox is not None and a not in failed
        ]
        begun = f"   start p50 {pct(start, 0.5):6.1f} ms" if start else ""
        print(
            f"N={n:<4} {mode} launch overhead {per_agent:6.1f} ms/agent   "
            f"detection p50 {pct(latency, 0.5):6.1f} ms  p99 {pct(latency, 0.99):6.1f} ms   "
            f"wave {ended - started:5.2f} s{committed}{begun}",
            flush=True,
        )
        if failed:  # figures above from the others; why the first failed, as its log says
            log = root / ".wave/bench/waves/wave-1/agents" / failed[0] / "output.log"
            said = (log.read_text().splitlines() or [""])[0] if log.exists() else ""
            print(f"       {len(failed)} of {n} agents failed; {failed[0]}: {said[:150]}")
        return {
            "launch": per_agent,
            "p50": pct(latency, 0.5),
            "p99": pct(latency, 0.99),
            "start": pct(start, 0.5),
            "wave": ended - started,
            "failed": len(failed),
        }


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
            # exit-empty off: a server with no session yet stays for the first burst (on a
            # loaded machine it could still be exiting when that burst came, and refuse it)
            server = ["start-server", ";", "set", "-g", "exit-empty", "off", ";"]
            subprocess.run([*tmux, *server, "set", "-g", "remain-on-exit", "on"])
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


FIGURES = ("launch", "p50", "p99", "start")


def ms(start: float, end: float) -> float:
    return (end - start) * 1000


def bench_sandbox(n: int, rounds: int) -> None:
    """N no-op agents with ``sandbox: bubblewrap`` and without, in the order none, bwrap,
    bwrap, none, ...; then the difference of the medians per agent."""
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for r in range(rounds):
        for sandbox in (False, True) if r % 2 == 0 else (True, False):
            runs[sandbox].append(bench_launch(n, sandbox=sandbox))
    med = {k: {f: statistics.median(run[f] for run in v) for f in FIGURES} for k, v in runs.items()}
    d = {f: med[True][f] - med[False][f] for f in FIGURES}
    lost = sum(int(run["failed"]) for run in runs[True])
    print(
        f"N={n:<4} bwrap - none, medians of {rounds}: launch overhead {d['launch']:+6.1f} ms/agent"
        f"   detection p50 {d['p50']:+6.1f} ms  p99 {d['p99']:+6.1f} ms   "
        f"start p50 {d['start']:+6.1f} ms"
        + (f"   ({lost} sandboxed agents failed)" if lost else ""),
        flush=True,
    )


def run_sh_argv(run_sh: Path) -> list[str]:
    """The argv a run.sh starts (its ``argv=(...)`` line, every word quoted)."""
    line = next(x for x in run_sh.read_text().splitlines() if x.startswith("argv=("))
    return shlex.split(line[len("argv=(") : -1])


def bench_bwrap_by_hand(starts: int) -> None:
    """The sandbox's own cost apart from wave's: the bwrap command line wave wrote into an
    agent's run.sh, started by hand (no wave, no tmux) against the bare command it wraps, and
    against bwrap with only its namespaces (the probe's options, the repository bound back
    in: none of wave's other binds); start to exit, one at a time and in bursts of as many
    at once as wave starts (on two cores a burst shows what the starts cost the machine),
    the three interleaved."""
    from wave_orchestrator.runtime.pool.loop import LAUNCH_BATCH
    from wave_orchestrator.sandbox.probe import PROBE_OPTIONS

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_repo(root, 1, 1, NOOP, sandbox=True)
        socket = f"wave-bench-hand-{os.getpid()}"
        try:  # a live launch: what the command line binds exists, as wave made it
            subprocess.run(
                wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
                env=env_for(socket),
                check=True,
                capture_output=True,
            )
        finally:
            kill_server(socket)
        argv = run_sh_argv(root / ".wave/bench/waves/wave-1/agents/A0/run.sh")
        bare = argv[argv.index("--") + 1 :]
        repo = ["--bind", str(root), str(root)]  # where the command writes: under /tmp
        sides = {
            "bare": bare,
            "bwrap, namespaces only": [argv[0], *PROBE_OPTIONS, *repo, "--", *bare],
            "bwrap, wave's command line": argv,
        }
        env = {**os.environ, "WAVE_REPO": str(root), "WAVE_AGENT_ID": "by-hand"}
        order = list(sides)
        for burst in (1, LAUNCH_BATCH):
            took: dict[str, list[float]] = {name: [] for name in sides}  # per start
            for i in range(starts // burst):
                for name in order if i % 2 == 0 else order[::-1]:
                    t0 = time.perf_counter()
                    started = [
                        subprocess.Popen(sides[name], env=env, cwd=root, stdin=subprocess.DEVNULL)
                        for _ in range(burst)
                    ]
                    if any(proc.wait() != 0 for proc in started):
                        raise SystemExit(f"by hand: {name} failed")
                    took[name].append((time.perf_counter() - t0) * 1000 / burst)
            base = statistics.median(took["bare"])
            how = "one at a time" if burst == 1 else f"{burst} at once"
            for name, values in took.items():
                more = statistics.median(values) - base
                print(
                    f"by hand, {starts} starts, {how:<13}: {name:<27} per start p50 "
                    f"{pct(values, 0.5):6.2f} ms  p99 {pct(values, 0.99):6.2f} ms"
                    + (f"   {more:+5.2f} ms" if name != "bare" else ""),
                    flush=True,
                )
        options = len(argv) - len(bare) - 2
        print(f"(wave's command line: {options} words of options for a no-op local agent)")


def bench_sandbox_planning(n: int) -> None:
    """wave's planning of the sandbox, in-process, on a lane of ``n`` agents: each agent's
    plan, its sandbox's parts (``plan_sandbox``, ``prepare``, the command line) and its
    prompt and run.sh written, with ``sandbox: bubblewrap`` and without; and what a launch
    pays once (the sandbox's modules, the probe's trial bwrap)."""
    from wave_orchestrator.definitions.loading.lane_loader import load_lane
    from wave_orchestrator.runtime.agent.confine import agent_env
    from wave_orchestrator.runtime.agent.materialize import materialize
    from wave_orchestrator.runtime.agent.plan import Planner
    from wave_orchestrator.state.layout import StateLayout

    t0 = time.perf_counter()
    from wave_orchestrator.sandbox.bwrap import build_binds, to_argv
    from wave_orchestrator.sandbox.plan import plan_sandbox, prepare
    from wave_orchestrator.sandbox.probe import probe

    t1 = time.perf_counter()
    found = probe()
    t2 = time.perf_counter()
    if not found.ok:
        raise SystemExit(found.message)
    for sandbox in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp).resolve()
            make_repo(root, 1, n, NOOP, sandbox=sandbox)
            lane = load_lane(root, "bench")
            planner = Planner(lane, StateLayout(lane.state_dir, lane.name, repo=lane.repo))
            wave = lane.waves[0]
            planned, written, parts = [], [], []
            for agent in wave.agents:
                a = time.perf_counter()
                launch = planner.plan(wave, agent)
                b = time.perf_counter()
                materialize(launch)
                c = time.perf_counter()
                planned.append(ms(a, b))
                written.append(ms(b, c))
                sb = launch.sandbox
                if sb is None:
                    continue
                argv, env = list(launch.command.argv), agent_env(launch.env)
                a = time.perf_counter()  # its parts again, as confine.Confinement.binds runs them
                plan = plan_sandbox(
                    sb.settings,
                    layout=sb.layout,
                    repo=sb.repo,
                    wave=sb.wave,
                    agent_id=sb.agent_id,
                    executor=launch.executor,
                    programs=[argv[0]],
                    desk=sb.desk,
                    env=env,
                )
                b = time.perf_counter()
                prepare(plan)
                c = time.perf_counter()
                to_argv(build_binds(plan), argv, sb.bwrap)
                parts.append((ms(a, b), ms(b, c), ms(c, time.perf_counter())))
        mode = "bwrap" if sandbox else "none "
        of_it = ""
        if parts:
            p50 = [statistics.median(x) for x in zip(*parts, strict=True)]
            of_it = (
                f"   of it: plan_sandbox {p50[0]:.3f}, prepare {p50[1]:.3f}, "
                f"command line {p50[2]:.3f} ms"
            )
        print(
            f"in-process, {n} agents, per agent p50 (mean): {mode} plan "
            f"{statistics.median(planned):.3f} ({statistics.mean(planned):.3f}) ms   "
            f"prompt + run.sh written {statistics.median(written):.3f} "
            f"({statistics.mean(written):.3f}) ms{of_it}",
            flush=True,
        )
    print(
        f"once a launch: the sandbox's modules imported {ms(t0, t1):.1f} ms, "
        f"the probe's trial bwrap {ms(t1, t2):.1f} ms"
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
    p.add_argument(
        "--sandbox",
        action="store_true",
        help="only: --sizes with sandbox: bubblewrap and without, bwrap by hand, the planning",
    )
    p.add_argument("--rounds", type=int, default=2, help="--sandbox: rounds of none, bwrap")
    p.add_argument("--hand-starts", type=int, default=100, help="--sandbox: starts by hand")
    p.add_argument("--plan-agents", type=int, default=200, help="--sandbox: the planned lane")
    args = p.parse_args()
    if args.sandbox:
        if args.rounds < 1:
            p.error("--rounds: at least 1")
        for n in args.sizes:
            bench_sandbox(n, args.rounds)
        bench_bwrap_by_hand(args.hand_starts)
        bench_sandbox_planning(args.plan_agents)
        return
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
