"""The marker grammar: one machine-readable line an agent prints, such as
``[wave-gate] architecture=pass ...``; read from the output of an agent's last try only, and of
that output only from what the agent itself said (see ``transcript``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from ..definitions.signal_words import DEPLOY_STATES
from ..names import AGENT_ID_RE
from .transcript import ANSI_RE, output_lines, readable_lines, spoken_messages

__all__ = [
    "ANSI_RE",
    "DEPLOY_STATES",
    "DOC_LEVELS",
    "GATE_DIMENSIONS",
    "PROOF_LEVELS",
    "InvalidMarker",
    "Marker",
    "Markers",
    "clean_line",
    "output_lines",
    "outside_examples",
    "parse_line",
    "parse_markers",
    "readable_lines",
]

# Keys of each kind, in the order they must appear: (name, kind, required). A kind is a tuple
# of allowed words (case-insensitive), "int" (a non-negative integer), "list" (a,b,c) or
# "word" (any one word: a name, or a state the gate judges rather than the grammar).
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
    # Signals of the reference launcher, printed without the wave- prefix (either is read):
    # an infrastructure check's outcome, and a deployment's state (closure/signals.py).
    "infra-status": [("kind", "word", True), ("target", "word", True), ("state", "word", True)],
    # One per component an agent owns, and any number of gaps it noticed.
    "component": [
        ("component", "word", True),
        ("level", "word", True),
        ("state", ("met", "gap"), True),
    ],
    "gap": [("kind", "word", True)],
    "deploy-status": [("service", "word", True), ("state", DEPLOY_STATES, True)],
}
# Kinds whose value is one bare word after the tag: (words, whether `agents=`/`detail=` may follow).
POSITIONAL = {
    "verdict": (("pass", "concerns", "blocked", "hold", "fail"), True),
    "phase": (("coding", "validating", "deploying", "finalizing"), False),
}
KINDS = (*KEYED, *POSITIONAL)
# Names the implementation agents a closure result is about (so a failed gate can rerun them);
# allowed on every keyed kind and on a verdict, anywhere before `detail=`. `owner=` is an alias.
AGENT_KEYS = ("agents", "owner")

TAG_RE = re.compile(r"\[(?:wave-([a-z][a-z-]*)|(infra-status|deploy-status))\](.*)", re.IGNORECASE)
WORD_RE = re.compile(r"[^\s=,<>|]+")
INT_RE = re.compile(r"[0-9]+")
LIST_ITEM_RE = re.compile(r"[^,\s=<>|]+")  # a `<placeholder>` is not a value
FENCE_RE = re.compile(r"(`{3,}|~{3,})(.*)")

Value = str | int | tuple[str, ...]


class Marker(NamedTuple):
    kind: str
    values: dict[str, Value]
    detail: str
    line: str

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    @property
    def agents(self) -> tuple[str, ...]:
        """The agent ids named by `agents=` (or `owner=`); empty when none were given."""
        named = self.values.get("agents", ())
        return named if isinstance(named, tuple) else ()


class InvalidMarker(NamedTuple):
    """A line that starts like a marker but does not parse: reported, never ignored."""

    kind: str
    line: str
    reason: str

    @property
    def code(self) -> str:
        return f"invalid-{self.kind}-marker"


@dataclass
class Markers:
    """The markers in one agent's output. Of each kind the last *valid* one counts: an agent
    that restates a template or prints a partial line after its real marker has still said it.
    Only when no line of a kind parses does the last invalid one stand (and fail the gate)."""

    last: dict[str, Marker | InvalidMarker] = field(default_factory=dict)
    invalid: list[InvalidMarker] = field(default_factory=list)  # every invalid line, in order
    ignored: dict[str, list[InvalidMarker]] = field(default_factory=dict)  # after a valid one
    components: dict[str, Marker] = field(default_factory=dict)  # the last one per component
    gaps: list[Marker] = field(default_factory=list)  # every valid [wave-gap], in order

    def get(self, kind: str) -> Marker | InvalidMarker | None:
        return self.last.get(kind)

    def add(self, item: Marker | InvalidMarker) -> None:
        if isinstance(item, Marker) and item.kind == "component":
            self.components[str(item.get("component"))] = item
        elif isinstance(item, Marker) and item.kind == "gap":
            self.gaps.append(item)
        if isinstance(item, Marker):
            self.last[item.kind] = item
            self.ignored.pop(item.kind, None)
            return
        self.invalid.append(item)
        if isinstance(self.last.get(item.kind), Marker):
            self.ignored.setdefault(item.kind, []).append(item)
        else:
            self.last[item.kind] = item

    def warnings(self, kind: str) -> list[str]:
        """One sentence per invalid `[wave-<kind>]` line that came after the valid marker that
        counts: not an error, but the agent may have meant to say something else."""
        return [
            f"ignored a later invalid [wave-{kind}] line ({item.reason}): {item.line}"
            for item in self.ignored.get(kind, [])
        ]


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
    kind, rest = (match.group(1) or match.group(2)).lower(), match.group(3)
    if kind not in KINDS:
        return InvalidMarker(kind, text, f"unknown marker kind [wave-{kind}]")
    if rest and not rest[0].isspace():
        return InvalidMarker(kind, text, "the tag must be followed by a space")
    body, detail = rest.strip(), ""
    cut = re.search(r"(?:^|\s)detail=", body)
    if cut:
        body, detail = body[: cut.start()].strip(), body[cut.end() :].strip()
    # `paths=a.md, b.md` is one list; a sentence's full stop (`[wave-verdict] pass.`) is not
    # part of the last value.
    body = re.sub(r"\s*,\s*", ",", body)
    if body.endswith("."):
        body = body[:-1].rstrip()
    words, agents = body.split(), None
    try:
        if kind in KEYED or POSITIONAL[kind][1]:
            words, agents = _take_agents(words)
        if kind in POSITIONAL:
            values = _positional(kind, words, bool(cut))
        else:
            values = _keyed(KEYED[kind], words)
    except ValueError as exc:
        return InvalidMarker(kind, text, str(exc))
    if agents is not None:
        values["agents"] = agents
    return Marker(kind, values, detail, text)


def _take_agents(words: list[str]) -> tuple[list[str], tuple[str, ...] | None]:
    """The words without `agents=`/`owner=`, and the ids it names (None when not given)."""
    rest: list[str] = []
    agents: tuple[str, ...] | None = None
    for word in words:
        key, eq, raw = word.partition("=")
        if not (eq and key in AGENT_KEYS):
            rest.append(word)
            continue
        if agents is not None:
            raise ValueError("agents= (or owner=) may be given once")
        agents = tuple(dict.fromkeys(x for x in raw.split(",") if x))
        if not all(AGENT_ID_RE.match(x) for x in agents):
            raise ValueError(f"{key}= needs comma-separated agent ids, got {raw!r}")
    return rest, agents


def _positional(kind: str, words: list[str], has_detail: bool) -> dict[str, Value]:
    allowed, extras_ok = POSITIONAL[kind]
    if has_detail and not extras_ok:
        raise ValueError(f"[wave-{kind}] takes no detail")
    if len(words) != 1 or words[0].lower() not in allowed:
        raise ValueError(f"expected one of: {', '.join(allowed)}")
    return {"value": words[0].lower()}


def _keyed(fields: list[Field], tokens: list[str]) -> dict[str, Value]:
    values: dict[str, Value] = {}
    position = 0
    names = [f[0] for f in fields]
    for token in tokens:
        key, eq, raw = token.partition("=")
        if not eq or key not in names:
            raise ValueError(f"unexpected {token!r}")
        index = names.index(key)
        if index < position:
            raise ValueError(f"{key}= is out of order (expected order: {' '.join(names)})")
        for skipped in fields[position:index]:
            if skipped[2]:
                later = any(t.startswith(f"{skipped[0]}=") for t in tokens)
                order = " ".join(names)
                raise ValueError(
                    f"keys out of order (expected: {order})" if later else f"missing {skipped[0]}="
                )
        values[key] = _value(key, fields[index][1], raw)
        position = index + 1
    for missing in fields[position:]:
        if missing[2]:
            raise ValueError(f"missing {missing[0]}=")
    return values


def _value(key: str, kind: tuple[str, ...] | str, raw: str) -> Value:
    if kind == "int":
        if not INT_RE.fullmatch(raw):
            raise ValueError(f"{key}= needs a non-negative integer, got {raw!r}")
        return int(raw)
    if kind == "word":
        if not WORD_RE.fullmatch(raw):
            raise ValueError(f"{key}= needs one word, got {raw!r}")
        return raw
    if kind == "list":
        # Empty (`paths=`) is an empty list: an agent that changed nothing says so.
        items = tuple(x for x in raw.split(",") if x)
        if not all(LIST_ITEM_RE.fullmatch(x) for x in items):
            raise ValueError(f"{key}= needs a comma-separated list, got {raw!r}")
        return items
    assert isinstance(kind, tuple)
    if raw.lower() not in kind:
        raise ValueError(f"{key}= must be one of: {', '.join(kind)}; got {raw!r}")
    return raw.lower()


def outside_examples(lines: list[str]) -> Iterator[str]:
    """The lines of one message that can be markers. A fenced block (``` or ~~~) holding only
    marker lines is the agent printing them; one that also holds prose is an example the agent
    is quoting, and none of its lines count. A fence never closed is not a fence."""
    index = 0
    while index < len(lines):
        opener = FENCE_RE.fullmatch(ANSI_RE.sub("", lines[index]).strip())
        if opener is None or (opener.group(1)[0] == "`" and "`" in opener.group(2)):
            yield lines[index]
            index += 1
            continue
        fence = opener.group(1)
        close = next(
            (
                end
                for end in range(index + 1, len(lines))
                if _closes(fence, ANSI_RE.sub("", lines[end]).strip())
            ),
            None,
        )
        if close is None:
            yield lines[index]
            index += 1
            continue
        body = lines[index + 1 : close]
        if all(not clean_line(line) or parse_line(line) is not None for line in body):
            yield from body
        index = close + 1


def _closes(fence: str, text: str) -> bool:
    return len(text) >= len(fence) and text == fence[0] * len(text)


def parse_markers(text: str) -> Markers:
    """Every marker the agent itself printed in ``text`` (not tool output, not a quoted example);
    of each kind the last valid one counts."""
    found = Markers()
    for message in spoken_messages(text):
        for line in outside_examples(message):
            item = parse_line(line)
            if item is not None:
                found.add(item)
    return found
