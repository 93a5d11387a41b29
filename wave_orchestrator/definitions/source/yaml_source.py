"""YAML parsing that remembers where every node came from, so errors can name file:line:col."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ...state.fsutil import file_kind

FieldPath = tuple[str | int, ...]


class Located:
    """A parsed document plus the 1-based (line, column) of every value and mapping key.
    (A plain class: `wave status` reads lane.yaml through it without loading `dataclasses`.)"""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.value_marks: dict[FieldPath, tuple[int, int]] = {}
        self.key_marks: dict[FieldPath, tuple[int, int]] = {}
        self.duplicate_keys: list[FieldPath] = []

    def mark(self, path: FieldPath, *, key: bool = False) -> tuple[int, int]:
        """The position of ``path``, or of its nearest ancestor that exists in the file."""
        marks = self.key_marks if key else self.value_marks
        probe = path
        while probe:
            if probe in marks:
                return marks[probe]
            if probe in self.value_marks:
                return self.value_marks[probe]
            probe = probe[:-1]
        return self.value_marks.get((), (1, 1))


class YamlSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


# A lane file is a few levels deep and a few thousand values long. Far beyond that, a file is
# an attack (a 460-byte "billion laughs" expands to gigabytes; 1000 nested brackets overflow
# Python's stack): refuse it at the node that crosses the bound.
MAX_DEPTH = 64
MAX_VALUES = 1_000_000  # nodes built, aliases counted each time they are used
MAX_ALIAS_VALUES = 100_000  # of those, nodes built again through an alias
MERGE_TAG = "tag:yaml.org,2002:merge"


def _position(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's pure-Python parser, with a bound on bracket depth (its scanner's work grows
    with the square of it); used only where libyaml is missing, which bounds it itself."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= MAX_DEPTH:
            mark = self.get_mark()
            raise YamlSyntaxError(
                f"nesting deeper than {MAX_DEPTH} levels", mark.line + 1, mark.column + 1
            )
        super().fetch_flow_collection_start(TokenClass)


def _events(text: str) -> Iterator[Any]:
    """The pure-Python parser's events (for ``compose``, where libyaml is missing)."""
    loader = BoundedLoader(text)
    try:
        while loader.check_event():
            yield loader.get_event()  # type: ignore[no-untyped-call]
    finally:
        loader.dispose()


def _compose_fast(text: str) -> yaml.Node | None:
    """libyaml's composer, several times faster on a wave of thousands of agents: it refuses
    nesting past 1000 levels itself, and the builder below refuses what is past ``MAX_DEPTH``."""
    composer = yaml.CSafeLoader(text)
    try:
        return composer.get_single_node()
    finally:
        composer.dispose()


def _at(event: Any) -> tuple[int, int]:
    return event.start_mark.line + 1, event.start_mark.column + 1


def compose(text: str, resolver: yaml.SafeLoader) -> yaml.Node | None:
    """The node tree of a one-document stream, as PyYAML's composer builds it, but without
    recursion and refusing nesting deeper than ``MAX_DEPTH`` (used where libyaml is missing)."""
    anchors: dict[str, yaml.Node] = {}
    stack: list[yaml.Node] = []  # the open collections
    keys: list[yaml.Node | None] = []  # per open mapping: a key waiting for its value
    root: yaml.Node | None = None
    documents = 0

    def attach(node: yaml.Node) -> None:
        nonlocal root
        if not stack:
            root = node
        elif isinstance(stack[-1], yaml.SequenceNode):
            stack[-1].value.append(node)
        elif keys[-1] is None:
            keys[-1] = node
        else:
            stack[-1].value.append((keys[-1], node))
            keys[-1] = None

    for event in _events(text):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise YamlSyntaxError("YAML syntax error: expected a single document", *_at(event))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            node = stack.pop()
            keys.pop()
            node.end_mark = event.end_mark
            attach(node)
            continue
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise YamlSyntaxError(
                    f"YAML syntax error: found undefined alias {event.anchor!r}", *_at(event)
                )
            attach(anchors[event.anchor])
            continue
        new = _new_node(event, resolver)
        if new is None:
            continue
        node = new
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            anchors[anchor] = node  # a later anchor of the same name wins (YAML 1.2)
        if isinstance(node, yaml.ScalarNode):
            attach(node)
        else:
            if len(stack) >= MAX_DEPTH:
                raise YamlSyntaxError(f"nesting deeper than {MAX_DEPTH} levels", *_at(event))
            stack.append(node)
            keys.append(None)
    return root


NODE_FOR_EVENT: dict[type, type[yaml.Node]] = {
    yaml.ScalarEvent: yaml.ScalarNode,
    yaml.SequenceStartEvent: yaml.SequenceNode,
    yaml.MappingStartEvent: yaml.MappingNode,
}


