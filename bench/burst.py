"""Burst benchmark: prints figures, asserts nothing.

    .venv/bin/python bench/burst.py [--sizes 100 500]

N agents are started and wait on one FIFO; once every one runs, the FIFO is opened for
writing and all of them end at the same instant. For wave: from that release to each
`agent_finished` (p50, p99), and each agent's own exit stamp to its `agent_finished`. The
floor is the same N commands in sessions of a tmux server of their own, each writing its
status file atomically (printf + mv), released the same way: from the release to each status
file on disk, seen by one inotify-free scan loop.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch import at, events, kill_server, pct, wave_cmd

LANE = """
closure: {required_roles: []}
defaults: {executor: local, timeout_minutes: 10, max_retries_per_wave: 0, launch_stagger_ms: 0,
           max_running: 1000, stall_minutes: 0}
"""
WAIT = 'cat "$WAVE_REPO/gate" > /dev/null; date +%s.%N > "$WAVE_REPO/exit/$WAVE_AGENT_ID"'


def hold(gate: Path) -> int:
    """The bench's own end of the FIFO, held open while the agents start: each one's `cat`
    opens it at once and blocks reading (its descriptor shows in /proc)."""
    return os.open(gate, os.O_RDWR | os.O_NONBLOCK)


def release(fd: int) -> float:
    """Close the bench's end: every reader gets its end of file at this instant."""
    at_release = time.time()
    os.close(fd)
    return at_release


def readers(gate: Path) -> int:
    """How many processes hold the FIFO open (all agents wait on it before the release)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == str(gate):
                    count += 1
            except OSError:
                continue
    return count


def wait_for_readers(gate: Path, n: int, seconds: float = 300, alive=lambda: True) -> None:
    deadline = time.monotonic() + seconds
    while readers(gate) < n:
        if time.monotonic() > deadline or not alive():
            raise SystemExit(f"only {readers(gate)} of {n} agents reached the gate")
        time.sleep(0.2)


def bench_wave(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lane = root / "lanes" / "bench"
        (lane / "waves").mkdir(parents=True)
        (lane / "lane.yaml").write_text(LANE)
        rows = "\n".join(
            f"  - {{id: A{i}, prompt: p, executor: {{local: {{command: {json.dumps(WAIT)}}}}}}}"
            for i in range(n)
        )
        (lane / "waves" / "wave-1.yaml").write_text(f"agents:\n{rows}\n")
        (root / "exit").mkdir()
        gate = root / "gate"
        os.mkfifo(gate)
        held = hold(gate)
        socket = f"wave-burst-{os.getpid()}-{n}"
        env = {**os.environ, "WAVE_TMUX_SOCKET": socket}
        said = (root / "launcher.err").open("w")  # a pipe nobody reads would fill and block
        launcher = subprocess.Popen(
            wave_cmd(root, "launch", "--lane", "bench", "--no-dashboard"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=said,
        )
        try:
            wait_for_readers(gate, n, alive=lambda: launcher.poll() is None)
            released = release(held)
            launcher.wait(timeout=600)
        except SystemExit:
            launcher.kill()
            raise SystemExit((root / "launcher.err").read_text()[-2000:]) from None
        finally:
            launcher.kill()
            kill_server(socket)
        evs = events(root)
        finished = {e["agent"]: at(e["at"]) for e in evs if e["event"] == "agent_finished"}
        since_release = [(t - released) * 1000 for t in finished.values()]
        exits = {a: float((root / "exit" / a).read_text()) for a in finished}
        detection = [(t - exits[a]) * 1000 for a, t in finished.items()]
        print(
            f"N={n:<4} wave   release -> recorded  p50 {pct(since_release, 0.5):7.1f} ms  "
            f"p99 {pct(since_release, 0.99):7.1f} ms   (exit -> recorded p50 "
            f"{pct(detection, 0.5):6.1f} ms  p99 {pct(detection, 0.99):6.1f} ms)"
        )


def bench_floor(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gate = root / "gate"
        os.mkfifo(gate)
        held = hold(gate)
        (root / "st").mkdir()
        socket = f"wave-burst-floor-{os.getpid()}-{n}"
        tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
        try:
            subprocess.run([*tmux, "new-session", "-d", "-s", "keep"], check=True)
            for i in range(n):
                st = root / "st"
                body = (
                    f"cat {shlex.quote(str(gate))} >/dev/null; "
                    f"printf '%s' \"$(date +%s.%N)\" > {shlex.quote(str(st / f'.{i}'))}; "
                    f"mv {shlex.quote(str(st / f'.{i}'))} {shlex.quote(str(st / str(i)))}"
                )
                subprocess.run([*tmux, "new-session", "-d", "-s", f"s{i}", body], check=True)
            wait_for_readers(gate, n)
            released = release(held)
            seen: dict[str, float] = {}
            deadline = time.monotonic() + 120
            while len(seen) < n and time.monotonic() < deadline:
                now = time.time()
                for name in os.listdir(root / "st"):
                    if not name.startswith(".") and name not in seen:
                        seen[name] = now
        finally:
            kill_server(socket)
        since_release = [(t - released) * 1000 for t in seen.values()]
        print(
            f"N={n:<4} floor  release -> on disk   p50 {pct(since_release, 0.5):7.1f} ms  "
            f"p99 {pct(since_release, 0.99):7.1f} ms   (tmux sessions of its own, printf + mv)"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    args = p.parse_args()
    for n in args.sizes:
        bench_floor(n)
        bench_wave(n)


if __name__ == "__main__":
    main()
