"""Help, version and usage errors (issue 14): what a daily user meets first."""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo

from wave_orchestrator import __version__
from wave_orchestrator.cli import COMMANDS, build_parser
from wave_orchestrator.cli._help import COMMAND_EXIT_CODES, EXIT_CODES


def wave(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**repo.env, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "wave_orchestrator", *args],
        cwd=repo.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(repo: Repo, flag: str) -> None:
    done = wave(repo, flag)
    assert done.returncode == 0 and done.stdout.strip() == f"wave {__version__}"


def test_bare_wave_prints_the_help_and_exits_0(repo: Repo) -> None:
    done = wave(repo)
    assert done.returncode == 0, done.stderr
    assert "Usage: wave" in done.stdout and "examples:" in done.stdout
    for name in COMMANDS:
        assert name in done.stdout


def test_the_top_level_lists_each_command_with_its_own_summary() -> None:
    """The summaries `wave --help` shows without importing the modules are theirs."""
    full = subparsers(build_parser())
    choices = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    shown = {c.dest: c.help for c in choices._choices_actions}
    assert list(full) == list(COMMANDS)
    assert shown == COMMANDS


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_documents_itself(name: str) -> None:
    parser = subparsers(build_parser())[name]
    assert parser.description and len(parser.description) > 60, "a one-paragraph description"
    epilog = parser.epilog or ""
    assert "examples:" in epilog and epilog.count("\n  wave ") >= 1, "examples"
    assert "exit codes:" in epilog and "  0" in epilog, "exit codes"
    for sub in [parser, *subparsers(parser).values()]:
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"wave {name}: {action.option_strings or action.dest} has no help"
        assert sub.description, f"{sub.prog} has no description"


@pytest.mark.parametrize(
    "args,usage",
    [
        (["validate", "--bogus"], "wave validate"),
        (["status", "--nope", "1"], "wave status"),
        (["desk", "claim", "x", "--bogus"], "wave desk claim"),
        (["launch", "--start-wave", "x"], "wave launch"),
    ],
)
def test_a_wrong_option_shows_that_commands_usage(repo: Repo, args: list[str], usage: str) -> None:
    done = wave(repo, *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"Usage: {usage} "), done.stderr
    assert f"see `{usage} --help`" in done.stderr


def test_unknown_command_is_a_usage_error(repo: Repo) -> None:
    done = wave(repo, "lanez")
    assert done.returncode == 2 and "invalid choice: 'lanez'" in done.stderr


def test_subcommand_help_shows_examples_and_exit_codes(repo: Repo) -> None:
    done = wave(repo, "launch", "--help")
    assert done.returncode == 0
    for text in ("--start-wave N", "first wave to run", "examples:", "exit codes:", "3 "):
        assert text in done.stdout


def _every_parser() -> dict[str, argparse.ArgumentParser]:
    found = {}
    for name, parser in subparsers(build_parser()).items():
        found[name] = parser
        for action, sub in subparsers(parser).items():
            found[f"{name} {action}"] = sub
    return found


def test_every_command_and_action_lists_the_exit_codes_of_the_one_table() -> None:
    """The help of each command and of each action (`wave desk claim`) ends with examples and
    the codes COMMAND_EXIT_CODES gives it; docs/cli.md's table is the same table."""
    parsers = _every_parser()
    assert sorted(parsers) == sorted(COMMAND_EXIT_CODES)
    for name, parser in parsers.items():
        epilog = parser.epilog or ""
        assert "examples:\n  " in epilog and "wave " in epilog.split("exit codes:")[0], name
        block = epilog.split("exit codes:\n", 1)[1].splitlines()
        listed = [int(line.split()[0]) for line in itertools.takewhile(str.strip, block)]
        assert tuple(listed) == COMMAND_EXIT_CODES[name], name
        assert all(code in EXIT_CODES for code in listed)
    docs = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    table = docs.split("<!-- exit codes by command -->\n", 1)[1].split("\n\n", 1)[0]
    shown = {
        row.split("`")[1].removeprefix("wave "): tuple(int(c) for c in row.split("|")[2].split(","))
        for row in table.splitlines()[2:]
    }
    assert shown == COMMAND_EXIT_CODES


def test_launch_and_stop_list_what_they_can_return(repo: Repo) -> None:
    assert "  4    blocked" in wave(repo, "launch", "--help").stdout
    assert "  3    another launcher" in wave(repo, "stop", "--help").stdout


def test_descriptions_are_wrapped_for_an_80_column_terminal() -> None:
    for name, parser in _every_parser().items():
        for line in (parser.description or "").splitlines():
            assert len(line) <= 80, (name, line)
