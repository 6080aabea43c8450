"""Parse an eval file (JSON, JSON Lines or YAML) into data plus the line of every value in it.

The standard parsers give values but not positions, and a finding that says "case 7, field
prompt" without a line makes the author hunt. So the data is loaded by the standard parser (the
one source of truth about validity), and a second pass records, for each path of keys and
indices, the 1-based line where that value starts. For JSON this is a small iterative scanner
that only runs on text ``json.loads`` already accepted; for YAML it is the composed node tree.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from pytest_skilleval.results import encodable, encodable_data
from pytest_skilleval.yamlsize import expanded_size

#: A key or list index; a path of them addresses one value in the document.
PathPart = str | int
Path = tuple[PathPart, ...]

#: Bound on values in one eval file. Real files hold a few thousand; YAML aliases can expand a
#: small file into billions of values, so the walk stops here and the file is reported.
MAX_VALUES = 200_000

_YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_WS = re.compile(r"[ \t\n\r]*")
_ATOM = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity")
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


class SyntaxProblem(Exception):
    """The text is not valid JSON/YAML; ``line`` is where the parser gave up."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


@dataclass
class Document:
    """Parsed data, the line where each value starts, and keys written twice in one mapping."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)
    duplicates: list[tuple[Path, int]] = field(default_factory=list)
    jsonl: bool = False
    #: JSON Lines only: (line, message) of lines that are not JSON; the other lines still load.
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    #: Lines of strings that held lone surrogates (JSON ``"\\ud800"``); those were escaped.
    surrogate_lines: list[int] = field(default_factory=list)

    def line(self, path: Path) -> int | None:
        """The line of ``path``, else of its nearest recorded ancestor (e.g. an absent key's mapping)."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return None


def parse(text: str, name: str) -> Document:
    """Parse by the file's suffix; raises :class:`SyntaxProblem` only. Every string that leaves
    here can be encoded: a lone surrogate is escaped and its line kept in ``surrogate_lines``."""
    text = text.removeprefix("\ufeff")  # a BOM is harmless here; json.loads would refuse it
    suffix = name.rsplit(".", 1)[-1].lower()
    try:
        if suffix == "jsonl":
            doc = _parse_jsonl(text)
        elif suffix == "json":
            doc = _parse_json(text)
        else:
            doc = _parse_yaml(text)
    except RecursionError:
        raise SyntaxProblem("nested too deeply to parse", None) from None
    if _SURROGATE_ESCAPE.search(text):
        clean = encodable_data(doc.data)
        if clean != doc.data:
            doc.data = clean
            doc.lines = {_encodable_path(p): n for p, n in doc.lines.items()}
            doc.duplicates = [(_encodable_path(p), n) for p, n in doc.duplicates]
            doc.surrogate_lines = sorted({text.count("\n", 0, m.start()) + 1 for m in _SURROGATE_ESCAPE.finditer(text)})
    return doc


#: How a surrogate gets into a str from text that decoded as UTF-8: an escape in JSON or YAML.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _encodable_path(path: Path) -> Path:
    return tuple(encodable(p) if isinstance(p, str) else p for p in path)


def _parse_json(text: str) -> Document:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SyntaxProblem(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    doc = Document(data)
    _locate_json(text, doc, (), 0, 1)
    return doc


def _parse_jsonl(text: str) -> Document:
    """One case per non-blank line; a bad line is reported and its neighbours still load."""
    doc = Document([], jsonl=True)
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            doc.bad_lines.append((number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        index = len(doc.data)
        doc.data.append(value)
        _locate_json(raw, doc, (index,), 0, number)
    doc.lines[()] = 1
    return doc


def _locate_json(text: str, doc: Document, base: Path, start: int, first_line: int) -> None:
    """Record the line of each value. Iterative, so nesting depth cannot exhaust the stack."""
    breaks = [m.start() for m in re.finditer("\n", text)]

    def line(pos: int) -> int:
        return first_line + bisect.bisect_right(breaks, pos - 1)

    def key_at(pos: int) -> tuple[str, int]:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        key, pos = _scanstring(text, pos + 1)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        return key, pos + 1  # past ':'

    stack: list[tuple[str, Path, list[Any]]] = []  # (kind, path, [next index | seen keys])
    path, pos, want_value = base, start, True
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if want_value:
            doc.lines[path] = line(pos)
            char = text[pos]
            if char in "{[":
                close = "}" if char == "{" else "]"
                inner = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                if text[inner] == close:
                    pos, want_value = inner + 1, False
                    continue
                if char == "{":
                    key, pos = key_at(pos + 1)
                    stack.append(("o", path, [{key}]))
                    path = (*path, key)
                else:
                    stack.append(("a", path, [0]))
                    path, pos = (*path, 0), pos + 1
                continue
            if char == '"':
                pos = _scanstring(text, pos + 1)[1]
            else:
                match = _ATOM.match(text, pos)
                pos = match.end() if match else pos + 1
            want_value = False
            continue
        if not stack:
            return
        kind, parent, state = stack[-1]
        char, pos = text[pos], pos + 1
        if char != ",":
            stack.pop()
            continue
        if kind == "a":
            state[0] += 1
            path = (*parent, state[0])
        else:
            key_line = line(_WS.match(text, pos).end())  # type: ignore[union-attr]
            key, pos = key_at(pos)
            if key in state[0]:
                doc.duplicates.append(((*parent, key), key_line))
            state[0].add(key)
            path = (*parent, key)
        want_value = True


def _parse_yaml(text: str) -> Document:
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SyntaxProblem(f"invalid YAML: {problem}", mark.line + 1 if mark is not None else None) from None
    except ValueError as exc:  # e.g. an impossible timestamp
        raise SyntaxProblem(f"invalid YAML: {exc}", None) from None
    finally:
        loader.dispose()
    doc = Document(data)
    if node is not None:
        size = expanded_size(node, MAX_VALUES, count_keys=False)
        if size is None or size > MAX_VALUES:  # None: an alias inside itself, data that contains itself
            raise SyntaxProblem(f"expands to more than {MAX_VALUES} values (YAML aliases?)", 1)
        for path, child, key_lines in _walk_yaml(node):
            # setdefault: the walk meets a repeated key's last value first, and that value is the one loaded
            doc.lines.setdefault(path, child.start_mark.line + 1)
            for key, key_line in key_lines:
                doc.duplicates.append(((*path, key), key_line))
    return doc


def _walk_yaml(root: yaml.Node) -> Iterator[tuple[Path, yaml.Node, list[tuple[str, int]]]]:
    """(path, node, duplicate keys of that node) for each node; aliases are walked once."""
    seen: set[int] = set()
    todo: list[tuple[Path, yaml.Node]] = [((), root)]
    while todo:
        path, node = todo.pop()
        dupes: list[tuple[str, int]] = []
        if id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                keys: set[str] = set()
                for key_node, value_node in node.value:
                    key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.tag}>"
                    if key in keys:
                        dupes.append((key, key_node.start_mark.line + 1))
                    keys.add(key)
                    todo.append(((*path, key), value_node))
            elif isinstance(node, yaml.SequenceNode):
                todo.extend(((*path, i), child) for i, child in enumerate(node.value))
        yield path, node, dupes
