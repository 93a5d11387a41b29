"""The placement a lane's ``placement:`` asks for."""

from __future__ import annotations

from collections.abc import Callable

from ...definitions.model import LaneDef
from ...state.layout import StateLayout
from .base import Placement
from .local import LocalPlacement
from .slurm import SlurmPlacement
from .tmux import TmuxServer


def placement_for(
    lane: LaneDef, layout: StateLayout, tmux: TmuxServer, warn: Callable[[str], None]
) -> Placement:
    """Slurm jobs, or sessions on the lane's tmux server (the launcher's own sessions, the
    dashboard's and a detached launcher's, stay on tmux whatever the placement)."""
    if lane.placement.slurm:
        return SlurmPlacement(lane.placement, lane.name, lane.repo, layout, warn)
    return LocalPlacement(tmux)
