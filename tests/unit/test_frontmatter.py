"""frontmatter.parse on its own: each malformation's finding at its line in SKILL.md, with the
message and hint a user acts on, and the parts (keys with their lines, body and where it starts)
the schema check reads. (The schema check's verdicts: tests/unit/test_check_schema.py.)"""

from __future__ import annotations

import pytest

from pytest_skilleval.frontmatter import parse
from pytest_skilleval.results import Severity


def summary(text: str) -> list[tuple[str, Severity, int | None]]:
    return [(f.rule.removeprefix("frontmatter."), f.severity, f.line) for f in parse(text).findings]


def test_a_duplicate_key_names_both_lines() -> None:
    fm = parse("---\nname: a\ndescription: d\nname: b\n---\nbody\n")
    [found] = fm.findings
    assert (found.rule, found.line) == ("frontmatter.duplicate-key", 4)
    assert found.message == "duplicate key 'name' (first on line 2); one value would silently win"
    assert fm.data is None


def test_a_tab_in_a_value_is_low_and_reported_once_at_its_first_line() -> None:
    assert summary("---\nname: a\tb\ndescription: d\n---\n") == [("tab", Severity.LOW, 2)]
    fm = parse("---\nname: a\ndescription: d\tx\nlicense: M\tIT\n---\n")
    assert [(f.rule, f.line) for f in fm.findings] == [("frontmatter.tab", 3)]
    assert fm.data == {"name": "a", "description": "d\tx", "license": "M\tIT"}


def test_a_tab_used_for_indentation_is_high_with_the_yaml_error_at_the_same_line() -> None:
    fm = parse("---\nname: a\ndescription: d\nmeta:\n  a: 1\n\tb: 2\n---\n")
    assert [(f.rule, f.line) for f in fm.findings] == [("frontmatter.tab-indent", 6), ("frontmatter.yaml-syntax", 6)]
    assert fm.findings[1].suggestion == "replace tabs with spaces"


@pytest.mark.parametrize("text", ["---\rname: a\rdescription: d\r---\rbody\r", "---\nname: a\ndescription: d\n...\nbody\n",
                                  "---   \nname: a\ndescription: d\n---  \nbody\n", "---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n"])
def test_line_endings_and_delimiters_that_still_close(text: str) -> None:
    fm = parse(text)
    assert fm.data == {"name": "a", "description": "d"}
    assert fm.key_lines == {"name": 2, "description": 3}
    assert (fm.body, fm.body_start_line, fm.end_line) == ("body\n", 5, 4)
    assert [f.rule for f in fm.findings] in ([], ["frontmatter.crlf"])


def test_keys_know_their_lines_and_the_body_its_start() -> None:
    fm = parse("---\nname: a\n\ndescription: >\n  long\n  text\nlicense: MIT\n---\n# Body\n")
    assert fm.findings == []
    assert fm.key_lines == {"name": 2, "description": 4, "license": 7}
    assert (fm.body, fm.body_start_line, fm.end_line) == ("# Body\n", 9, 8)


def test_a_bom_and_crlf_are_both_reported_and_the_rest_still_parses() -> None:
    fm = parse("\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\n")
    assert [(f.rule, f.severity, f.line) for f in fm.findings] == [("frontmatter.bom", Severity.MEDIUM, 1),
                                                                     ("frontmatter.crlf", Severity.LOW, 1)]
    assert fm.data == {"name": "a", "description": "d"}


@pytest.mark.parametrize(("text", "expected", "hint"), [
    ("---\nname: a\ndescription: Use when: x\n---\n", [("yaml-syntax", Severity.HIGH, 3)], "quote the value"),
    ("---\nname: a\ndescription: d\ndate: 2020-13-45\n---\n", [("yaml-syntax", Severity.HIGH, 2)], "fix the YAML syntax"),
    ("---\nname: a\n? [x, y]\n: 1\n---\n", [("yaml-syntax", Severity.HIGH, 3)], "fix the YAML syntax"),
    ("---\nname: &a [*a]\ndescription: d\n---\n", [("recursive", Severity.HIGH, 2)], "remove anchors and aliases"),
    ("---\nname: " + "[" * 2000 + "]" * 2000 + "\n---\n", [("yaml-syntax", Severity.HIGH, 2)], "fix the YAML syntax"),
])
def test_bad_yaml_is_a_finding_with_its_line_and_hint(text: str, expected: list[tuple[str, Severity, int]], hint: str) -> None:
    fm = parse(text)
    assert summary(text) == expected and fm.data is None
    assert (fm.findings[0].suggestion or "").startswith(hint)


def test_an_alias_bomb_is_too_large() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 6)]
    fm = parse("---\n" + "\n".join(lines) + "\n---\n")
    assert [(f.rule, f.line) for f in fm.findings] == [("frontmatter.too-large", 2)]
    assert "more than 10000 values" in fm.findings[0].message


