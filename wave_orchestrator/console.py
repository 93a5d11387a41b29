"""The `wave` process: the console script and `python -m wave_orchestrator` start here.

Start-up is most of what a read-only command costs (docs/performance.md). While some sixty
modules are imported and the parser is built, Python's cyclic collector runs again and again
over objects that are none of them garbage, and once more over all of them at exit. So the
collector is off while the command is set up; everything alive by then is frozen out of its
reach (`gc.freeze`, as Instagram does for its servers) and it is back on before the command
runs, for a launcher runs for hours.
"""

from __future__ import annotations

import gc
import sys


def run() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):  # asked by scripts and bug reports: no parser
        from . import __version__

        print(f"wave {__version__}")
        return
    gc.disable()  # first: typing, dataclasses and the rest are imported below
    from .cli import main

    code = main(before_command=collector_on)
    gc.freeze()  # the exit's last collection has nothing left to walk
    sys.exit(code)


def collector_on() -> None:
    """Set-up is over: what it made lives as long as the process, out of the collector's way."""
    gc.freeze()
    gc.enable()
