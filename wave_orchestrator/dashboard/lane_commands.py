"""The console's keys for the lane as a whole: `L` shows another lane of the repository (the
console, and every key, then act on that one), `G` starts the lane, `R` resumes it, `S` stops
it. Each of the last three runs the cli's own command through the ``Fleet`` after a `y`, as
the keys for one agent do, so a key and a command are one behaviour."""

from __future__ import annotations

from ..state.layout import StateLayout
from .agent_commands import AgentCommands
from .fleet import Lanes
from .screens import PickLane


class LaneKeys(AgentCommands):
    """The lane keys; ``FleetConsole`` does the switch itself (it knows what it holds)."""

    layout: StateLayout
    lanes: Lanes | None

    def switch_lane(self, lane: str) -> None:
        raise NotImplementedError

    def action_pick_lane(self) -> None:
        if self.lanes is None:
            self.notify("this console shows one lane only", title="lanes", markup=False)
            return
        current = self.layout.lane

        def chosen(lane: str | None) -> None:
            if lane is not None and lane != current:
                self.switch_lane(lane)

        self.push_screen(PickLane(self.lanes.lanes(), current), chosen)

    def action_start_lane(self) -> None:
        lane = self.layout.lane
        question = (
            f"Start lane {lane}? `wave launch --detach`: its waves run in the background "
            "(finished work that is still current is reused)."
        )
        self._confirmed(question, f"start lane {lane}", ["launch", "--detach"])

    def action_resume_lane(self) -> None:
        lane = self.layout.lane
        question = (
            f"Resume lane {lane}? `wave launch --resume --detach`: completed waves are "
            "skipped, agents still running are adopted, the rest launched."
        )
        self._confirmed(question, f"resume lane {lane}", ["launch", "--resume", "--detach"])

    def action_stop_lane(self) -> None:
        lane = self.layout.lane
        question = f"Stop lane {lane}? Its launcher and agents stop; the wave counts as cancelled."
        self._confirmed(question, f"stop lane {lane}", ["stop"])
