"""`wave stop`: stop a lane's launcher cleanly, or one of its agents."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError, WaveError
from ..names import AGENT_ID_RE
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, seconds, state_layout
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "stop",
        "stop the running launcher (agents stopped, wave cancelled)",
        "Ask the lane's launcher to stop: it ends its agents (SIGTERM, then SIGKILL after a "
        "grace period), records the wave cancelled and releases the lane. With no launcher "
        "alive, agent sessions a dead one left are stopped. --agent stops one agent only; it "
        "counts as cancelled and the wave goes on.",
        [
            ("wave stop", "stop the lane's launcher and its agents"),
            ("wave stop --agent A3", "stop one agent, the wave goes on"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(
        p, "--agent", metavar="ID", help="stop only this agent; it counts as cancelled"
    )
    p.add_argument("--timeout", type=seconds, default=30, metavar="S", help="how long to wait (30)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..runtime.launch.control import stop_agent, stop_launcher

    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if args.agent:
        if not AGENT_ID_RE.fullmatch(args.agent):
            raise UsageError(f"invalid agent id {args.agent!r}")
        wave = stop_agent(layout, repo, args.agent)
        print(f"stopped agent {args.agent} of wave {wave}: it counts as cancelled")
        return 0
    report = stop_launcher(layout, repo, args.timeout)
    if report.launcher_pid is None:
        if report.orphans:
            print(
                f"no launcher was alive; stopped {len(report.orphans)} agent session(s) it left: "
                + ", ".join(report.orphans)
            )
        else:
            print(f"no launcher is running on lane {lane}")
        if report.removed:  # ended agents whose sessions were kept for reading
            print(
                f"removed {len(report.removed)} ended agent session(s) kept for inspection "
                "(--keep-sessions): " + ", ".join(report.removed)
            )
        return 0
    if not report.stopped:
        raise WaveError(f"launcher pid {report.launcher_pid} did not stop within {args.timeout:g}s")
    pid = report.launcher_pid
    print(f"stopped the launcher of lane {lane} (pid {pid}); the wave is recorded cancelled")
    return 0
