"""`wave completion bash|zsh|fish`: the shell script that completes wave's commands, options,
lane names and agent ids (argcomplete: one library for all three shells, asking `wave` itself,
so completions follow the parser and the repository you are in)."""

from __future__ import annotations

import argparse
from typing import Any

from ._help import add_command

SHELLS = ("bash", "zsh", "fish")


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "completion",
        "print the shell completion script (bash, zsh, fish)",
        "Print a script that teaches your shell to complete wave's commands and options, and "
        "the lane names and agent ids of the repository you are in. Load it from your shell's "
        "start-up file, or save it where your shell looks for completions (docs/cli.md).",
        [
            ('eval "$(wave completion bash)"', "in ~/.bashrc"),
            ('eval "$(wave completion zsh)"', "in ~/.zshrc (after compinit)"),
            ("wave completion fish > ~/.config/fish/completions/wave.fish", ""),
        ],
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for: " + ", ".join(SHELLS))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    print(shellcode(["wave"], shell=args.shell))
    return 0
