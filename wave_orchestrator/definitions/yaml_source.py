"""YAML parsing that remembers where every node came from, so errors can name file:line:col."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FieldPath = tuple[str | int, ...]


@dataclass
class Located:
    """A parsed document plus the 1-based (line, column) of every value and mapping key."""

    data: Any
    value_marks: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)
    duplicate_keys: list[FieldPath] = field(default_factory=list)

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


def _position(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(node: yaml.Node, path: FieldPath, out: Located, loader: yaml.SafeLoader) -> Any:
    out.value_marks[path] = _position(node)
    if isinstance(node, yaml.MappingNode):
        explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)  # `<<: *anchor` merge keys, as YAML 1.1 says
        merged = len(node.value) - explicit  # merged pairs come first; explicit keys override
        result: dict[Any, Any] = {}
        written: set[str] = set()
        for n, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            key = key if isinstance(key, str) else str(key)
            child = (*path, key)
            if n >= merged:
                if key in written:
                    out.duplicate_keys.append(child)
                written.add(key)
            out.key_marks[child] = _position(key_node)
            result[key] = _convert(value_node, child, out, loader)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*path, i), out, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_located(path: Path) -> Located:
    """Parse one YAML file; raises ``YamlSyntaxError`` with the parser's own line."""
    text = path.read_text(encoding="utf-8")
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        out = Located(data=None)
        if root is not None:
            out.data = _convert(root, (), out, loader)
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
    finally:
        loader.dispose()
