"""`python -m wave_orchestrator` runs the `wave` command."""

from .console import run

run()
