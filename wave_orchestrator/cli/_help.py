"""The parser every subcommand is built with: rich help loaded only when help is printed,
each command's examples and exit codes, and a wrong option answered with that command's usage.

Nothing heavy is imported here: `wave --version` and `wave status` must start as fast as a bare
interpreter allows (docs/performance.md), so rich-argparse loads only when a help text or a usage
error is actually written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# One meaning per code across every command; docs/cli.md lists the same table.
EXIT_CODES = {
    0: "done",
    1: "failed: a wave failed after its retries, a program it needs is missing, a wait timed out",
    2: "invalid input: a bad flag or value, an unknown lane, wave or agent, an invalid lane",
    3: "another launcher holds the lane (or a dead one left agent sessions running)",
    4: "blocked: nothing was safe to retry, or a question to a person got no answer in time",
    130: "interrupted by Ctrl-C (143: by SIGTERM, e.g. `wave stop`)",
}


# The exit codes each command (and each action of one) can return: its help prints them,
# docs/cli.md lists the meanings, tests/cli/test_help.py holds the two together.
COMMAND_EXIT_CODES: dict[str, tuple[int, ...]] = {
    "launch": (0, 1, 2, 3, 4, 130),
    "validate": (0, 2),
    "status": (0, 2),
    "ps": (0,),
    "attach": (0, 1, 2),
    "logs": (0, 1, 2),
    "summary": (0, 2),
    "dashboard": (0, 1, 2),
    "stop": (0, 1, 2, 3),
    "metrics": (0, 2),
    "desk": (0, 1, 2),
    "coord": (0, 2),
    "feedback": (0, 2, 4),
    "comment": (0, 2),
    "diff": (0, 1, 2),
    "rerun": (0, 1, 2, 3, 4, 130),
    "worktrees": (0, 1, 2),
    "lanes": (0, 2),
    "init": (0, 2),
    "completion": (0, 2),
    "doctor": (0, 1),
    "debug-info": (0,),
    "docs": (0, 2),
    "desk claim": (0, 2),
    "desk handover": (0, 2),
    "desk mine": (0, 2),
    "desk wait": (0, 1, 2),
    "desk status": (0, 2),
    "coord post": (0, 2),
    "coord show": (0, 2),
    "coord resolve": (0, 2),
    "coord inbox": (0, 2),
    "feedback ask": (0, 2, 4),
    "feedback list": (0, 2),
    "feedback show": (0, 2),
    "feedback respond": (0, 2),
    "feedback watch": (0, 2, 130),
    "worktrees list": (0, 2),
    "worktrees prune": (0, 1, 2),
}
# Examples of each action (a command's own are given where it is registered).
ACTION_EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "desk claim": (("wave desk claim src/app.py --intent 'add the route'", "as an agent"),),
    "desk handover": (("wave desk handover src/app.py --note 'route added'", ""),),
    "desk mine": (("wave desk mine", "what you hold and wait for"),),
    "desk wait": (("wave desk wait src/app.py --timeout 600", "until it is handed to you"),),
    "desk status": (("wave desk status --lane main --wave 1", "as a person"),),
    "coord post": (
        ("wave coord post --kind request --summary 'expose GET /items' --target agent:B", ""),
        ("wave coord post --kind blocker --summary 'schema undecided' --priority high", ""),
    ),
    "coord show": (("wave coord show --lane main --open", "the open items, newest first"),),
    "coord resolve": (("wave coord resolve c-5ad3e1f2 --lane main", "as a person"),),
    "coord inbox": (("wave coord inbox", "as an agent: what is for you"),),
    "feedback ask": (("wave feedback ask --question 'keep v1?' --wait --timeout-seconds 600", ""),),
    "feedback list": (("wave feedback list --lane main --pending", ""),),
    "feedback show": (("wave feedback show q-1a2b3c4d --lane main", ""),),
    "feedback respond": (
        ("wave feedback respond q-1a2b3c4d --lane main --response 'yes, keep it'", ""),
    ),
    "feedback watch": (("wave feedback watch --lane main", "Ctrl-C ends it"),),
    "worktrees list": (("wave worktrees list --lane main", ""),),
    "worktrees prune": (
        ("wave worktrees prune --lane main", "the worktrees of ended waves"),
        ("wave worktrees prune --lane main --branches", "and the merged wave branches"),
    ),
}


def examples_text(examples: Sequence[tuple[str, str]]) -> str:
    width = max(len(cmd) for cmd, _ in examples) if examples else 0
    lines = ["examples:"]
    lines += [f"  {cmd:<{width}}  # {why}" if why else f"  {cmd}" for cmd, why in examples]
    return "\n".join(lines)


def action_epilog(prog: str) -> str:
    """The examples and exit codes of one action (``wave desk claim``), from the tables."""
    name = prog.removeprefix("wave ")
    return examples_text(ACTION_EXAMPLES[name]) + "\n\n" + exit_codes_text(COMMAND_EXIT_CODES[name])


def _styled() -> bool:
    """Help is drawn by rich only for a person at a terminal that takes colour."""
    import os

    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _checking_formatter(prog: str) -> argparse.HelpFormatter:
    """The formatter argparse builds for each add_argument to check its metavar: its width is
    never seen, so it is fixed rather than asked of the terminal (which loads shutil)."""
    return argparse.RawDescriptionHelpFormatter(prog, width=80)


def _formatter(prog: str) -> argparse.HelpFormatter:
    """rich-argparse, imported on first use: only help and usage errors pay for rich."""
    from rich_argparse import RawDescriptionRichHelpFormatter

    return RawDescriptionRichHelpFormatter(prog)


class WaveParser(argparse.ArgumentParser):
    """An ArgumentParser whose help is drawn by rich-argparse and whose errors name the
    subcommand that was mistyped (argparse reports leftovers against the top level)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # argparse builds a formatter for every add_argument (to check metavars): that one
        # stays a plain one; rich or the terminal-wide plain one draws the texts people read.
        kwargs.setdefault("formatter_class", _checking_formatter)
        super().__init__(*args, **kwargs)
        self.set_defaults(_wave_parser=self)

    # A command's description is wrapped when it is read (for its help), not when the command
    # is registered: `textwrap` then loads for help only, not for every command that runs.
    _description: str | None
    _unwrapped: str | None

    @property
    def description(self) -> str | None:
        if self._unwrapped is not None:
            self._description, self._unwrapped = wrap(self._unwrapped), None
        return self._description

    @description.setter
    def description(self, text: str | None) -> None:
        self._description, self._unwrapped = text, None

    def wrap_description(self, text: str) -> None:
        """``text`` (paragraphs) becomes the description, wrapped when it is first read."""
        self._unwrapped = text

    def format_help(self) -> str:
        return self._with_rich(super().format_help)

    def format_usage(self) -> str:
        return self._with_rich(super().format_usage)

    def _with_rich(self, render: Any) -> str:
        styled = _styled()  # piped or NO_COLOR: the same text, without loading rich (~50 ms)
        checking = self.formatter_class
        self.formatter_class = _formatter if styled else argparse.RawDescriptionHelpFormatter
        try:
            text = str(render())
        finally:
            self.formatter_class = checking
        return "Usage:" + text[6:] if not styled and text.startswith("usage:") else text

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            deepest: argparse.ArgumentParser = getattr(parsed, "_wave_parser", self)
            deepest.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def add_command(
    sub: Any,
    name: str,
    summary: str,
    description: str,
    examples: Sequence[tuple[str, str]],
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """One subcommand with its one-line summary, its paragraph, examples and exit codes (from
    COMMAND_EXIT_CODES)."""
    epilog = examples_text(examples) + "\n\n" + exit_codes_text(COMMAND_EXIT_CODES[name])
    parser: argparse.ArgumentParser = sub.add_parser(name, help=summary, epilog=epilog, **kwargs)
    if isinstance(parser, WaveParser):
        parser.wrap_description(description)
    else:
        parser.description = wrap(description)
    return parser


def wrap(text: str, width: int = 78) -> str:
    """A description as lines a terminal shows whole (the help keeps line breaks as given)."""
    import textwrap

    return "\n".join(textwrap.fill(part, width) for part in text.split("\n"))


def exit_codes_text(codes: Sequence[int]) -> str:
    """The `exit codes:` block of a command's help (docs/cli.md has the same table)."""
    return "\n".join(["exit codes:", *(f"  {code:<3}  {EXIT_CODES[code]}" for code in codes)])