def _new_node(event: Any, resolver: yaml.SafeLoader) -> yaml.Node | None:
    """The node an event starts (None for stream and document ends), its tag resolved."""
    node_kind = NODE_FOR_EVENT.get(type(event))
    if node_kind is None:
        return None
    scalar = node_kind is yaml.ScalarNode
    tag = event.tag
    if tag is None or tag == "!":
        value = event.value if scalar else None
        tag = resolver.resolve(node_kind, value, event.implicit)  # type: ignore[no-untyped-call]
    if scalar:
        return yaml.ScalarNode(
            tag, event.value, event.start_mark, event.end_mark, style=event.style
        )
    return node_kind(tag, [], event.start_mark, None, flow_style=event.flow_style)  # type: ignore[call-arg]


class _Builder:
    """Turns the composed node tree into Python values, recording marks, counting every node
    built (an alias's nodes once per use) so an exploding file fails fast and clearly."""

    def __init__(self, loader: yaml.SafeLoader, out: Located) -> None:
        self.loader = loader
        self.out = out
        self.built = 0
        self.via_alias = 0
        self.seen: set[int] = set()

    def _count(self, node: yaml.Node, depth: int, aliased: bool) -> None:
        self.built += 1
        if aliased:
            self.via_alias += 1
        if depth > MAX_DEPTH:
            raise YamlSyntaxError(
                f"nesting deeper than {MAX_DEPTH} levels (or an alias that contains itself)",
                *_position(node),
            )
        if self.via_alias > MAX_ALIAS_VALUES or self.built > MAX_VALUES:
            raise YamlSyntaxError(
                f"aliases expand to more than {MAX_ALIAS_VALUES} values"
                if self.via_alias > MAX_ALIAS_VALUES
                else f"more than {MAX_VALUES} values",
                *_position(node),
            )

    def build(self, node: yaml.Node, path: FieldPath, depth: int = 0, aliased: bool = False) -> Any:
        aliased = aliased or id(node) in self.seen
        self.seen.add(id(node))
        self._count(node, depth, aliased)
        self.out.value_marks[path] = _position(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth, aliased)
        if isinstance(node, yaml.SequenceNode):
            return [
                self.build(item, (*path, i), depth + 1, aliased)
                for i, item in enumerate(node.value)
            ]
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: FieldPath, depth: int, aliased: bool) -> Any:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        written: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:  # `<<: *anchor` merge keys, as YAML 1.1 says
                merged = {**self._merge(value_node, path, depth, aliased), **merged}
                self.out.value_marks[path] = _position(node)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlSyntaxError("a mapping key must be a plain value", *_position(key_node))
            key = self.loader.construct_object(key_node)
            # `on:` or `yes:` as a key means the word (YAML 1.1 would make it true): as written
            key = (
                key_node.value
                if isinstance(key, bool)
                else key
                if isinstance(key, str)
                else str(key)
            )
            child = (*path, key)
            if key in written:
                self.out.duplicate_keys.append(child)
            written.add(key)
            self.out.key_marks[child] = _position(key_node)
            result[key] = self.build(value_node, child, depth + 1, aliased)
        return {**merged, **result}  # explicit keys override merged ones

    def _merge(self, node: yaml.Node, path: FieldPath, depth: int, aliased: bool) -> Any:
        """The mappings a merge key names; in a list, earlier ones win (YAML 1.1)."""
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: dict[str, Any] = {}
        for item in reversed(items):
            if not isinstance(item, yaml.MappingNode):
                raise YamlSyntaxError(
                    "a merge key (<<) takes a mapping or a list of mappings", *_position(item)
                )
            out.update(self.build(item, path, depth + 1, aliased))
        return out


MAX_FILE_BYTES = 32 * 1024 * 1024


def read_lane_file(path: Path) -> bytes:
    """The bytes of a regular file; a FIFO or device raises OSError instead of blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, file_kind(st.st_mode), str(path))
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES // 2**20} MB", str(path))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)


def load_located(path: Path) -> Located:
    """Parse one YAML file; raises ``YamlSyntaxError`` with the parser's own line."""
    raw = read_lane_file(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = raw[exc.start : exc.end].hex(" ")
        raise YamlSyntaxError(f"not UTF-8 text (byte {bad})", line, column) from None
    loader = yaml.SafeLoader("")  # resolves tags and constructs scalars; parses nothing
    try:
        root = _compose_fast(text) if yaml.__with_libyaml__ else compose(text, loader)
        out = Located(data=None)
        if root is not None:
            out.data = _Builder(loader, out).build(root, ())
        return out
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        reason = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
            c = exc.context_mark
            reason += f" ({exc.context} at line {c.line + 1}, column {c.column + 1})"
        raise YamlSyntaxError(f"YAML syntax error: {reason}", line, col) from exc
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"YAML syntax error: {exc}", 1, 1) from exc
    except (ValueError, RecursionError) as exc:  # e.g. an integer of 5000 digits
        raise YamlSyntaxError(f"YAML value error: {exc}", 1, 1) from exc
    finally:
        loader.dispose()
