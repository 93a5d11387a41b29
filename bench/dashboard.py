"""Dashboard benchmark: prints figures, asserts nothing.

    .venv/bin/python bench/dashboard.py [--runs 7] [--agents 200] [--idle-seconds 10]

`wave dashboard` in a real 80x24 tmux pane of a private tmux server, against a wave of
``--agents`` agents: the time from starting the command to its first line on screen (the
interactive console, and ``--plain``), median and best of ``--runs``; then the console's CPU
seconds and RSS while it sits for ``--idle-seconds`` with the wave's file rewritten twice a
second (as a running launcher does).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

WAVE = [sys.executable, "-m", "wave_orchestrator"]


def make_state(root: Path, agents: int) -> None:
    (root / "lanes" / "main" / "waves").mkdir(parents=True)
    (root / "lanes" / "main" / "lane.yaml").write_text("closure: {required_roles: []}\n")
    folder = root / ".wave" / "main" / "waves" / "wave-1"
    folder.mkdir(parents=True)
    write_snapshot(folder / "dashboard.json", agents, 0)


def write_snapshot(path: Path, agents: int, tick: int) -> None:
    rows = [
        {
            "id": f"agent{i:03d}",
            "state": "coding",
            "attempt": 1,
            "tries": 1,
            "elapsed_ms": 1000 * (i + tick),
            "last_line": f"step {tick} of agent {i}",
        }
        for i in range(agents)
    ]
    data = {
        "lane": "main",
        "wave": 1,
        "title": "bench",
        "status": "running",
        "attempt": 1,
        "max_attempts": 1,
        "stages": [{"stage": "implementation", "state": "running"}],
        "agents": rows,
        "updated_at": "2026-12-05T00:00:00Z",
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def first_screen(tmux: list[str], root: Path, plain: bool) -> float:
    """Seconds from the pane's command starting to the dashboard's first line on screen."""
    argv = [*WAVE, "dashboard", "--lane", "main", "--repo", str(root), *(["--plain"] * plain)]
    name = f"d{uuid.uuid4().hex[:6]}"
    stamp = root / f"{name}.start"
    command = f"date +%s.%N > {stamp}; exec {shlex.join(argv)}"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", name, "-x", "80", "-y", "24", command], check=True
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            shown = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", f"={name}:"], capture_output=True, text=True
            ).stdout
            if "lane main  wave 1" in shown and "agent000" in shown:
                return time.time() - float(stamp.read_text())
            time.sleep(0.005)
        raise RuntimeError("the dashboard did not draw within 20 s")
    finally:
        subprocess.run([*tmux, "kill-session", "-t", f"={name}"], capture_output=True)


def idle(tmux: list[str], root: Path, agents: int, seconds: float) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of the console over ``seconds``, the file rewritten."""
    argv = [*WAVE, "dashboard", "--lane", "main", "--repo", str(root)]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "idle", "-x", "80", "-y", "24", shlex.join(argv)],
        check=True,
    )
    pid = int(
        subprocess.run(
            [*tmux, "display-message", "-p", "-t", "=idle:", "#{pane_pid}"],
            capture_output=True,
            text=True,
        ).stdout
    )
    time.sleep(2)  # started and drawn

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100

    before, peak = cpu(), 0
    path = root / ".wave" / "main" / "waves" / "wave-1" / "dashboard.json"
    end, tick = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        tick += 1
        write_snapshot(path, agents, tick)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                peak = max(peak, int(line.split()[1]))
        time.sleep(0.5)
    used = cpu() - before
    subprocess.run([*tmux, "kill-session", "-t", "=idle"], capture_output=True)
    return used, peak / 1024


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--agents", type=int, default=200)
    p.add_argument("--idle-seconds", type=float, default=10)
    args = p.parse_args()
    tmux = ["tmux", "-L", f"wave-bench-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_state(root, args.agents)
        # A session that stays for the whole run: killing the last measured session must not
        # end the server while the next one is being made ("server exited unexpectedly").
        keep = [*tmux, "new-session", "-d", "-s", "keep", "tail -f /dev/null"]
        subprocess.run(keep, check=True)
        try:
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.runs):  # interleaved: both see the same machine
                for plain in (False, True):
                    times[plain].append(first_screen(tmux, root, plain))
            print(f"wave dashboard, {args.agents} agents, 80x24 tmux pane, {args.runs} runs")
            for plain, label in ((False, "interactive console"), (True, "--plain")):
                got = times[plain]
                print(
                    f"  first screen, {label:<20} median {statistics.median(got):.3f} s"
                    f"  best {min(got):.3f} s"
                )
            used, rss = idle(tmux, root, args.agents, args.idle_seconds)
            print(
                f"  console, file rewritten every 0.5 s for {args.idle_seconds:g} s: "
                f"{used:.2f} s CPU, peak RSS {rss:.0f} MiB"
            )
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)


if __name__ == "__main__":
    main()
