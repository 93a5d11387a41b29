"""How wave starts itself (the dashboard session, ``launch --detach``, the console's keys, the
agents' ``wave`` shim): always this interpreter with ``-P``, so the working folder (a
repository agents write to) is never put on ``sys.path``. A ``wave_orchestrator/`` package an
agent plants in the repository root would otherwise replace wave and run as the person."""

from __future__ import annotations

import sys

PACKAGE = "wave_orchestrator"


def python_module_argv(module: str = PACKAGE) -> list[str]:
    """``python -P -m <module>``: this install's code only, whatever the working folder."""
    return [sys.executable, "-P", "-m", module]


def wave_argv(*args: str) -> list[str]:
    """The argv of ``wave <args>`` run by this install of wave."""
    return [*python_module_argv(), *args]
