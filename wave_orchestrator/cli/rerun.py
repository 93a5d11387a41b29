"""`wave rerun AGENT`: run one agent of a finished wave again, then the wave's closure sweep:
the next run of the wave reuses every other agent's finished work (runtime.reuse), and the
agent's prompt says a person asked for it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, state_layout
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "rerun",
        "run one agent of the last wave again, then the closure sweep",
        "Run AGENT of its latest wave (or --wave N) again, with --reason in its prompt under "
        "'why you are running again'. The wave runs again with every other implementation "
        "agent's finished work reused, then its closure stages. It starts a launcher: "
        "in the foreground, or with --detach in the background. While a launcher runs the "
        "lane it exits 2: stop that launcher first (`wave stop`), or steer the running agent "
        "with `wave comment`.",
        [
            ("wave rerun A1 --reason 'the tests were flaky'", "A1 again, then the closure"),
            ("wave rerun A1 --wave 2 --detach", "in the background; `wave status` to watch"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(p, "agent", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)")
    p.add_argument("--wave", type=int, metavar="N", help="the wave (default: its latest)")
    p.add_argument("--reason", default="", metavar="TEXT", help="why, for the agent's prompt")
    p.add_argument("--detach", action="store_true", help="run the launcher in the background")
    p.add_argument("--no-dashboard", action="store_true", help="do not start the dashboard")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..runtime.lock import live_lock
    from ..state.run_state import RunState
    from ._complete import wave_agents
    from .logs import find_agent_wave

    if not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if (lock := live_lock(layout.lock)) is not None:
        raise UsageError(
            f"a launcher runs lane {lane} (pid {lock.get('pid')}): `wave rerun` reruns an agent "
            "of a wave no launcher runs; stop it first (`wave stop`), or steer the running "
            f"agent with `wave comment --agent {args.agent} ...`"
        )
    wave = args.wave or find_agent_wave(layout, args.agent)
    if args.agent not in wave_agents(repo, lane, wave):
        raise UsageError(f"wave {wave} of lane {lane!r} has no agent {args.agent!r}")
    RunState(layout.run_state, lane).ask_rerun(wave, args.agent, args.reason or "")
    argv = ["launch", "--lane", lane, "--repo", str(repo), "--start-wave", str(wave),
            "--end-wave", str(wave)]  # fmt: skip
    argv += [flag for flag, on in (("--detach", args.detach),
                                   ("--no-dashboard", args.no_dashboard)) if on]  # fmt: skip
    print(f"wave rerun: agent {args.agent} of wave {wave} runs again, then the closure sweep",
          file=sys.stderr, flush=True)  # fmt: skip
    from . import main  # the launch, in this process: its exit code is this command's

    return main(argv)
