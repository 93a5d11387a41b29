"""The `wave` console script: one module per subcommand, exit codes mapped here only."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from ..errors import LaneInvalid, WaveError
from ..sanitize import strip_controls
from . import (
    attach,
    comment,
    coord,
    dashboard,
    desk,
    feedback,
    init,
    lanes,
    launch,
    logs,
    metrics,
    status,
    stop,
    validate,
    worktrees,
)

COMMANDS = (
    launch,
    validate,
    status,
    attach,
    logs,
    dashboard,
    stop,
    metrics,
    desk,
    coord,
    feedback,
    comment,
    worktrees,
    lanes,
    init,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wave",
        description="Launch fleets of AI coding agents in waves, each in its own tmux session.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path that is not UTF-8 is shown, not fatal
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    parser = build_parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(raw)
    args.raw_argv = raw
    try:
        return int(args.handler(args) or 0)
    except LaneInvalid as exc:
        for problem in exc.problems:
            print(strip_controls(str(problem)), file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) found; nothing was launched.", file=sys.stderr)
        return exc.exit_code
    except WaveError as exc:  # may quote an agent's or a file's words: shown, never obeyed
        print(f"wave: {strip_controls(str(exc), newlines=True)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `wave status --json | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
    except OSError as exc:  # a full disk, a read-only folder: what failed, where; no trace
        where = f": {exc.filename}" if exc.filename else ""
        print(f"wave: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
