"""`wave diff AGENT`: one agent's work. In ``isolation: worktree``, its branch against the
commit it started from (the base, or its dependencies' work merged onto it), so a person
reviews what the agent did and not what it was given; in a shared checkout, the changes in
the paths it owns."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..state.layout import StateLayout
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, state_layout
from ._help import add_command

if TYPE_CHECKING:
    from ..worktrees.isolation import Isolation

RECORD = "isolation.json"
_SHA = re.compile(r"[0-9a-f]{40}")


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "diff",
        "show an agent's work: its branch against the commit it started from",
        "In a shared checkout: `git diff HEAD` of the paths the agent owns, and its new files "
        "git does not track yet. For a wave run with isolation: worktree: the git diff of the "
        "agent's branch "
        "wave/<lane>/w<n>-<agent> against the commit it started from, as recorded when the "
        "wave ran (the base, or, with depends_on, its dependencies' branches merged onto it), "
        "so only the agent's own change shows. Without --wave, the latest such wave that "
        "has the agent. An earlier run's branches (wave/<lane>/runs/<stamp>/...) are plain "
        "git branches: `git diff` them.",
        [
            ("wave diff A1", "A1's change in its latest worktree wave"),
            ("wave diff A1 --wave 2 --stat", "the files it touched, with counts"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(p, "agent", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)")
    p.add_argument("--wave", type=int, metavar="N", help="the wave (default: its latest one)")
    p.add_argument("--stat", action="store_true", help="a summary: files changed, with counts")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..worktrees.branches import diff
    from ..worktrees.git import is_repository
    from ..worktrees.isolation import Isolation

    if not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    if args.wave is not None and args.wave < 1:
        raise UsageError("--wave must be a positive number")
    repo, lane = repo_and_lane(args)
    if not is_repository(repo):
        raise UsageError(f"{repo} is not a git repository")
    layout = state_layout(repo, lane)
    iso = Isolation(repo, layout.worktrees, lane)
    if args.wave is not None and not (layout.wave_dir(args.wave) / RECORD).is_file():
        return _shared(repo, lane, args.wave, args)
    try:
        wave = args.wave or _latest_wave(layout, iso, args.agent)
    except UsageError:  # no worktree wave ran it: a shared checkout's wave
        from .logs import find_agent_wave

        return _shared(repo, lane, find_agent_wave(layout, args.agent), args)
    record = _record(layout, wave)
    branch = iso.branch(wave, args.agent)
    if not iso.exists(branch):
        raise UsageError(_no_branch(repo, lane, wave, args.agent, branch))
    start = _start(record, args.agent) or _earlier_start(layout, wave, args.agent, iso, branch)
    start = start or _base(record)
    if start is None or iso.sha(start) is None:
        where = layout.wave_dir(wave) / RECORD
        raise UsageError(
            f"{where} records no commit agent {args.agent} started from that is in this "
            f"repository; compare by hand: git diff <commit>...{branch}"
        )
    text = diff(iso, branch, start, stat=args.stat)
    if not text:  # said, not a silent nothing
        print(
            f"agent {args.agent} of wave {wave}: no change on {branch} since {start[:12]}, "
            "the commit it started from",
            file=sys.stderr,
        )
    _write(text)
    return 0


def _shared(repo: Path, lane: str, wave: int, args: argparse.Namespace) -> int:
    """In a shared checkout the agent's work is what changed in the paths it owns: `git diff
    HEAD` of those, and the new files there git does not track yet."""
    from ..definitions.loading.lane_loader import load_lane
    from ..worktrees.git import GitError, out

    try:
        owns = load_lane(repo, lane).wave(wave).agent(args.agent).owns
    except KeyError:
        raise UsageError(f"wave {wave} of lane {lane!r} has no agent {args.agent!r}") from None
    if not owns:
        raise UsageError(f"agent {args.agent} of wave {wave} owns no paths: nothing to diff")
    flags = ["--no-ext-diff", "--no-textconv", "--no-color", *(["--stat"] if args.stat else [])]
    try:
        text = out(repo, "diff", *flags, "HEAD", "--", *owns)
        new = out(repo, "ls-files", "--others", "--exclude-standard", "--", *owns).splitlines()
    except GitError as exc:  # no commit yet, a broken repository: said, not a traceback
        raise UsageError(f"git could not compare agent {args.agent}'s paths: {exc}") from None
    text = (text + "\n" if text else "") + "".join(f"new file, not in git yet: {p}\n" for p in new)
    if not text:  # said, not a silent nothing: the paths may be ones git ignores
        print(
            f"agent {args.agent} of wave {wave}: no change since HEAD in the paths it owns "
            "(files git ignores are not shown)",
            file=sys.stderr,
        )
    _write(text)
    return 0


def _write(text: str) -> None:
    if sys.stdout.isatty():  # an agent wrote it: shown on a terminal, never obeyed
        from ..sanitize import strip_controls

        text = strip_controls(text, newlines=True)
    sys.stdout.write(text)


def _record(layout: StateLayout, wave: int) -> dict[str, Any]:
    """The wave's isolation.json, or a UsageError saying the wave had no worktrees."""
    from ..state.fsutil import read_json

    path = layout.wave_dir(wave) / RECORD
    try:
        found = read_json(path)
    except FileNotFoundError:
        raise UsageError(
            f"wave {wave} of lane {layout.lane!r} has not run with isolation: worktree "
            f"(no {path}); `wave diff` shows the branch of an agent of such a wave"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not isinstance(found, dict):
        raise UsageError(f"{path} is not a JSON object")
    return found


def _start(record: dict[str, Any], agent: str) -> str | None:
    """The commit the agent started from in the run ``record`` is of: a 40-hex sha, or None
    (a run that reused the agent's work records no start for it)."""
    agents = record.get("agents")
    own = agents.get(agent) if isinstance(agents, dict) else None
    return own if isinstance(own, str) and _SHA.fullmatch(own) else None


def _base(record: dict[str, Any]) -> str | None:
    base = record.get("base")
    return base if isinstance(base, str) and _SHA.fullmatch(base) else None


def _earlier_start(
    layout: StateLayout, wave: int, agent: str, iso: Isolation, branch: str
) -> str | None:
    """Where a reused agent's branch started in the run that made it: the latest earlier run
    (set aside as ``wave-<n>.<stamp>``) recording a start the branch holds. The new run's base
    is no answer: after a person merged the wave's branch it is the merge, which holds the
    agent's work, and the diff from it would be empty."""
    from ..state.fsutil import read_json

    folder = layout.wave_dir(wave)
    for run in sorted(folder.parent.glob(f"{folder.name}.*"), key=_run_order, reverse=True):
        try:
            found = read_json(run / RECORD)
        except (OSError, ValueError):
            continue
        start = _start(found, agent) if isinstance(found, dict) else None
        if start is not None and iso.sha(start) == start and iso.contains(start, branch):
            return start
    return None


def _run_order(path: Path) -> tuple[str, int]:
    """``wave-<n>.<stamp>[-k]`` in the order the runs were set aside."""
    stamp, _, k = path.name.partition(".")[2].partition("-")
    return stamp, int(k) if k.isdigit() else 1


def _latest_wave(layout: StateLayout, iso: Isolation, agent: str) -> int:
    """The highest wave with an isolation.json whose agent ``agent`` ran (recorded start or
    branch); agent ids repeat across waves."""
    waves = []
    for folder in (layout.base / "waves").glob("wave-*"):
        suffix = folder.name.removeprefix("wave-")
        if suffix.isdigit() and int(suffix) > 0 and (folder / RECORD).is_file():
            waves.append(int(suffix))
    if not waves:
        raise UsageError(
            f"lane {layout.lane!r} has no wave that ran with isolation: worktree (no "
            f"waves/wave-<n>/{RECORD} in {layout.base}); `wave diff` needs one"
        )
    for wave in sorted(waves, reverse=True):
        agents = _record_agents(layout, wave)
        if agent in agents or iso.exists(iso.branch(wave, agent)):
            return wave
    shown = ", ".join(str(n) for n in sorted(waves))
    raise UsageError(
        f"agent {agent!r} has no branch in lane {layout.lane!r}'s worktree waves ({shown}): "
        "check the id (`wave status` lists the agents), or pass --wave N"
    )


def _record_agents(layout: StateLayout, wave: int) -> set[str]:
    try:
        agents = _record(layout, wave).get("agents")
    except UsageError:
        return set()
    return {k for k in agents if isinstance(k, str)} if isinstance(agents, dict) else set()


def _no_branch(repo: Path, lane: str, wave: int, agent: str, branch: str) -> str:
    """Why the agent has no branch, in words a person can act on."""
    from ._complete import wave_agents

    if agent not in wave_agents(repo, lane, wave):
        return (
            f"no agent {agent!r} in wave {wave} of lane {lane!r} "
            f"(agents: {', '.join(wave_agents(repo, lane, wave)) or 'none'})"
        )
    return (
        f"branch {branch} does not exist: agent {agent} of wave {wave} has not started, is a "
        "closure agent (it works on the integration branch "
        f"wave/{lane}/wave-{wave}), or its branch was deleted"
    )
