"""The `wave` console script: one module per subcommand, exit codes mapped here only.

Start-up speed matters (docs/performance.md): the subcommand modules import only argparse-level
things at the top and load the runtime, tmux, rich or sqlite inside their handlers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import LaneInvalid, WaveError
from . import (
    attach,
    comment,
    completion,
    coord,
    dashboard,
    debug_info,
    desk,
    feedback,
    init,
    lanes,
    launch,
    logs,
    metrics,
    ps,
    status,
    stop,
    validate,
    worktrees,
)
from ._help import WaveParser

COMMANDS = (
    launch,
    validate,
    status,
    ps,
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
    completion,
    debug_info,
)

DESCRIPTION = """\
Launch fleets of AI coding agents in waves, each in its own tmux session.

A lane (lanes/<name>/lane.yaml) holds numbered waves (waves/wave-<n>.yaml); `wave launch` runs
them one after the other, judges each wave's closure gates and records what happened under
.wave/<lane>/. Run `wave COMMAND --help` for a command's options, examples and exit codes."""

EPILOG = """\
examples:
  wave init --demo && wave launch --lane demo    # try it with the bundled demo lane
  wave validate                                  # check the lane files
  wave launch --dry-run                          # preview prompts and commands
  wave launch --detach && wave dashboard         # run in the background and watch

environment: WAVE_REPO and WAVE_LANE choose the repository and lane for every command;
NO_COLOR turns colour off. Docs: docs/cli.md."""


def build_parser() -> WaveParser:
    parser = WaveParser(prog="wave", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "-V", "--version", action="version", version=f"wave {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer and exit
        import argcomplete

        argcomplete.autocomplete(parser)
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(raw)
    if args.command is None:  # bare `wave`: the help, like git and tmuxp
        parser.print_help()
        return 0
    args.raw_argv = raw
    try:
        return int(args.handler(args) or 0)
    except LaneInvalid as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) found; nothing was launched.", file=sys.stderr)
        return exc.exit_code
    except WaveError as exc:
        print(f"wave: {exc}", file=sys.stderr)
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
