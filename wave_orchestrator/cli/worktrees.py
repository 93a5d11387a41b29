"""`wave worktrees`: the agent worktrees a lane left behind (``isolation: worktree``), and their
removal. A worktree with uncommitted work is kept unless --force; branches are deleted only
with --branches, and then only those whose work is merged (unless --force)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, WaveError
from ..worktrees.git import is_repository
from ..worktrees.isolation import Isolation
from ._common import add_json, add_lane, add_repo, emit_json, repo_and_lane, state_layout
from ._help import COMMAND_EXIT_CODES, action_epilog, exit_codes_text, wrap

if TYPE_CHECKING:
    from ..worktrees.branches import PrunedBranch

EXAMPLES = """examples:
  wave worktrees list --lane main
  wave worktrees prune --lane main
  wave worktrees prune --lane main --force     # also those with uncommitted work
  wave worktrees prune --branches              # and the wave branches already merged
"""
EXAMPLES += "\n" + exit_codes_text(COMMAND_EXIT_CODES["worktrees"])


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worktrees",
        help="list or remove leftover worktrees and wave branches (isolation: worktree)",
        description=wrap(
            "Agent worktrees live in .wave/<lane>/worktrees/ and are removed when their "
            "wave ends, unless --keep-worktrees or a crash left them. Branches (wave/<lane>/...) "
            "are kept until `prune --branches` deletes those whose work is merged."
        ),
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="worktrees_command", metavar="ACTION", required=True)
    for name, text in (("list", "the lane's worktrees"), ("prune", "remove them")):
        action = actions.add_parser(
            name, help=text, description=text, epilog=action_epilog(f"wave worktrees {name}")
        )
        add_repo(action)
        add_lane(action)
        add_json(action)
        if name == "prune":
            action.add_argument(
                "--branches",
                action="store_true",
                help="also delete the lane's wave branches whose work is in an integration "
                "branch or in your current branch",
            )
            action.add_argument(
                "--force",
                action="store_true",
                help="also remove worktrees with uncommitted work (with --branches: delete "
                "unmerged branches too)",
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
    from ..state.lock import holder_text, live_lock
    from ..worktrees.branches import prune_branches

    if (holder := live_lock(state_layout(repo, lane).lock)) is not None:
        raise WaveError(f"{holder_text(lane, holder)}: its agents work in these worktrees")
    removed, refused = iso.prune(force=args.force)
    branches = prune_branches(iso, force=args.force) if args.branches else []
    if args.json:
        emit_json(
            {
                "removed": [_row(w) for w in removed],
                "refused": [_row(w) for w in refused],
                "branches": [_branch_row(b) for b in branches],
            }
        )
    else:
        for w in removed:  # with --branches, what becomes of its branch is said below
            print(f"removed {w.path}" + ("" if args.branches else f" (branch {w.branch} kept)"))
        for w in refused:
            print(f"kept {w.path}: {w.changes} uncommitted change(s); --force removes it")
        for b in branches:
            print(_branch_line(b))
        if not removed and not refused and not args.branches:
            print(f"lane {lane}: no worktrees")
        elif args.branches and not branches:
            print(f"lane {lane}: no wave branches to delete")
    return 1 if refused or any(not b.deleted for b in branches) else 0


def _branch_line(b: PrunedBranch) -> str:
    if not b.deleted:
        return (
            f"kept branch {b.branch}: its work is in neither your branch nor an integration "
            "branch; --force deletes it"
        )
    if b.merged_into is None:
        return f"deleted branch {b.branch} (not merged: --force)"
    return f"deleted branch {b.branch} (merged into {b.merged_into})"


def _branch_row(b: PrunedBranch) -> dict[str, Any]:
    return {"branch": b.branch, "merged_into": b.merged_into, "deleted": b.deleted}


def _row(w: Any) -> dict[str, Any]:
    return {"path": str(w.path), "branch": w.branch, "changes": w.changes}
