"""The lane's component matrix: ``components.json`` in the state dir, the current
level of each component. The owners' ``[wave-component] ... state=met`` lines set it when the
implementation gate passes; after documentation closure (or, in a wave without that stage,
at the last stage judged) every component the wave promotes must stand at its target there,
or that stage fails with ``component-current-level-stale``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...closure.gates import AgentResult, GateResult
from ...closure.markers import Marker
from ...definitions.model import WaveDef
from ...state.events import utc_now
from ...state.fsutil import write_json_atomic
from ...state.layout import StateLayout
from ...state.untrusted import read_object

ENTRY_TEXT = 200  # a level, an agent id or a stamp read back is cut to this


def matrix_stage(wave: WaveDef) -> str:
    """The stage after which the matrix is checked: documentation closure, else the last."""
    roles = [role for role, _ in wave.closure_stages()]
    return "documentation" if "documentation" in roles else (roles or ["implementation"])[-1]


def read_matrix(layout: StateLayout) -> dict[str, dict[str, Any]]:
    """components.json, each entry checked (it is under .wave/: anyone may have written it)."""
    data = read_object(layout.component_matrix) or {}
    found = data.get("components")
    if not isinstance(found, dict):
        return {}
    return {
        str(k)[:ENTRY_TEXT]: {f: v[:ENTRY_TEXT] for f, v in entry.items() if isinstance(v, str)}
        for k, entry in found.items()
        if isinstance(entry, dict)
    }


def record_levels(layout: StateLayout, wave: WaveDef, results: Sequence[AgentResult]) -> None:
    """The owners' met levels into the matrix (once the implementation gate passed)."""
    matrix = read_matrix(layout)
    changed = False
    for result in results:
        for component, _target in result.agent.components:
            m = result.markers.components.get(component)
            if isinstance(m, Marker) and m.get("state") == "met":
                matrix[component] = {"level": str(m.get("level")), "wave": str(wave.number),
                                     "agent": result.agent.id, "at": utc_now()}  # fmt: skip
                changed = True
    if changed:
        write_json_atomic(layout.component_matrix, {"components": matrix})


def check_matrix(layout: StateLayout, wave: WaveDef, gate: GateResult) -> None:
    """Every component the wave promotes stands at its target level in the matrix."""
    matrix = read_matrix(layout)
    for component, target in wave.components:
        entry = matrix.get(component, {})
        if entry.get("level") != target:
            now = entry.get("level") or "absent"
            said = (f"{component} is {now} in the component matrix ({layout.component_matrix}); "
                    f"the wave promotes it to {target}")  # fmt: skip
            gate.fail("component-current-level-stale", said, entry.get("agent"))
