"""The marker grammar of SPEC 7.1: one machine-readable line an agent prints, such as
``[wave-gate] architecture=pass ...``; read from the output of an agent's last try only."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# Keys of each kind, in the order they must appear: (name, kind, required). A kind is a tuple
# of allowed words (case-insensitive), "int" (a non-negative integer) or "list" (a,b,c).
Field = tuple[str, tuple[str, ...] | str, bool]
PROOF_LEVELS = {
    "completion": ("contract", "integrated", "authoritative", "live"),
    "durability": ("none", "ephemeral", "durable"),
    "proof": ("unit", "integration", "live"),
}
DOC_LEVELS = ("none", "owned", "shared-plan")
GATE_DIMENSIONS = ("architecture", "integration", "durability", "live", "docs")
GATE_VALUES = ("pass", "concerns", "blocked")

KEYED: dict[str, list[Field]] = {
    "proof": [
        ("completion", PROOF_LEVELS["completion"], True),
        ("durability", PROOF_LEVELS["durability"], True),
        ("proof", PROOF_LEVELS["proof"], True),
        ("state", ("met", "gap"), True),
    ],
    "doc-delta": [("state", DOC_LEVELS, True), ("paths", "list", False)],
    "eval": [
        ("state", ("satisfied", "needs-more-work", "blocked"), True),
        ("targets", "int", True),
        ("benchmarks", "int", True),
        ("regressions", "int", True),
        ("target_ids", "list", False),
        ("benchmark_ids", "list", False),
    ],
    "security": [
        ("state", ("clear", "concerns", "blocked"), True),
        ("findings", "int", True),
        ("approvals", "int", True),
    ],
    "integration": [
        ("state", ("ready-for-doc-closure", "needs-more-work"), True),
        ("claims", "int", True),
        ("conflicts", "int", True),
        ("blockers", "int", True),
    ],
    "doc-closure": [("state", ("closed", "no-change", "delta"), True), ("paths", "list", False)],
    "gate": [(dim, GATE_VALUES, True) for dim in GATE_DIMENSIONS],
}
# Kinds whose value is one bare word after the tag; `detail=` allowed after a verdict only.
POSITIONAL = {
    "verdict": (("pass", "concerns", "blocked", "hold", "fail"), True),
    "phase": (("coding", "validating", "deploying", "finalizing"), False),
}
KINDS = (*KEYED, *POSITIONAL)

ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
TAG_RE = re.compile(r"\[wave-([a-z][a-z-]*)\](.*)", re.IGNORECASE)
INT_RE = re.compile(r"[0-9]+")
LIST_ITEM_RE = re.compile(r"[^,\s=]+")


@dataclass(frozen=True)
class Marker:
    kind: str
    values: dict[str, str | int | tuple[str, ...]]
    detail: str
    line: str

    def get(self, key: str) -> str | int | tuple[str, ...] | None:
        return self.values.get(key)


@dataclass(frozen=True)
class InvalidMarker:
    """A line that starts like a marker but does not parse: reported, never ignored."""

    kind: str
    line: str
    reason: str

    @property
    def code(self) -> str:
        return f"invalid-{self.kind}-marker"


@dataclass
class Markers:
    """The last marker of each kind (valid or not) in one agent's output."""

    last: dict[str, Marker | InvalidMarker] = field(default_factory=dict)
    invalid: list[InvalidMarker] = field(default_factory=list)

    def get(self, kind: str) -> Marker | InvalidMarker | None:
        return self.last.get(kind)


def clean_line(raw: str) -> str:
    """What a person sees of the line: no colour codes, only the text after the last `\\r`,
    without indentation, a list bullet, or one pair of surrounding backticks."""
    text = ANSI_RE.sub("", raw).rstrip("\r\n").rsplit("\r", 1)[-1].strip()
    if text[:2] in ("- ", "* "):
        text = text[2:].lstrip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and text.count("`") == 2:
        text = text[1:-1].strip()
    return text