@pytest.mark.parametrize(("text", "rule", "body"), [
    ("\n\n---\nname: a\n---\n", "leading-content", "\n\n---\nname: a\n---\n"),
    ("intro\n---\nname: a\n---\n", "missing", "intro\n---\nname: a\n---\n"),
    ("", "missing", ""),
    ("---\nname: a\ndescription: d\n# Demo\n", "unclosed", ""),
    ("---\n---\n# Demo\n", "empty", "# Demo\n"),
    ("---\n- a\n- b\n---\n", "not-mapping", ""),
])
def test_no_usable_frontmatter(text: str, rule: str, body: str) -> None:
    fm = parse(text)
    assert [f.rule for f in fm.findings] == [f"frontmatter.{rule}"] and fm.data is None and fm.body == body


def test_the_expansion_cap_is_exact() -> None:
    def listing(n: int) -> str:  # the mapping, two keys, a value, the list and its n items: n + 5 values
        return "---\nname: a\nl: [" + ", ".join(["1"] * n) + "]\n---\n"

    assert parse(listing(9995)).findings == []
    assert [f.rule for f in parse(listing(9996)).findings] == ["frontmatter.too-large"]


@pytest.mark.parametrize(("text", "line", "hint"), [
    ("---\n\tname: a\ndescription: d\n---\n", 2, "replace tabs with spaces"),  # the first YAML line
    ("---\nname: [a, b\n---\n", 3, "fix the YAML syntax"),  # the error is past the last line: no line to look at
    ("---\n" + "".join(f"k{i}: v\n" for i in range(300)) + "x: [a, b\n---\n", 303, "fix the YAML syntax"),
])
def test_the_tab_hint_looks_at_the_erroneous_line_only_when_there_is_one(text: str, line: int, hint: str) -> None:
    found = [f for f in parse(text).findings if f.rule == "frontmatter.yaml-syntax"]
    assert [(f.line, f.suggestion) for f in found] == [(line, hint)]


def test_an_unhashable_key_does_not_stop_the_duplicate_check() -> None:
    assert summary("---\n? [x, y]\n: 1\nname: a\nname: b\n---\n") == [("duplicate-key", Severity.HIGH, 5)]


def test_without_frontmatter_the_body_is_the_whole_file_from_line_one() -> None:
    fm = parse("# no frontmatter\ntext\n")
    assert (fm.body, fm.body_start_line, fm.end_line) == ("# no frontmatter\ntext\n", 1, 0)


@pytest.mark.parametrize(("text", "rule", "line", "message"), [
    ("---\nname: [a, b\n---\n", "yaml-syntax", 3, "invalid YAML: did not find expected ',' or ']'"),  # the problem, not the context
    ("---\n# only a comment\n---\n", "not-mapping", 2, "frontmatter must be a YAML mapping of keys, got empty"),
    ("---\n- a\n---\n", "not-mapping", 2, "frontmatter must be a YAML mapping of keys, got list"),
    ("---\n# c\n# c\nname: &a [*a]\n---\n", "recursive", 4, "frontmatter refers to itself through a YAML alias (e.g. 'name: &a [*a]')"),
    ("---\nname: a\ndescription: d\nlicense: M\tIT\n---\n", "tab", 4, "tab character in a value; YAML parsers disagree on these"),
])
def test_messages_and_lines_further_down(text: str, rule: str, line: int, message: str) -> None:
    [found] = parse(text).findings
    assert (found.rule, found.line, found.message) == (f"frontmatter.{rule}", line, message)


def test_an_error_without_a_position_points_at_the_first_frontmatter_line() -> None:
    # a control character is refused by the YAML reader, which gives no line: the first YAML line stands in
    [found] = parse("---\nname: a\ndescription: d\x07\n---\n").findings
    assert (found.rule, found.line) == ("frontmatter.yaml-syntax", 2) and "control characters" in found.message


def test_a_duplicate_further_down_names_its_first_line() -> None:
    [found] = parse("---\na: 1\nb: 2\nname: x\nname: y\n---\n").findings
    assert found.line == 5 and "(first on line 4)" in found.message


@pytest.mark.parametrize(("text", "line", "hint"), [
    ("---\na: 1\nb: 2\nc: Use when: x\n---\n", 4, "quote the value"),
    ("---\na: 1\nb:\n  c: 2\n\td: 3\n---\n", 5, "replace tabs with spaces"),
])
def test_yaml_errors_further_down_keep_their_line_and_hint(text: str, line: int, hint: str) -> None:
    [found] = [f for f in parse(text).findings if f.rule == "frontmatter.yaml-syntax"]
    assert found.line == line and (found.suggestion or "").startswith(hint)
