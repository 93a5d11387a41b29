"""The `wave` process: the console script and `python -m wave_orchestrator` start here.

Start-up and exit are most of what a read-only command costs (docs/performance.md), and both
are spent on work nobody needs, so this module skips it the way Instagram does for its servers:

- While some sixty modules are imported and the parser is built, Python's cyclic collector runs
  again and again over objects none of which are garbage. It is off until the arguments are
  parsed; then everything alive is frozen out of its reach (`gc.freeze`) and it is back on for
  the command itself, for a launcher runs for hours.
- At exit, after a command returned its code, Python would tear every module down and free
  every object one by one. `_leave` is registered with `atexit` first, so it runs last: after
  threads were joined and every other exit handler ran (logging's flush, finalizers), it
  flushes stdout and stderr and ends the process with the command's code. An exception or a
  `SystemExit` from argparse leaves the interpreter to exit as usual.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

_code: int | None = None  # the command's exit code, once it returned one


def run() -> None:
    global _code
    if sys.argv[1:] in (["--version"], ["-V"]):  # asked by scripts and bug reports: no parser
        from . import __version__

        print(f"wave {__version__}")
        return
    gc.disable()  # first: typing, dataclasses and the rest are imported below
    atexit.register(_leave)
    from .cli import main

    _code = main(before_command=collector_on)
    sys.exit(_code)


def collector_on() -> None:
    """Set-up is over: what it made lives as long as the process, out of the collector's way."""
    gc.freeze()
    gc.enable()


def _leave() -> None:
    if _code is None:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stream: Python reports it as usual
        return
    os._exit(_code)
