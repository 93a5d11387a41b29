"""The placement a lane's ``placement:`` asks for."""

from __future__ import annotations

from pathlib import Path

from ...definitions.model import PlacementSettings
from .base import Placement
from .local import LocalPlacement
from .slurm import SlurmPlacement
from .tmux import TmuxServer


def placement_for(
    settings: PlacementSettings, lane: str, repo: Path, tmux: TmuxServer
) -> Placement:
    """Slurm jobs, or sessions on the lane's tmux server (the launcher's own sessions, the
    dashboard's and a detached launcher's, stay on tmux whatever the placement)."""
    if settings.slurm:
        return SlurmPlacement(settings, lane, repo)
    return LocalPlacement(tmux)
