"""The verdict a cont-QA report states in words: its last ``Verdict:`` line, read in bounded
memory (an agent's report may be any size, a line any length)."""

from __future__ import annotations

import re
from pathlib import Path

REPORT_LINE_BYTES = 64 * 1024  # a verdict line is short; longer lines are skipped
VERDICTS = {
    "pass": "pass",
    "concerns": "concerns",
    "hold": "concerns",
    "blocked": "blocked",
    "fail": "blocked",
}


def report_verdict(report: Path | None) -> str | None:
    """The first word of the last `Verdict:` line (markdown emphasis and punctuation ignored).
    Read line by line, a long line in pieces: an agent's report may be any size."""
    try:
        lines = _report_lines(report) if report else []
    except OSError:
        return None
    verdict = None
    for line in lines:
        head, sep, value = line.strip().lstrip("*#-> ").partition(":")
        if sep and head.strip("*_ ").lower() == "verdict":
            words = re.findall(r"[A-Za-z]+", value)
            verdict = words[0].lower() if words else ""
    return verdict


def _report_lines(report: Path) -> list[str]:
    """The lines of a report that may name a verdict (short ones), in bounded memory."""
    out = []
    carry = False  # inside a line longer than REPORT_LINE_BYTES: no verdict there
    with report.open("rb") as fh:
        while piece := fh.readline(REPORT_LINE_BYTES):
            ends = piece.endswith(b"\n")
            if not carry and (ends or len(piece) < REPORT_LINE_BYTES) and b":" in piece:
                out.append(piece.decode("utf-8", "replace"))
            carry = not ends and len(piece) == REPORT_LINE_BYTES
    return out
