"""Which placement runs a lane's agents: the one factory, from the lane's ``placement:`` when
launching, from the launch's record (``placement.json``) for the commands that reach a running
or finished launch's agents (stop, status, attach)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..definitions.model import LaneDef, PlacementSettings
from ..state.fsutil import read_json
from ..state.layout import StateLayout, socket_name
from .base import Placement
from .local import LocalPlacement
from .tmux import TmuxServer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .ssh_ship import GitSide

    HostSide = tuple[GitSide, Sequence[str], bool]


def placement_for(
    lane: LaneDef,
    layout: StateLayout,
    tmux: TmuxServer,
    warn: Callable[[str], None],
    host_side: HostSide | None = None,
) -> Placement:
    """Slurm jobs, sessions on SSH hosts, or sessions on the lane's tmux server (the
    launcher's own sessions, the dashboard's and a detached launcher's, stay on this machine's
    tmux whatever the placement). ``host_side`` is what SSH hosts need of this machine: its
    git work, the programs the lane's agents start, and whether the launch resumes (a dead
    launcher's sessions there are then followed again)."""
    if lane.placement.remote and lane.placement.ssh is not None:
        from .ssh import SshPlacement  # loaded for SSH lanes only

        git, programs, resuming = host_side or (None, (), False)
        made = SshPlacement(lane.placement.ssh, layout, lane.repo, git, warn, programs)
        made.resuming = resuming
        return made
    return _placement(lane.placement, lane.name, lane.repo, layout, tmux, warn)


def recorded_placement(layout: StateLayout, repo: Path) -> Placement:
    """Where the lane's last launch put its agents (its record; only the kind and whether
    jobs run a tmux of their own are taken from it; an SSH lane's hosts from its lane file),
    local tmux otherwise."""
    record: Any = None
    with contextlib.suppress(OSError, ValueError):
        record = read_json(layout.placement_record)
    settings = PlacementSettings()
    if isinstance(record, dict) and record.get("kind") == "ssh":
        # The hosts come from the lane's own file, never from the record (anyone may write
        # it): an ssh config or destination taken from it would run what it names.
        from ..definitions.loading.lane_loader import load_lane
        from .ssh import SshPlacement

        ssh = load_lane(repo, layout.lane).placement.ssh
        if ssh is not None:
            return SshPlacement(ssh, layout, repo, None, _unsaid, command=True)
    if isinstance(record, dict) and record.get("kind") == "slurm":
        settings = PlacementSettings(kind="slurm", tmux=record.get("tmux") is True)
    tmux = TmuxServer(socket_name(layout.lane, repo))
    return _placement(settings, layout.lane, repo, layout, tmux, None)


def _placement(
    settings: PlacementSettings,
    lane: str,
    repo: Path,
    layout: StateLayout,
    tmux: TmuxServer,
    warn: Callable[[str], None] | None,
) -> Placement:
    if settings.slurm:  # only the jobs this lane submitted are its agents
        from .slurm import SlurmPlacement  # loaded for Slurm lanes only

        return SlurmPlacement(settings, lane, repo, layout, warn or _unsaid)
    return LocalPlacement(tmux)


def _unsaid(message: str) -> None:
    """A command that only reaches a launch's agents has no one to warn (the launcher did)."""
