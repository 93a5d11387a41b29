"""`wave stop`: stop a lane's launcher cleanly, or one of its agents."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError, WaveError
from ..names import AGENT_ID_RE
from ..runtime.control import stop_agent, stop_launcher
from ._common import add_lane, add_repo, repo_and_lane, state_layout


def register(sub: Any) -> None:
    p = sub.add_parser("stop", help="stop the running launcher (agents stopped, wave cancelled)")
    add_repo(p)
    add_lane(p)
    p.add_argument("--agent", metavar="ID", help="stop only this agent; it counts as cancelled")
    p.add_argument("--timeout", type=float, default=30, metavar="S", help="how long to wait (30)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
        return 0
    if not report.stopped:
        raise WaveError(f"launcher pid {report.launcher_pid} did not stop within {args.timeout:g}s")
    pid = report.launcher_pid
    print(f"stopped the launcher of lane {lane} (pid {pid}); the wave is recorded cancelled")
    return 0
