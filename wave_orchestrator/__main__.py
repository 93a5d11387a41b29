"""`python -m wave_orchestrator` runs the `wave` command."""

import sys

from .cli import main

sys.exit(main())
