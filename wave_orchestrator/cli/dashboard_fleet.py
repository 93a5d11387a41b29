"""What the interactive dashboard's keys do, as the commands do it: each key runs `wave ...` in a
child process exactly as a person would type it, so a key and a command are one behaviour (and
one set of tests), and nothing a command does can disturb the app's terminal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..dashboard.fleet import Done
from ..self_command import wave_argv
from ..state.layout import StateLayout

OUTPUT_LIMIT = 4 * 1024 * 1024  # what the app takes of a command's output (a diff can be huge)
STARTS_A_LAUNCHER = frozenset({"launch", "rerun"})


class CommandFleet:
    def __init__(self, repo: Path, lane: str, layout: StateLayout) -> None:
        self.repo, self.lane, self.layout = repo, lane, layout
        self._usage_seen: tuple[int, int, int] | None = None
        self._usage: dict[str, tuple[int | None, float | None]] = {}

    def command(self, argv: list[str]) -> Done:
        full = wave_argv(*argv, "--lane", self.lane, "--repo", str(self.repo))
        # The app shows the words, not escapes (its output is a pipe besides); but a command
        # that starts a launcher hands its environment to the launcher and every agent, which
        # must get what a launch typed at a terminal gets.
        starts = argv[0] in STARTS_A_LAUNCHER
        env = dict(os.environ) if starts else {**os.environ, "NO_COLOR": "1"}
        pipe, devnull = subprocess.PIPE, subprocess.DEVNULL
        with subprocess.Popen(
            full, cwd=self.repo, env=env, stdin=devnull, stdout=pipe, stderr=subprocess.STDOUT
        ) as proc:
            assert proc.stdout is not None
            out = proc.stdout.read(OUTPUT_LIMIT + 1)
            if len(out) > OUTPUT_LIMIT:  # the rest is not read: the command is ended
                proc.kill()
                out = out[:OUTPUT_LIMIT] + b"\n... (cut at 4 MiB: run the command to see it all)"
            code = proc.wait()
        return Done(code, out.decode("utf-8", "replace"))

    def attach(self, argv: list[str]) -> Done:
        """tmux (or srun) on this terminal until the person detaches; TMUX unset, as for any
        attach from inside a tmux of one's own (the lane's server is another server).

        A tmux client draws on the terminal of its input and prints only its
        ``[detached (from session …)]`` line on its output: that output is taken here, or the
        line would stay on the person's terminal after the console quits. srun's output is
        the agent's: it keeps the terminal."""
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        quiet = subprocess.PIPE if os.path.basename(argv[0]) == "tmux" else None
        try:
            done = subprocess.run(argv, env=env, stdout=quiet, stderr=subprocess.PIPE, check=False)
        except OSError as exc:
            return Done(127, f"{argv[0]}: {exc.strerror}")
        return Done(done.returncode, done.stderr.decode("utf-8", "replace")[-2000:])

    def launcher_alive(self) -> bool:
        from ..state.lock import live_lock

        return live_lock(self.layout.lock) is not None

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        """The tokens and cost of each agent's last recorded attempt of ``wave``; read again
        only when metrics.jsonl changed."""
        from ..metrics.report import read_records, record_cost, record_tokens

        path = self.layout.metrics
        try:
            st = path.stat()
            seen = (wave, st.st_mtime_ns, st.st_size)
        except OSError:
            return {}
        if seen != self._usage_seen:
            self._usage_seen = seen
            records = [r for r in read_records([path]) if r.get("wave") == wave]
            self._usage = {str(r["agent"]): (record_tokens(r), record_cost(r)) for r in records}
        return self._usage


class CommandLanes:
    """The repository's lanes for the console's `L`: how each stands, read as `wave lanes`
    reads it; a lane picked gets its own layout and fleet. Nothing printed (a lane.yaml that
    cannot be read keeps the default state dir, as `wave status` does, and says so in the list),
    for the console owns the terminal."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo

    def lanes(self) -> list[tuple[str, str]]:
        from ..definitions.repository.lanes import list_lanes
        from ..errors import WaveError
        from ..state.lock import live_lock

        rows = []
        for name in list_lanes(self.repo):
            try:
                layout, problem = self._layout(name)
                running = live_lock(layout.lock) is not None
            except (WaveError, OSError):  # its state folder is a link, a file, unreadable
                rows.append((name, "state folder unusable: see wave status --lane " + name))
                continue
            said = "launcher running" if running else _last_result(layout)
            rows.append((name, f"{said}  (lane.yaml unreadable)" if problem else said))
        return rows

    def open(self, lane: str) -> tuple[StateLayout, CommandFleet]:
        layout, _ = self._layout(lane)
        return layout, CommandFleet(self.repo, lane, layout)

    def _layout(self, lane: str) -> tuple[StateLayout, bool]:
        from ..definitions.repository.lanes import read_lane_header
        from ..state.layout import resolve_state_dir

        header = read_lane_header(self.repo, lane)
        root = resolve_state_dir(self.repo, lane, header.state_dir)
        return StateLayout(root, lane, repo=self.repo), header.problem is not None


def _last_result(layout: StateLayout) -> str:
    """``wave 2 completed``, as `wave lanes` says it; ``never run`` before any wave."""
    from ..errors import WaveError
    from ..state.run_state import RunState

    try:
        history = RunState(layout.run_state, layout.lane).data["history"]
        last = history[-1] if history else None
        return f"wave {last['wave']} {last['to']}" if last else "never run"
    except (OSError, ValueError, WaveError, KeyError, TypeError, IndexError):
        return "state unreadable"
