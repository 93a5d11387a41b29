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
    exit_codes: Sequence[int] = (0, 1, 2),
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """One subcommand with its one-line summary, its paragraph, examples and exit codes."""
    width = max(len(cmd) for cmd, _ in examples) if examples else 0
    lines = ["examples:"]
    lines += [f"  {cmd:<{width}}  # {why}" if why else f"  {cmd}" for cmd, why in examples]
    lines += ["", exit_codes_text(exit_codes)]
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=description, epilog="\n".join(lines), **kwargs
    )
    return parser


def exit_codes_text(codes: Sequence[int]) -> str:
    """The `exit codes:` block of a command's help (docs/cli.md has the same table)."""
    return "\n".join(["exit codes:", *(f"  {code:<3}  {EXIT_CODES[code]}" for code in codes)])
