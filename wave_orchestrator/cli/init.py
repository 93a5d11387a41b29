"""`wave init`: scaffold a lane and git-ignore the state dir."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..definitions.model import EXECUTOR_IDS
from ..errors import UsageError
from ..names import LANE_NAME_RE
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "init",
        "scaffold lanes/main/ and add .wave/ to .gitignore",
        "Create a lane in the repository: a commented lane.yaml and an example wave that "
        "validates as is, and add .wave/ (the state dir) to .gitignore. --demo copies the "
        "bundled demo lane instead, which runs with no agent CLI installed. Nothing existing "
        "is overwritten.",
        [
            ("wave init", "lanes/main with codex agents"),
            ("wave init --lane docs --executor claude", "a claude lane named docs"),
            ("wave init --demo && wave launch --lane demo", "try wave in a minute"),
        ],
    )
    p.add_argument("--repo", metavar="PATH", default=".", help="repository folder (default: here)")
    p.add_argument("--lane", metavar="LANE", help="lane name (default: main, or demo with --demo)")
    p.add_argument(
        "--executor",
        choices=EXECUTOR_IDS,
        default="codex",
        help=f"default executor of the lane ({', '.join(EXECUTOR_IDS)}; default: codex)",
    )
    p.add_argument(
        "--demo", action="store_true", help="copy the bundled demo lane (no agent CLI needed)"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..definitions.repository.scaffold import ignore_state, scaffold, scaffold_demo

    repo = Path(args.repo).resolve()
    lane = args.lane or ("demo" if args.demo else "main")
    if not LANE_NAME_RE.fullmatch(lane):
        raise UsageError(f"invalid lane name {lane!r} (expected to match {LANE_NAME_RE.pattern})")
    if (repo / "lanes" / lane).exists():
        raise UsageError(f"lanes/{lane} already exists in {repo}; nothing was changed")
    written = scaffold_demo(repo, lane) if args.demo else scaffold(repo, lane, args.executor)
    for path in written:
        print(f"wrote {path.relative_to(repo)}")
    added, problem = ignore_state(repo)  # after the lane: a .gitignore never stops init
    if added:
        print("wrote .gitignore")
    if problem is not None:
        print(f"warning: .wave/ not added to .gitignore: {problem}", file=sys.stderr)
    if args.demo:
        print(f"next: wave launch --lane {lane}  (add --dry-run to only preview)")
    else:
        print(f"next: wave validate --lane {lane}  then  wave launch --lane {lane} --dry-run")
    return 0
