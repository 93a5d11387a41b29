"""`wave worktrees`: the agent worktrees a lane left behind (``isolation: worktree``), and their
removal. Branches are never deleted; a worktree with uncommitted work is kept unless --force."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..worktrees.git import is_repository
from ..worktrees.isolation import Isolation
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane, state_layout
from ._help import exit_codes_text

EXAMPLES = """examples:
  wave worktrees list --lane main
  wave worktrees prune --lane main
  wave worktrees prune --lane main --force     # also those with uncommitted work
"""
EXAMPLES += "\n" + exit_codes_text((0, 1, 2))


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worktrees",
        help="list or remove agent worktrees left behind (isolation: worktree)",
        description="Agent worktrees live in .wave/<lane>/worktrees/ and are removed when their "
        "wave ends, unless --keep-worktrees or a crash left them. Branches are always kept.",
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="worktrees_command", metavar="ACTION", required=True)
    for name, text in (("list", "the lane's worktrees"), ("prune", "remove them")):
        action = actions.add_parser(name, help=text, description=text)
        add_repo(action)
        add_lane(action)
        add_json(action)
        if name == "prune":
            action.add_argument(
                "--force", action="store_true", help="also remove worktrees with uncommitted work"
            )
        action.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    repo, lane = repo_and_lane(args)
    if not is_repository(repo):
        raise UsageError(f"{repo} is not a git repository")
    iso = Isolation(repo, state_layout(repo, lane).worktrees, lane)
    if args.worktrees_command == "list":
        found = iso.leftovers()
        if args.json:
            emit_json([_row(w) for w in found])
        for w in [] if args.json else found:
            dirty = f"{w.changes} uncommitted change(s)" if w.changes else "clean"
            print(f"{w.path}  {w.branch or '(detached)'}  {dirty}")
        if not found and not args.json:
            print(f"lane {lane}: no worktrees")
        return 0
    removed, refused = iso.prune(force=args.force)
    if args.json:
        emit_json({"removed": [_row(w) for w in removed], "refused": [_row(w) for w in refused]})
    else:
        for w in removed:
            print(f"removed {w.path} (branch {w.branch} kept)")
        for w in refused:
            print(f"kept {w.path}: {w.changes} uncommitted change(s); --force removes it")
        if not removed and not refused:
            print(f"lane {lane}: no worktrees")
    return 1 if refused else 0


def _row(w: Any) -> dict[str, Any]:
    return {"path": str(w.path), "branch": w.branch, "changes": w.changes}
