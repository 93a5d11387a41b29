"""`wave launch`: run a lane's waves, or preview them with --dry-run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..definitions.model import EXECUTOR_IDS, NUMBER_RANGES
from ..errors import UsageError
from ..sanitize import strip_controls
from ._common import (
    add_color,
    add_json,
    add_lane,
    add_repo,
    emit_json,
    paint,
    repo_and_lane,
    state_layout,
    use_color,
)
from ._help import add_command

OVERRIDES = (
    ("--timeout-minutes", "timeout_minutes", float),
    ("--max-retries-per-wave", "max_retries_per_wave", int),
    ("--launch-stagger-ms", "launch_stagger_ms", float),
    ("--rate-limit-retries", "rate_limit_retries", int),
    ("--rate-limit-base-delay-seconds", "rate_limit_base_delay_seconds", float),
    ("--rate-limit-max-delay-seconds", "rate_limit_max_delay_seconds", float),
)


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "launch",
        "run a lane's waves (or preview them with --dry-run)",
        "Run the lane's waves one after the other: each agent of a wave starts in its own "
        "detached tmux session, the wave's closure gates judge what they did, and a failed "
        "wave is retried up to max_retries_per_wave times before the launch stops. Prompts, "
        "logs, status files and the run state live under .wave/<lane>/. --dry-run writes "
        "every prompt and wrapper and prints the plan without starting anything; --detach "
        "runs the launcher itself in the lane's tmux server and returns at once.",
        [
            ("wave launch --dry-run", "preview every wave: agents, executors, commands"),
            ("wave launch --lane main --start-wave 2 --end-wave 3", "run waves 2 and 3"),
            ("wave launch --auto-next --detach", "go on where the lane stopped, in background"),
        ],
    )
    add_repo(p)
    add_lane(p)
    p.add_argument(
        "--start-wave", type=int, metavar="N", help="first wave to run (default: the first)"
    )
    p.add_argument("--end-wave", type=int, metavar="M", help="last wave to run (default: the last)")
    p.add_argument(
        "--auto-next", action="store_true", help="start at the first wave not yet completed"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="write prompts, wrappers and a preview; start nothing",
    )
    p.add_argument(
        "--detach",
        action="store_true",
        help="run the launcher in the lane's `launcher` tmux session and return",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="adopt a dead launcher's live sessions and finished agents",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="run every agent again: reuse no earlier run's finished work",
    )
    p.add_argument("--no-dashboard", action="store_true", help="do not start the dashboard session")
    p.add_argument(
        "--no-context7",
        action="store_true",
        help="fetch no library docs from Context7 for the agents (recorded as disabled)",
    )
    p.add_argument(
        "--keep-sessions", action="store_true", help="keep finished agents' tmux sessions"
    )
    p.add_argument(
        "--keep-worktrees",
        action="store_true",
        help="isolation: worktree: keep agent worktrees at wave end (branches are always kept)",
    )
    for flag, dest, kind in OVERRIDES:
        p.add_argument(flag, dest=dest, type=kind, metavar="N", help="override the lane default")
    p.add_argument(
        "--executor",
        choices=EXECUTOR_IDS,
        help=f"executor for agents that name none ({', '.join(EXECUTOR_IDS)})",
    )
    add_color(p)
    add_json(p)
    p.set_defaults(handler=run)


def _check_overrides(args: argparse.Namespace) -> dict[str, Any]:
    values = {dest: getattr(args, dest) for _, dest, _ in OVERRIDES}
    for flag, dest, _ in OVERRIDES:
        value = values[dest]
        low, high = NUMBER_RANGES[dest.removeprefix("rate_limit_")]
        # `not (...)` so that nan, which compares false to everything, is refused too
        if value is not None and (
            not low <= value <= high or (dest == "timeout_minutes" and value == 0)
        ):
            low_text = "> 0" if dest == "timeout_minutes" else f">= {low:g}"
            raise UsageError(f"{flag} must be {low_text} and <= {high:g}, got {value:g}")
    return values


def run(args: argparse.Namespace) -> int:
    from ..runtime.launch.selection import LaunchOptions, prepare_lane, select_waves

    repo, lane_name = repo_and_lane(args)
    opts = LaunchOptions(
        lane=lane_name,
        start_wave=args.start_wave,
        end_wave=args.end_wave,
        auto_next=args.auto_next,
        dry_run=args.dry_run,
        keep_sessions=args.keep_sessions,
        keep_worktrees=args.keep_worktrees,
        no_dashboard=args.no_dashboard,
        executor=args.executor,
        overrides=_check_overrides(args),
        resume=args.resume,
        fresh=args.fresh,
    )
    if opts.fresh and opts.resume:
        raise UsageError(
            "--fresh and --resume contradict each other: --resume carries on with what a dead "
            "launcher left, --fresh starts every agent anew"
        )
    lane = prepare_lane(repo, opts)
    if args.no_context7:
        from ..definitions.model import Context7Settings

        lane = lane._replace(context7=(lane.context7 or Context7Settings())._replace(enabled=False))
    if not opts.dry_run and not args.detach:  # a launch outlives whoever reads its output
        from ..runtime.launch.streams import survive_closed_output

        survive_closed_output()
    human = sys.stderr if args.json else sys.stdout
    if opts.dry_run:
        from ..runtime.launch.dry_run import dry_run, format_table

        done: set[int] = set()
        if opts.auto_next or opts.resume:  # only they skip completed waves: read the state
            from ..runtime.launch.selection import completed_waves
            from ..state.ledger import ledger_path, read_ledger
            from ..state.run_state import RunState

            state = RunState(lane.state_dir / "run-state.json", lane.name)
            seen = read_ledger(ledger_path(lane.repo, lane.name))
            done = completed_waves(
                seen, state, lambda text: print(f"wave: warning: {text}", file=sys.stderr)
            )
        waves = select_waves(lane, opts, done)
        result = dry_run(lane, waves)
        print(strip_controls(format_table(result), newlines=True), file=human)
        if args.json:
            emit_json(result.to_json())
        return 0
    if args.detach:
        return _detach(args, repo, lane.name, human)
    from ..placement.processes import become_subreaper
    from ..runtime.launch.launcher import Launcher  # the main loop: not loaded for a dry run

    launcher = Launcher(lane, opts)
    launcher.subreaper = become_subreaper()  # the launcher is this process: it reaps for it
    launched = launcher.run()
    color = use_color(args.color, human)
    if not launched.outcomes:
        print(f"lane {lane.name}: every selected wave is already completed", file=human)
    for o in launched.outcomes:
        if o.state == "failed" and launched.message:
            continue  # the failure summary below says it, once
        style = {"completed": "green", "failed": "red"}.get(o.state, "yellow")
        print(
            paint(f"wave {o.wave}: {o.state} after {o.attempts} attempt(s)", style, color),
            file=human,
        )
    if launched.message:  # gate details quote the agents: shown, never obeyed
        err = use_color(args.color, sys.stderr)
        text = strip_controls(launched.message, newlines=True)
        print(paint(text, "red" if launched.code else "yellow", err), file=sys.stderr)
    if args.json:
        emit_json(launched.to_json())
    return launched.code


def _detach(args: argparse.Namespace, repo: Path, lane: str, human: Any) -> int:
    """Start this same launch in the lane's `launcher` session and return at once."""
    from ..runtime.launch.control import start_detached
    from ..state.layout import socket_name

    raw = args.raw_argv[1:] if args.raw_argv[:1] == ["launch"] else args.raw_argv
    # argparse accepts abbreviations (`--det`): drop those too, or the child detaches again.
    dropped = ("--detach", "--json")
    passthrough = [a for a in raw if not (len(a) > 2 and any(d.startswith(a) for d in dropped))]
    launch_args = [
        *_without_options(passthrough, ("--lane", "--repo")),
        "--lane",
        lane,
        "--repo",
        str(repo),
    ]
    layout = state_layout(repo, lane)
    pid = start_detached(layout, repo, launch_args)
    socket = socket_name(lane, repo)
    print(f"launcher started in tmux session 'launcher' (pid {pid}, socket {socket})", file=human)
    print(f"  watch:  wave dashboard --lane {lane}", file=human)
    print(f"  status: wave status --lane {lane}", file=human)
    print(f"  stop:   wave stop --lane {lane}", file=human)
    print(f"  attach: wave attach --lane {lane} --launcher", file=human)
    if args.json:
        emit_json({"lane": lane, "pid": pid, "session": "launcher", "socket": socket})
    return 0


def _without_options(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """``argv`` minus the given options and their values (both `--x v` and `--x=v`)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not any(arg.startswith(f"{n}=") for n in names):
            out.append(arg)
    return out
