"""lane.yaml's ``stall:`` as the launcher reads it (checked in ``sections/stall.py``)."""

from __future__ import annotations

from typing import NamedTuple


class StallPolicy(NamedTuple):
    """Silent (no output, no stream event, no change in its workspace) for ``nudge_minutes``:
    the agent is stopped and continues its conversation with a nudge; silent ``ask_minutes``
    after that (or after its start, with no nudge): a person is asked. 0: the step is off."""

    nudge_minutes: float = 0
    ask_minutes: float = 0

    @property
    def on(self) -> bool:
        return self.nudge_minutes > 0 or self.ask_minutes > 0
