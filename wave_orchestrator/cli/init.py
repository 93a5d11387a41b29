"""`wave init`: scaffold a lane and git-ignore the state dir."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..definitions.model import EXECUTOR_IDS
from ..definitions.scaffold import scaffold
from ..errors import UsageError
from ..names import LANE_NAME_RE


def register(sub: Any) -> None:
    p = sub.add_parser("init", help="scaffold lanes/main/ and add .wave/ to .gitignore")
    p.add_argument("--repo", metavar="PATH", default=".", help="repository folder (default: here)")
    p.add_argument("--lane", default="main", help="lane name (default: main)")
    p.add_argument("--executor", choices=EXECUTOR_IDS, default="codex", help="default executor")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    repo = Path(args.repo).resolve()
    if not LANE_NAME_RE.fullmatch(args.lane):
        raise UsageError(
            f"invalid lane name {args.lane!r} (expected to match {LANE_NAME_RE.pattern})"
        )
    if (repo / "lanes" / args.lane).exists():
        raise UsageError(f"lanes/{args.lane} already exists in {repo}; nothing was changed")
    for path in scaffold(repo, args.lane, args.executor):
        print(f"wrote {path.relative_to(repo)}")
    print(f"next: wave validate --lane {args.lane}  then  wave launch --lane {args.lane} --dry-run")
    return 0
