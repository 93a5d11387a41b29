"""Coordination at fleet scale: prints figures, asserts nothing.

    .venv/bin/python bench/coordination.py [--agents 200] [--items 20000] [--rate 50]

Launches AGENTS agents (each sleeps a few seconds) twice, interleaved RUNS times: once with an
empty coordination log, once with ITEMS items already in it and a poster appending RATE items
a second (straight into the log, as `wave coord post` does, one line per write) for the whole
run. For each: the launch rate (agents launched per second, from `wave_started` to the last
`agent_launched`), the time to notice every agent's end, and the launcher's peak RSS
(`VmHWM`). The issue's bar: the loaded launch rate within 1.5x of the empty one, RSS < 60 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from launch import at, events, kill_server, make_repo, wave_cmd

SLEEP = "sleep 4"


def item(n: int, agents: int) -> dict[str, object]:
    """A plausible item: requests, evidence and acks between the wave's agents."""
    kind = random.choice(["evidence", "request", "ack", "decision", "handoff"])
    return {
        "id": f"c-{random.getrandbits(64):016x}",
        "wave": 1,
        "kind": kind,
        "agent": f"A{n % agents}",
        "summary": f"item {n}: {kind} about src/a{n % agents}/x.py",
        "status": "open",
        "priority": "normal",
        "source": "agent",
        "targets": [f"A{(n * 7) % agents}"] if kind == "request" else [],
        "artifacts": [f"src/a{(n * 3) % agents}/x.py"],
        "created_at": "2026-12-04T10:00:00.000Z",
        "updated_at": "2026-12-04T10:00:00.000Z",
    }


def post_until(path: Path, rate: float, agents: int, stop: threading.Event) -> int:
    """Append ``rate`` items a second, one write each, until ``stop``; how many."""
    n, start = 0, time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        while not stop.is_set():
            os.write(fd, (json.dumps(item(100_000 + n, agents)) + "\n").encode())
            n += 1
            stop.wait(max(0.0, start + n / rate - time.monotonic()))
    finally:
        os.close(fd)
    return n


def peak_rss_kb(pid: int, seen: list[int], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    seen.append(int(line.split()[1]))
        except OSError:
            return
        stop.wait(0.1)


def run(agents: int, items: int, rate: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        make_repo(root, 1, agents, SLEEP)
        log = root / ".wave" / "bench" / "coordination" / "wave-1.jsonl"
        log.parent.mkdir(parents=True)
        with log.open("w") as fh:
            fh.writelines(json.dumps(item(n, agents)) + "\n" for n in range(items))
        socket = f"wave-bench-coord-{os.getpid()}-{items}"
        stop, rss = threading.Event(), []
        env = {**os.environ, "WAVE_TMUX_SOCKET": socket}
        argv = wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard")
        quiet = subprocess.DEVNULL
        proc = subprocess.Popen(argv, env=env, stdout=quiet, stderr=quiet)
        watch = threading.Thread(target=peak_rss_kb, args=(proc.pid, rss, stop))
        watch.start()
        posted = [0]
        poster = threading.Thread(
            target=lambda: posted.__setitem__(0, post_until(log, rate, agents, stop))
        )
        if rate > 0:
            poster.start()
        try:
            proc.wait(timeout=900)
        finally:
            stop.set()
            watch.join()
            if poster.is_alive():
                poster.join()
            kill_server(socket)
        evs = events(root)
        began = at(next(e for e in evs if e["event"] == "wave_started")["at"])
        launched = [at(e["at"]) for e in evs if e["event"] == "agent_launched"]
        finished = [at(e["at"]) for e in evs if e["event"] == "agent_finished"]
        return {
            "launch_rate": len(launched) / max(1e-3, max(launched) - began),
            "all_done_s": max(finished) - began,
            "rss_mb": max(rss, default=0) / 1024,
            "posted": posted[0],
        }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--agents", type=int, default=200)
    p.add_argument("--items", type=int, default=20_000)
    p.add_argument("--rate", type=float, default=50)
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args()
    random.seed(1)
    for n in range(1, args.runs + 1):
        for items, rate in ((0, 0.0), (args.items, args.rate)):
            r = run(args.agents, items, rate)
            label = f"{items} items + {rate:g}/s" if items else "empty log"
            print(
                f"run {n}  {args.agents} agents, {label:<22} launch rate {r['launch_rate']:6.1f}"
                f" agents/s   all ended {r['all_done_s']:6.2f} s   launcher peak RSS "
                f"{r['rss_mb']:5.1f} MB" + (f"   ({r['posted']} posted)" if rate else ""),
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
