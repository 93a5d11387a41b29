"""Small typed field checks that collect every problem with its YAML position.

Each check returns the value when it is valid and ``None`` (after recording a problem) when it
is not, so a loader can keep going and report all errors at once.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Iterable
from typing import Any

from ...errors import LaneProblem
from .yaml_source import FieldPath, Located

MISSING: Any = object()


def format_path(path: FieldPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def did_you_mean(given: Any, options: Iterable[str]) -> str:
    """`; did you mean 'timeout_minutes'?` for a near miss (difflib), else nothing."""
    if not isinstance(given, str):
        return ""
    import difflib  # only for a name that is not known: most files load without it

    close = difflib.get_close_matches(given, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Checker:
    """Validates one file's parsed data; problems accumulate in ``problems``."""

    def __init__(self, display_file: str, doc: Located, problems: list[LaneProblem]) -> None:
        self.file = display_file
        self.doc = doc
        self.problems = problems
        for dup in doc.duplicate_keys:
            self.error(dup, "duplicate key", key=True)

    def error(
        self, path: FieldPath, message: str, expected: str | None = None, *, key: bool = False
    ) -> None:
        line, col = self.doc.mark(path, key=key)
        text = f"{message} (expected {expected})" if expected else message
        self.problems.append(LaneProblem(self.file, line, col, format_path(path), text))

    def wrong_type(self, path: FieldPath, value: Any, expected: str) -> None:
        self.error(path, f"wrong type: {type_name(value)}", expected)

    def mapping(
        self, value: Any, path: FieldPath, allowed: Collection[str]
    ) -> dict[str, Any] | None:
        """A mapping whose keys are all in ``allowed``; unknown keys are errors, never ignored."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.wrong_type(path, value, "a mapping")
            return None
        for key in value:
            if key not in allowed:
                self.error(
                    (*path, key),
                    "unknown key" + did_you_mean(key, allowed),
                    "one of: " + ", ".join(sorted(allowed)),
                    key=True,
                )
        return value

    def string(
        self,
        value: Any,
        path: FieldPath,
        *,
        choices: Iterable[str] | None = None,
        pattern: re.Pattern[str] | None = None,
        what: str = "a string",
        noun: str = "value",
    ) -> str | None:
        if not isinstance(value, str):
            self.wrong_type(path, value, what)
            return None
        if choices is not None:
            options = sorted(choices)
            if value not in options:
                self.error(
                    path,
                    f"unknown {noun} {value!r}" + did_you_mean(value, options),
                    "one of: " + ", ".join(options),
                )
                return None
        if pattern is not None and not pattern.fullmatch(value):
            self.error(path, f"invalid {noun} {value!r}", f"to match {pattern.pattern}")
            return None
        return value

    def number(
        self,
        value: Any,
        path: FieldPath,
        *,
        minimum: float = 0,
        integer: bool = False,
        positive: bool = False,
        limits: tuple[float, float] | None = None,
    ) -> float | None:
        """A finite number; ``limits`` is the (low, high) range it must fall in, inclusive
        (``positive`` makes the low end exclusive)."""
        kind = "an integer" if integer else "a number"
        if limits is not None:
            minimum = limits[0]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.wrong_type(path, value, kind)
            return None
        if not math.isfinite(value):
            self.error(path, f"not a finite number: {value}", kind)
            return None
        if integer and not isinstance(value, int):
            self.error(path, f"not an integer: {value}", kind)
            return None
        if positive and value <= 0:
            self.error(path, f"must be greater than 0, got {value}", f"{kind} > 0")
            return None
        high = limits[1] if limits is not None else math.inf
        if not minimum <= value <= high:
            low = value < minimum
            self.error(
                path,
                f"must be at {'least' if low else 'most'} "
                f"{_fmt(minimum if low else high)}, got {value}",
                f"{kind} from {_fmt(minimum)} to {_fmt(high)}"
                if limits is not None
                else f"{kind} >= {_fmt(minimum)}",
            )
            return None
        return value

    def boolean(self, value: Any, path: FieldPath) -> bool | None:
        if not isinstance(value, bool):
            self.wrong_type(path, value, "true or false")
            return None
        return value

    def string_list(
        self,
        value: Any,
        path: FieldPath,
        *,
        choices: Iterable[str] | None = None,
        noun: str = "value",
    ) -> list[str] | None:
        if value is None:
            return []
        if not isinstance(value, list):
            self.wrong_type(path, value, "a list of strings")
            return None
        out: list[str] = []
        ok = True
        for i, item in enumerate(value):
            checked = self.string(item, (*path, i), choices=choices, noun=noun)
            if checked is None:
                ok = False
            else:
                out.append(checked)
        return out if ok else None

    def regex_list(self, value: Any, path: FieldPath) -> list[str] | None:
        """Patterns that run.sh hands to `grep -E`, so they are checked as extended regexes."""
        items = self.string_list(value, path)
        if items is None:
            return None
        ok = True
        for i, item in enumerate(items):
            problem = ere_problem(item)
            if problem:
                self.error(
                    (*path, i),
                    f"invalid pattern {item}: {problem}",  # as written: no doubled backslashes
                    "an extended regex (grep -E)",
                )
                ok = False
        return items if ok else None


def _fmt(bound: float) -> str:
    return f"{bound:g}" if bound < 1e6 else f"{bound:,.0f}".replace(",", "_")


PERL_ONLY = re.compile(r"\\[dDhHAzZ]|\(\?")


def ere_problem(pattern: str) -> str | None:
    """Why `grep -E` would not match ``pattern`` as its author meant, or None."""
    if not pattern:
        return "empty pattern matches everything"
    if PERL_ONLY.search(pattern):
        return "Perl-style syntax ((?...), \\d and the like) is not extended-regex syntax"
    import subprocess  # only for a lane that writes its own patterns

    result = subprocess.run(
        ["grep", "-E", "-e", pattern],
        input=b"",
        capture_output=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
        check=False,
    )
    if result.returncode == 2 or result.stderr:
        return (
            result.stderr.decode(errors="replace").strip().removeprefix("grep: ")
            or "rejected by grep"
        )
    return None
