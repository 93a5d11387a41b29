"""`wave attach`: put the terminal on an agent's (or the dashboard's) tmux session, or, for
an agent placed on Slurm, on its job (`srun --jobid J --overlap --pty tail -f output.log`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
from typing import Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..state.layout import DASHBOARD_SESSION, LAUNCHER_SESSION, session_name, socket_name
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, state_layout
from ._help import add_command
from .logs import find_agent_wave


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "attach",
        "attach to an agent's tmux session",
        "Put your terminal on the tmux session of a running agent (or of the dashboard) on the "
        "lane's private tmux server; detach again with the tmux prefix and d (C-b d). Needs a "
        "terminal; without one, --print gives the tmux command to run. Inside your own tmux the "
        "session nests: detach the inner one with the prefix twice (C-b C-b d), or open it in "
        "a new window of your tmux with --new-window. A detached launcher's own output is "
        "`wave logs --launcher`.",
        [
            ("wave attach A1", "watch agent A1 of the current wave work"),
            ("wave attach --dashboard", "the live dashboard session"),
            ("wave attach A1 --wave 2 --print", "the tmux command, to run elsewhere"),
            ("wave attach A1 --new-window", "inside your tmux: A1 in a new window of it"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(
        p, "agent", nargs="?", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)"
    )
    p.add_argument(
        "--wave", type=int, metavar="N", help="the wave, when the agent id is in several"
    )
    p.add_argument("--dashboard", action="store_true", help="attach to the dashboard session")
    p.add_argument(
        "--launcher", action="store_true", help="attach to a detached launcher's session"
    )
    p.add_argument(
        "--print", action="store_true", help="print the tmux command instead of running it"
    )
    p.add_argument(
        "--new-window",
        action="store_true",
        help="inside your own tmux: open the session in a new window of it",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..placement.choose import recorded_placement
    from ..placement.tmux import TmuxServer

    repo, lane = repo_and_lane(args)
    if args.dashboard:
        target = DASHBOARD_SESSION
    elif args.launcher:
        target = LAUNCHER_SESSION
    else:
        if not args.agent or not AGENT_ID_RE.fullmatch(args.agent):
            raise UsageError("give an agent id, --dashboard or --launcher")
        layout = state_layout(repo, lane)
        wave = args.wave or find_agent_wave(layout, args.agent)
        target = session_name(wave, args.agent)
        placement = recorded_placement(layout, repo)
        if placement.kind != "local":  # a Slurm job (srun into it) or an SSH host (ssh -t)
            with contextlib.closing(placement):
                argv = placement.attach_argv(target, layout.agent(wave, args.agent).output_log)
            if args.print:
                print(shlex.join(argv))
                return 0
            os.execvp(argv[0], argv)
    server = TmuxServer(socket_name(lane, repo))
    argv = server.attach_argv(target)
    if args.print:
        print(shlex.join(argv))
        return 0
    if not server.has_session(target):
        raise UsageError(
            f"no tmux session {target!r} on lane {lane!r}: agent sessions end with their wave "
            "(launch with --keep-sessions to keep them); `wave logs` shows the output"
        )
    if args.new_window:
        return _new_window(target, argv)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            f"wave attach needs a terminal (this one's input or output is not): run "
            f"`{shlex.join(argv)}` from a terminal, or follow the output with `wave logs -f`"
        )
    os.execvp("tmux", argv)


def _new_window(name: str, attach: list[str]) -> int:
    """A window of the user's own tmux (the one ``$TMUX`` names) attached to the lane's
    session: tmux cannot switch a client across servers, so the lane's server runs nested in
    it, with ``TMUX`` unset for the inner client."""
    if not os.environ.get("TMUX"):
        raise UsageError("--new-window opens a window of your tmux: run it inside tmux ($TMUX)")
    inner = shlex.join(["env", "-u", "TMUX", *attach])
    done = subprocess.run(
        ["tmux", "new-window", "-n", name, inner], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise UsageError(f"tmux new-window failed: {done.stderr.strip() or done.returncode}")
    return 0
