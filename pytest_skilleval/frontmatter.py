"""Split ``SKILL.md`` into YAML frontmatter and a Markdown body, reporting every malformation.

Deliberately not python-frontmatter: it turns seven malformed shapes into ``{}``. Here each shape
(BOM, CRLF, tabs, duplicate keys, non-mapping YAML, unclosed ``---``, bad YAML) is a finding with
a line number in ``SKILL.md``. YAML is loaded with one pinned safe loader (libyaml's when present,
which is the one every supported platform's PyYAML wheel ships) that also rejects duplicate keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.yamlsize import expanded_size

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPEN = re.compile(r"---[ \t]*$")
_CLOSE = re.compile(r"(---|\.\.\.)[ \t]*$")
#: An alias-expansion bound: frontmatter is a few keys; thousands of nodes means a YAML bomb.
MAX_NODES = 10_000


class _DuplicateKeyError(yaml.YAMLError):
    def __init__(self, key: str, line: int, first_line: int) -> None:
        super().__init__(f"duplicate key {key!r} (first defined on line {first_line})")
        self.key, self.line, self.first_line = key, line, first_line


class _StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader that refuses duplicate mapping keys instead of letting the last one win."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            continue  # the base constructor reports unhashable keys itself
        if key in seen:
            raise _DuplicateKeyError(str(key), key_node.start_mark.line, seen[key])
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass
class Frontmatter:
    """The parsed manifest. ``data`` is None when there is no usable mapping."""

    data: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    key_lines: dict[str, int] = field(default_factory=dict)  # top-level key -> 1-based line in SKILL.md
    body: str = ""
    body_start_line: int = 1  # 1-based line in SKILL.md where the body starts
    end_line: int = 0  # line of the closing delimiter, 0 when absent


def parse(text: str, manifest: str = "SKILL.md") -> Frontmatter:
    fm = Frontmatter()

    def add(rule: str, severity: Severity, line: int | None, message: str, suggestion: str | None = None) -> None:
        fm.findings.append(Finding(rule=f"frontmatter.{rule}", severity=severity, file=manifest, line=line,
                                   message=message, suggestion=suggestion))

    if text.startswith("\ufeff"):
        add("bom", Severity.MEDIUM, 1, "file starts with a byte-order mark; some agents then miss the frontmatter",
            "save SKILL.md as UTF-8 without BOM")
        text = text[1:]
    if "\r\n" in text:
        add("crlf", Severity.LOW, 1, "Windows (CRLF) line endings", "use LF line endings")
        text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = text.replace("\r", "\n")

    lines = text.split("\n")
    if not lines or not _OPEN.match(lines[0]):
        first = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
        if lines and first < len(lines) and _OPEN.match(lines[first]):
            add("leading-content", Severity.HIGH, 1, "frontmatter must start on the first line; blank lines come before '---'",
                "remove everything above the opening '---'")
        else:
            add("missing", Severity.HIGH, 1, "no YAML frontmatter: SKILL.md must start with '---'",
                "add '---', name: and description: lines, then '---'")
        fm.body = text
        return fm
    close = next((i for i in range(1, len(lines)) if _CLOSE.match(lines[i])), None)
    if close is None:
        add("unclosed", Severity.HIGH, 1, "frontmatter opened with '---' on line 1 is never closed",
            "add a '---' line after the last frontmatter key")
        fm.body = ""
        return fm
    fm.end_line = close + 1
    fm.body = "\n".join(lines[close + 1:])
    fm.body_start_line = close + 2
    yaml_lines = lines[1:close]
    yaml_text = "\n".join(yaml_lines) + "\n"

    for offset, ln in enumerate(yaml_lines):
        if "\t" in ln:
            stripped = ln.lstrip(" ")
            if stripped.startswith("\t"):
                add("tab-indent", Severity.HIGH, offset + 2, "tab used for indentation; YAML forbids tabs there",
                    "indent with spaces")
            else:
                add("tab", Severity.LOW, offset + 2, "tab character in a value; YAML parsers disagree on these",
                    "replace the tab with spaces")
            break

    if not yaml_text.strip():
        add("empty", Severity.HIGH, 2, "frontmatter is empty", "add name: and description:")
        return fm
    try:
        loader = _StrictLoader(yaml_text)
        try:
            node = loader.get_single_node()
            expanded = expanded_size(node, MAX_NODES) if node is not None else 0
            if expanded is None:
                add("recursive", Severity.HIGH, node.start_mark.line + 2 if node is not None else 2,
                    "frontmatter refers to itself through a YAML alias (e.g. 'name: &a [*a]')",
                    "remove anchors and aliases")
                return fm
            if expanded > MAX_NODES:
                add("too-large", Severity.HIGH, 2, f"frontmatter expands to more than {MAX_NODES} values (YAML aliases?)",
                    "remove anchors and aliases")
                return fm
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except _DuplicateKeyError as exc:
        add("duplicate-key", Severity.HIGH, exc.line + 2,
            f"duplicate key {exc.key!r} (first on line {exc.first_line + 2}); one value would silently win",
            "keep one definition of the key")
        return fm
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        hint = None
        if problem and "mapping values are not allowed" in problem:
            hint = "quote the value: a ': ' inside an unquoted value starts a new mapping"
        elif "\t" in (yaml_lines[line - 2] if 0 <= line - 2 < len(yaml_lines) else ""):
            hint = "replace tabs with spaces"
        add("yaml-syntax", Severity.HIGH, line, f"invalid YAML: {problem}", hint or "fix the YAML syntax")
        return fm
    except (ValueError, RecursionError) as exc:  # e.g. bad timestamps, deeply nested flow collections
        add("yaml-syntax", Severity.HIGH, 2, f"invalid YAML: {exc}", "fix the YAML syntax")
        return fm

    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        add("not-mapping", Severity.HIGH, 2, f"frontmatter must be a YAML mapping of keys, got {kind}",
            "write 'name: …' and 'description: …' as key: value lines")
        return fm
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                fm.key_lines.setdefault(str(key_node.value), key_node.start_mark.line + 2)
    fm.data = {str(k): v for k, v in data.items()}
    return fm