def parse_line(raw: str) -> Marker | InvalidMarker | None:
    """A marker, an invalid marker, or None for a line that is not a marker at all."""
    text = clean_line(raw)
    match = TAG_RE.match(text)
    if not match:
        return None
    kind, rest = match.group(1).lower(), match.group(2)
    if kind not in KINDS:
        return InvalidMarker(kind, text, f"unknown marker kind [wave-{kind}]")
    if rest and not rest[0].isspace():
        return InvalidMarker(kind, text, "the tag must be followed by a space")
    body, detail = rest.strip(), ""
    cut = re.search(r"(?:^|\s)detail=", body)
    if cut:
        body, detail = body[: cut.start()].strip(), body[cut.end() :].strip()
    try:
        if kind in POSITIONAL:
            values = _positional(kind, body, bool(cut))
        else:
            values = _keyed(KEYED[kind], body.split())
    except ValueError as exc:
        return InvalidMarker(kind, text, str(exc))
    return Marker(kind, values, detail, text)


def _positional(kind: str, body: str, has_detail: bool) -> dict[str, str | int | tuple[str, ...]]:
    words, detail_ok = POSITIONAL[kind]
    tokens = body.split()
    if has_detail and not detail_ok:
        raise ValueError(f"[wave-{kind}] takes no detail")
    if len(tokens) != 1 or tokens[0].lower() not in words:
        raise ValueError(f"expected one of: {', '.join(words)}")
    return {"value": tokens[0].lower()}


def _keyed(fields: list[Field], tokens: list[str]) -> dict[str, str | int | tuple[str, ...]]:
    values: dict[str, str | int | tuple[str, ...]] = {}
    position = 0
    for token in tokens:
        key, eq, raw = token.partition("=")
        names = [f[0] for f in fields]
        if not eq or key not in names:
            raise ValueError(f"unexpected {token!r}")
        index = names.index(key)
        if index < position:
            raise ValueError(f"{key}= is out of order (expected order: {' '.join(names)})")
        for skipped in fields[position:index]:
            if skipped[2]:
                later = any(t.startswith(f"{skipped[0]}=") for t in tokens)
                order = " ".join(f[0] for f in fields)
                raise ValueError(
                    f"keys out of order (expected: {order})" if later else f"missing {skipped[0]}="
                )
        values[key] = _value(key, fields[index][1], raw)
        position = index + 1
    for missing in fields[position:]:
        if missing[2]:
            raise ValueError(f"missing {missing[0]}=")
    return values


def _value(key: str, kind: tuple[str, ...] | str, raw: str) -> str | int | tuple[str, ...]:
    if kind == "int":
        if not INT_RE.fullmatch(raw):
            raise ValueError(f"{key}= needs a non-negative integer, got {raw!r}")
        return int(raw)
    if kind == "list":
        items = tuple(x for x in raw.split(",") if x)
        if not items or not all(LIST_ITEM_RE.fullmatch(x) for x in items):
            raise ValueError(f"{key}= needs a comma-separated list, got {raw!r}")
        return items
    assert isinstance(kind, tuple)
    if raw.lower() not in kind:
        raise ValueError(f"{key}= must be one of: {', '.join(kind)}; got {raw!r}")
    return raw.lower()


def _string_leaves(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)


def _lines(text: str, strings: Callable[[object], Iterator[str]]) -> Iterator[str]:
    """Plain lines as they are; of a line holding one JSON event, the ``strings`` chosen from
    it, split into lines, in order. A torn JSON line is read as text."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
            try:
                event = json.loads(stripped)
            except ValueError:
                yield line
                continue
            for string in strings(event):
                yield from string.splitlines()
        else:
            yield line


def output_lines(text: str) -> Iterator[str]:
    """The lines an agent printed. With machine-readable output (codex --json, claude json or
    stream-json, opencode --format json) the agent's words sit inside JSON strings: every
    string of an event counts."""
    return _lines(text, _string_leaves)


TEXT_KEYS = frozenset({"text", "result", "message"})


def _text_fields(value: object) -> Iterator[str]:
    """The prose in an event: strings under text/result/message keys, not ids or types."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TEXT_KEYS and isinstance(item, str):
                yield item
            else:
                yield from _text_fields(item)
    elif isinstance(value, list):
        for item in value:
            yield from _text_fields(item)


def readable_lines(text: str) -> Iterator[str]:
    """What a person would read of the output: plain lines as they are, and of each JSON
    event only its prose (so the last line of a claude or codex JSON log is words, not ids)."""
    return _lines(text, _text_fields)


def parse_markers(text: str) -> Markers:
    """Every marker in ``text``; when a kind appears more than once, the last one counts."""
    found = Markers()
    for line in output_lines(text):
        item = parse_line(line)
        if item is None:
            continue
        found.last[item.kind] = item
        if isinstance(item, InvalidMarker):
            found.invalid.append(item)
    return found
