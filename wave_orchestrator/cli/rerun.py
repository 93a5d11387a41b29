"""`wave rerun AGENT`: run one agent again, its prompt saying a person asked for it. In a
running wave, now, by the launcher that runs it (state.reruns); else the agent's last wave
runs again with every other agent's finished work reused unless it is stale, then its closure
sweep; before it starts it says what it reruns and reuses, and why (runtime.wave.reuse_plan),
and asks on a terminal when that is more than was asked."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, WaveError
from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from ..state.layout import StateLayout
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, state_layout
from ._help import add_command

if TYPE_CHECKING:
    from ..runtime.wave.reuse_plan import ReusePlan

ANSWER_SECONDS = 15.0  # the launcher looks for requests every second, between two stages later


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "rerun",
        "run one agent again: now in the running wave, else its last wave and the closure",
        "Run AGENT again, with --reason in its prompt under 'why you are running again'. "
        "While a launcher runs the lane, it runs the agent of the running wave again now: "
        "its try so far is stopped (kept as attempt-<k>.rerun<n>.log) and it starts anew; "
        "the launcher refuses (exit 2) an agent of a stage that is not running. With no "
        "launcher, the agent's latest wave (or --wave N) runs again with every other "
        "implementation agent's finished work reused unless it is stale (it failed, its "
        "definition changed, or the base moved by more than the wave's own merged work), "
        "then its closure stages: a launcher in the foreground, or with --detach in the "
        "background. It first prints what it reruns and reuses, and why; when that is more "
        "than asked it asks (y/N) on a terminal, and goes on with the plan it printed "
        "when there is none to ask on.",
        [
            ("wave rerun A1 --reason 'the tests were flaky'", "A1 again (now, if its wave runs)"),
            ("wave rerun A1 --wave 2 --detach", "wave 2's A1, then its closure, in the background"),
            ("wave rerun QA --dry-run", "what it would rerun and reuse, and why"),
            (
                "wave rerun A1 --continue 'use the v2 API'",
                "A1 goes on in its conversation, told this",
            ),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(p, "agent", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)")
    p.add_argument("--wave", type=int, metavar="N", help="the wave (default: its latest)")
    p.add_argument("--reason", default="", metavar="TEXT", help="why, for the agent's prompt")
    p.add_argument(
        "--continue",
        dest="carry_on",
        nargs="?",
        const="",
        default=None,
        metavar="MESSAGE",
        help="continue its conversation with its CLI, told MESSAGE, instead of starting over",
    )
    p.add_argument("--detach", action="store_true", help="run the launcher in the background")
    p.add_argument("--no-dashboard", action="store_true", help="do not start the dashboard")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what it would rerun and reuse, and why; start nothing",
    )
    p.add_argument(
        "--yes", action="store_true", help="go on without asking when it reruns more than asked"
    )
    p.add_argument(
        "--fresh", action="store_true", help="run every agent of the wave again: reuse nothing"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..state.lock import live_lock
    from ..state.run_state import RunState
    from ._complete import wave_agents
    from .logs import find_agent_wave

    if not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if live_lock(layout.lock) is not None:
        if args.dry_run:
            print(f"reruns {args.agent} now, in the running launcher (its try so far stopped)")
            return 0
        return _while_running(args, repo, lane, layout)
    wave = args.wave or find_agent_wave(layout, args.agent)
    if args.agent not in wave_agents(repo, lane, wave):
        raise UsageError(f"wave {wave} of lane {lane!r} has no agent {args.agent!r}")
    plan = _plan(repo, lane, layout, wave, args.agent, args.fresh)
    if args.dry_run:
        print(plan.words())
        return 0
    say(f"agent {args.agent} of wave {wave} runs again, then the closure sweep")
    say(plan.words())
    if plan.more_than_asked and not (args.yes or args.fresh) and not _go_on():
        say("nothing started (--yes goes on without asking, --dry-run only shows the plan)")
        return 1
    carry_on = args.carry_on is not None
    RunState(layout.run_state, lane).ask_rerun(wave, args.agent, _words(args), carry_on)
    argv = ["launch", "--lane", lane, "--repo", str(repo)]
    argv += ["--start-wave", str(wave), "--end-wave", str(wave)]
    argv += ["--detach"] if args.detach else []
    argv += ["--no-dashboard"] if args.no_dashboard else []
    argv += ["--fresh"] if args.fresh else []
    from . import main  # the launch, in this process: its exit code is this command's

    return main(argv)


def say(text: str) -> None:
    print(f"wave rerun: {text}", file=sys.stderr, flush=True)


def _plan(
    repo: Path, lane: str, layout: StateLayout, wave: int, agent: str, fresh: bool
) -> ReusePlan:
    """The plan its launch will take (runtime.wave.reuse_plan: the launcher's own)."""
    from ..definitions.loading.lane_loader import load_lane
    from ..runtime.wave.reuse_plan import plan_for_rerun

    return plan_for_rerun(load_lane(repo, lane), layout, wave, [agent], fresh)


def _go_on() -> bool:
    """On a terminal, the person's `y`; with none to ask on, the plan printed goes on."""
    if not sys.stdin.isatty():
        say("no terminal to ask on: it goes on with this plan")
        return True
    print("wave rerun: Go on? [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _while_running(args: argparse.Namespace, repo: Path, lane: str, layout: StateLayout) -> int:
    """The launcher runs the lane: ask it to run the agent again now (state.reruns) and say
    what it answered."""
    from ..state import reruns
    from ._common import _running_wave
    from ._complete import wave_agents

    wave = _running_wave(layout)
    if wave is None or (args.wave is not None and args.wave != wave):
        raise UsageError(
            f"a launcher runs wave {wave} of lane {lane}: `wave rerun` of another "
            "wave waits until it ends (or `wave stop` it first)"
        )
    if args.agent not in wave_agents(repo, lane, wave):
        raise UsageError(f"wave {wave} of lane {lane!r} has no agent {args.agent!r}")
    paths = layout.agent(wave, args.agent)
    rid = reruns.ask(paths, _words(args), args.carry_on is not None)
    deadline = time.monotonic() + ANSWER_SECONDS
    while (said := reruns.answer(paths, rid)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if said is None:
        paths.rerun_request.unlink(missing_ok=True)
        raise WaveError(
            f"the launcher did not take the request within {ANSWER_SECONDS:g} s "
            "(between two stages?): ask again"
        )
    if said.get("taken") is not True:
        raise UsageError(strip_controls(str(said.get("detail") or "refused")))
    how = "continuing its conversation" if args.carry_on is not None else "anew"
    print(
        f"wave rerun: agent {args.agent} of wave {wave} runs again now, {how}, in the running "
        "launcher (its try so far stopped, kept as attempt-<k>.rerun<n>.log)"
    )
    return 0


def _words(args: argparse.Namespace) -> str:
    """What the agent is told: the --continue message, else the --reason."""
    return args.carry_on or args.reason or ""
