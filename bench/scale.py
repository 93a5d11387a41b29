"""Scale benchmark: the agent pool's own cost at thousands of agents, by simulation; prints
figures, asserts nothing.

    .venv/bin/python bench/scale.py [--sizes 1000 5000 10000] [--spread 600] [--max-running N]
    .venv/bin/python bench/scale.py --sizes 10000 --profile      # where the loop's time goes

Each size runs in a fresh interpreter: N agents of one wave on the fake in-process placement of
tests/fakes (no tmux, no process), each ending at a random time (uniform over ``--spread``
simulated seconds, seeded), on a simulated clock: the loop never sleeps, so what is measured is
what it computes. The lane's files are real (prompts, run.sh, launch records, status files,
events.jsonl, the JSON log), on the temporary folder's disk.

Printed per size: the loop's CPU per launched agent (its launch turns: files written, the
placement asked) and per finished agent (everything else it did, over the agents that ended),
the simulator's own work (the fake agents writing their status files) left out; how many times
the loop waited; its peak RSS, and that peak above the interpreter's, per agent. The goal: the
cost per agent grows at most 1.5x from 1 000 to 10 000 agents (no turn walks every agent), and
memory per agent stays flat. Beside them, the floor: the same files and events for one agent
written and read with no loop around them.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fakes live beside the tests that use them


def rss_kb() -> int:
    """This process's resident memory now (kB)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def timed(owner: Any, name: str, spent: list[float]) -> None:
    """Count the CPU seconds spent in ``owner.name`` into ``spent[0]`` (nothing counted if the
    pool has no such method any more: its launch share then reads 0)."""
    inner: Callable[..., Any] | None = getattr(owner, name, None)
    if inner is None:
        return

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - began

    setattr(owner, name, wrapper)


def simulate(n: int, spread: float, max_running: int, seed: int, profile: bool) -> dict[str, Any]:
    """One size, in this process: the figures as a dict."""
    from fakes.clock import FakeClock, clock_installed
    from fakes.placement import Script
    from fakes.pool import make_pool, plan_runs

    from wave_orchestrator.state.lifecycle import AgentState
    from wave_orchestrator.state.logs import configure_logging

    base = rss_kb()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="wave-scale-") as tmp:
        root = Path(tmp)
        configure_logging(root / "launcher.log", quiet=True)  # as a launcher: JSON to a file
        runs = plan_runs(root, n, timeout_minutes=2 * spread / 60 + 1)
        scripts = {r.id: Script(runs_for=rng.uniform(1.0, spread)) for r in runs}
        clock = FakeClock()
        with clock_installed(clock):
            sim = make_pool(runs, clock, scripts, max_running=max_running, max_turns=10**8)
            launching, simulating = [0.0], [0.0]
            timed(sim.pool, "_launch", launching)
            timed(sim.watcher, "get", simulating)
            before = rss_kb()
            profiler = cProfile.Profile() if profile else None
            began = time.process_time()
            if profiler is not None:
                profiler.enable()
            took = sim.run()
            if profiler is not None:
                profiler.disable()
            cpu = time.process_time() - began
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        finished = sum(1 for r in runs if r.state is AgentState.COMPLETED)
        loop = cpu - simulating[0]
        figures: dict[str, Any] = {
            "n": n,
            "launched": len(sim.placement.starts),
            "finished": finished,
            "simulated_s": took,
            "waits": sim.watcher.turns,
            "loop_cpu_s": loop,
            "launch_ms": launching[0] / max(1, len(sim.placement.starts)) * 1000,
            "finish_ms": (loop - launching[0]) / max(1, finished) * 1000,
            "sim_cpu_s": simulating[0],
            "peak_mb": peak / 1024,
            "kb_per_agent": (peak - base) / n,
            "setup_kb_per_agent": (before - base) / n,
        }
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        figures["profile"] = out.getvalue()
    return figures


def floor(n: int) -> float:
    """ms per agent for the files and events one agent needs (its prompt and run.sh, launch
    record, status file read, launched and finished events), with no loop around them."""
    from fakes.pool import plan_runs

    from wave_orchestrator.runtime.agent.materialize import materialize
    from wave_orchestrator.state.events import EventLog
    from wave_orchestrator.state.fsutil import write_json_atomic
    from wave_orchestrator.state.status import read_status

    with tempfile.TemporaryDirectory(prefix="wave-scale-floor-") as tmp:
        runs = plan_runs(Path(tmp), n)
        events = EventLog(Path(tmp) / "events.jsonl")
        began = time.process_time()
        for run in runs:
            paths = run.launch.paths
            materialize(run.launch)
            write_json_atomic(paths.launch_record, run.launch_record())
            events.emit("agent_launched", 1, run.id, session=run.launch.session)
            write_json_atomic(paths.status, {"attempt": 1, "code": 0, "tries": 1})
            read_status(paths.status)
            events.emit("agent_finished", 1, run.id, status="success")
        spent = time.process_time() - began
    return spent / n * 1000


def child(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Run one size in a fresh interpreter (its memory is its own); its figures."""
    argv = [sys.executable, __file__, "--one", str(n)]
    argv += ["--spread", str(args.spread), "--seed", str(args.seed)]
    if args.max_running:
        argv += ["--max-running", str(args.max_running)]
    if args.profile:
        argv.append("--profile")
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    p.add_argument("--spread", type=float, default=600.0, help="simulated seconds agents end in")
    p.add_argument("--max-running", type=int, default=0, help="the cap (default: every agent)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", action="store_true", help="cProfile each size's loop")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        cap = args.max_running or args.one
        figures = simulate(args.one, args.spread, cap, args.seed, args.profile)
        print(json.dumps(figures))
        return
    first: dict[str, Any] | None = None
    for n in args.sizes:
        f = child(args, n)
        first = first or f
        growth = (f["launch_ms"] + f["finish_ms"]) / (first["launch_ms"] + first["finish_ms"])
        print(
            f"N={n:<6} loop CPU {f['loop_cpu_s']:7.2f} s: {f['launch_ms']:6.3f} ms/launched, "
            f"{f['finish_ms']:6.3f} ms/finished (x{growth:4.2f} of N={first['n']})   "
            f"{f['waits']:6d} waits over {f['simulated_s']:5.0f} simulated s   "
            f"peak RSS {f['peak_mb']:6.1f} MB, {f['kb_per_agent']:5.1f} kB/agent   "
            f"(simulator {f['sim_cpu_s']:5.2f} s, left out)"
        )
        if args.profile:
            print(f["profile"])
    print(f"floor    {floor(1000):6.3f} ms/agent: its files and events, no loop (N=1000)")


if __name__ == "__main__":
    main()
