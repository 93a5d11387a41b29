"""The `wave` console script: one module per subcommand, exit codes mapped here only.

Start-up speed matters (docs/performance.md): the subcommand modules import only argparse-level
things at the top and load the runtime, tmux, rich or sqlite inside their handlers.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from .. import __version__
from ..errors import LaneInvalid, WaveError
from ._help import COMMAND_EXIT_CODES, WaveParser

# Every command, in the order `wave --help` lists them, with its one-line summary. Only the
# module of the command being run is imported (`wave --version` imports none): start-up is
# most of what a read-only command costs. tests/cli/test_help.py checks each summary against
# the one its module registers.
COMMANDS: dict[str, str] = {
    "launch": "run a lane's waves (or preview them with --dry-run)",
    "validate": "validate a lane; exit 0 when valid, 2 when not",
    "status": "run state: waves, agents, launcher",
    "ps": "list running launchers across repositories",
    "attach": "attach to an agent's tmux session",
    "logs": "print (or follow) an agent's output log, or the launcher's",
    "summary": "an agent's execution summary: markers, files, how it ended, the gate's verdict",
    "dashboard": "live dashboard of the lane's current wave",
    "stop": "stop the running launcher (agents stopped, wave cancelled)",
    "metrics": "runs, success rate, durations, tokens and cost per model and reasoning",
    "desk": "file claims for agents that share files",
    "coord": "the wave's coordination log: post, show, resolve, inbox",
    "feedback": "questions from agents to a person: ask, list, show, respond, watch",
    "comment": "leave guidance for a running agent (or every agent of a wave)",
    "diff": "show an agent's work: its branch against the commit it started from",
    "rerun": "run one agent again: now in the running wave, else its last wave and the closure",
    "worktrees": "list or remove leftover worktrees and wave branches (isolation: worktree)",
    "lanes": "list lanes with their wave counts and last result",
    "init": "scaffold lanes/main/ and add .wave/ to .gitignore",
    "completion": "print the shell completion script (bash, zsh, fish)",
    "doctor": "check lanes, agent CLIs and their logins, tmux, git, Slurm and state dirs",
    "debug-info": "print versions, repository, lanes, sockets and state dirs for a bug report",
    "docs": "print the user documentation (the pages shipped with wave)",
}


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")


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

--repo PATH and --lane LANE may also come before the command (`wave --repo ../proj status`).
environment: WAVE_REPO and WAVE_LANE choose the repository and lane for every command;
NO_COLOR turns colour off. Docs: `wave docs` (every page; `wave docs cli` for the commands)."""


def build_parser(argv: Sequence[str] | None = None) -> WaveParser:
    """The whole parser; given ``argv``, only the command it names is built in full. When the
    line starts with a known command, the others are left out: nothing will show them, and
    each costs an ArgumentParser. Otherwise (`wave`, `wave -h`, a misspelt command) they are
    listed by their summary alone, which is all the top-level help and errors show of them."""
    parser = WaveParser(prog="wave", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "-V", "--version", action="version", version=f"wave {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    chosen = _command_in(argv) if argv is not None else None
    for name, summary in COMMANDS.items():
        if argv is None or name == chosen:
            command_module(name).register(sub)
        elif not (argv and argv[0] == chosen and chosen in COMMANDS):
            sub.add_parser(name, help=summary, add_help=False)
    return parser


GLOBAL_OPTIONS = ("--repo", "--lane")  # may come before the command, as `git -C`
# The global options a command has no use for (it reads no lane, or no repository): given
# before it they are dropped, as $WAVE_LANE is ignored there. tests/cli checks it.
IGNORES_GLOBAL: dict[str, tuple[str, ...]] = {
    "ps": GLOBAL_OPTIONS,
    "completion": GLOBAL_OPTIONS,
    "docs": GLOBAL_OPTIONS,
    "lanes": ("--lane",),
    "doctor": ("--lane",),
    "debug-info": ("--lane",),
}
# Commands whose options belong to their actions (`wave coord show --lane X`).
WITH_ACTIONS = frozenset(key.split()[0] for key in COMMAND_EXIT_CODES if " " in key)


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """``wave --repo PATH status`` as ``wave status --repo PATH``: the options every command
    shares, given before the command, are moved after it, or after its action for a command
    that has actions (``wave --lane X coord show`` as ``wave coord show --lane X``)."""
    leading: list[str] = []
    moved: list[tuple[str, list[str]]] = []  # (option, its words)
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name = argv[i].split("=", 1)[0]
        if name in GLOBAL_OPTIONS and "=" in argv[i]:
            moved.append((name, [argv[i]]))
        elif name in GLOBAL_OPTIONS and i + 1 < len(argv):
            moved.append((name, list(argv[i : i + 2])))
            i += 1
        else:
            leading.append(argv[i])
        i += 1
    if not moved or i >= len(argv):
        return list(argv)
    command, rest = argv[i], list(argv[i + 1 :])
    ignored = IGNORES_GLOBAL.get(command, ())
    kept = [word for name, words in moved if name not in ignored for word in words]
    at = 0
    if command in WITH_ACTIONS:  # after the action; none given: its own usage error
        at = next((n + 1 for n, word in enumerate(rest) if not word.startswith("-")), -1)
        if at < 0:
            return [*leading, command, *rest]
    return [*leading, command, *rest[:at], *kept, *rest[at:]]


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named on the line: the first word that is not an option (the top level's
    only options, -h and -V, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(
    argv: Sequence[str] | None = None, before_command: Callable[[], None] | None = None
) -> int:
    """Run one command and return its exit code; ``before_command`` is called once the
    arguments are parsed (the console entry turns the garbage collector back on there)."""
    for stream in (sys.stdout, sys.stderr):  # a path that is not UTF-8 is shown, not fatal
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    raw = hoist_global_options(sys.argv[1:] if argv is None else argv)
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer and exit
        import argcomplete

        argcomplete.autocomplete(build_parser())
    parser = build_parser(raw)
    args = parser.parse_args(raw)
    if args.command is None:  # bare `wave`: the help, like git and tmuxp
        parser.print_help()
        return 0
    args.raw_argv = raw
    if before_command is not None:
        before_command()
    try:
        return int(args.handler(args) or 0)
    except LaneInvalid as exc:
        from ..sanitize import strip_controls  # regexes compiled only for an error to show

        for problem in exc.problems:
            print(strip_controls(str(problem)), file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) found; nothing was launched.", file=sys.stderr)
        return exc.exit_code
    except WaveError as exc:  # may quote an agent's or a file's words: shown, never obeyed
        from ..sanitize import strip_controls

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
