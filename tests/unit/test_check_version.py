"""The ``version`` check: ``metadata.version`` is optional, and when present a semver string."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import manifest, rules, run_check

from pytest_skilleval.results import CheckResult, Finding, Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import version
from pytest_skilleval.tier1.version import SEMVER, VersionCheck

MakeSkill = Callable[..., Skill]
CHECK = VersionCheck()


def check(make_skill: MakeSkill, extra: str = "", text: str | bytes | None = None) -> CheckResult:
    content = text if text is not None else manifest(extra=extra)
    return run_check(CHECK, make_skill({"SKILL.md": content}))


def with_version(raw: str) -> str:
    return f"metadata:\n  author: me\n  version: {raw}\n"


def only(result: CheckResult, rule: str) -> Finding:
    hits = [f for f in result.findings if f.rule == rule]
    assert len(hits) == 1, result.findings
    return hits[0]


def test_registered_through_the_hook() -> None:
    assert [c.name for c in version.pytest_skilleval_checks(config=None)] == ["version"]  # type: ignore[arg-type]


@pytest.mark.parametrize("extra", ["", "metadata:\n  author: me\n", "license: MIT\n"], ids=["no-metadata", "no-version", "other"])
def test_absent_version_passes_without_findings(make_skill: MakeSkill, extra: str) -> None:
    result = check(make_skill, extra)
    assert result.status is Status.PASSED and result.findings == []


VALID = ["0.0.0", "1.0.0", "0.1.0", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92",
         "1.0.0-x-y-z.--", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0+21AF26D3----117B344092BD",
         "1.0.0-rc.1+build.1", "99999999999999999999.0.0"]


@pytest.mark.parametrize("value", VALID)
def test_semver_strings_pass(make_skill: MakeSkill, value: str) -> None:
    result = check(make_skill, with_version(f'"{value}"'))
    assert result.findings == [] and result.metrics == {"version": value}


def test_unquoted_semver_is_a_string_and_passes(make_skill: MakeSkill) -> None:
    assert check(make_skill, with_version("1.2.3")).findings == []


INVALID = ["1", "1.0", "1.2.3.4", "01.0.0", "1.01.0", "1.0.01", "1.0.0-", "1.0.0-01", "1.0.0-alpha..1", "1.0.0+",
           "1.0.0+a..b", "1.0.0 ", " 1.0.0", "１.0.0", "1.0.0-béta", "latest", "", "2026.06.03", "1.0.0\n"]


@pytest.mark.parametrize("value", INVALID)
def test_non_semver_strings_are_high_on_the_version_line(make_skill: MakeSkill, value: str) -> None:
    quoted = '"' + value.replace("\n", "\\n") + '"'
    found = only(check(make_skill, with_version(quoted)), "version.not-semver")
    assert (found.severity, found.file, found.line) == (Severity.HIGH, "SKILL.md", 6)
    assert "semantic version" in found.message


def test_regex_is_anchored_and_ascii() -> None:
    assert SEMVER.fullmatch("1.2.3") and not SEMVER.fullmatch("1.2.3x") and not SEMVER.fullmatch("1.2.٣")


def test_v_prefix_gets_a_specific_message(make_skill: MakeSkill) -> None:
    found = only(check(make_skill, with_version("v1.2.3")), "version.not-semver")
    assert "'v' prefix" in found.message and found.suggestion == 'version: "1.2.3"'


@pytest.mark.parametrize(("raw", "suggested"), [("1.0", "1.0.0"), ("2", "2.0.0"), ("0.5", "0.5.0")])
def test_yaml_number_explains_quoting(make_skill: MakeSkill, raw: str, suggested: str) -> None:
    found = only(check(make_skill, with_version(raw)), "version.not-semver")
    assert "number" in found.message and "not a string" in found.message
    assert found.suggestion == f'quote a full semantic version: version: "{suggested}"' and found.line == 6


@pytest.mark.parametrize(("raw", "words"), [("2024-01-01", "date"), ("yes", "boolean true"), ("", "empty"),
                                            ("[1, 0, 0]", "a list"), ("{major: 1}", "a mapping")])
def test_other_yaml_types(make_skill: MakeSkill, raw: str, words: str) -> None:
    found = only(check(make_skill, with_version(raw)), "version.not-semver")
    assert words in found.message and found.severity is Severity.HIGH


def test_top_level_version_is_low_and_not_read(make_skill: MakeSkill) -> None:
    result = check(make_skill, "version: banana\n")
    found = only(result, "version.top-level")
    assert (found.severity, found.line) == (Severity.LOW, 4) and "metadata" in (found.suggestion or "")
    assert rules(result) == {"version.top-level"}
    both = check(make_skill, "version: 1.0\n" + with_version('"1.0.0"'))
    assert rules(both) == {"version.top-level"}


def test_line_of_nested_version_ignores_deeper_and_other_keys(make_skill: MakeSkill) -> None:
    extra = "metadata:\n  author: me\n  nested:\n    version: 9\n\n  # version: in a comment\n  version: nope\nlicense: MIT\n"
    assert only(check(make_skill, extra), "version.not-semver").line == 10


def test_flow_metadata_points_at_the_metadata_line(make_skill: MakeSkill) -> None:
    found = only(check(make_skill, "metadata: {author: me, version: 1.0}\n"), "version.not-semver")
    assert found.line == 4


def test_crlf_manifest_keeps_line_numbers(make_skill: MakeSkill) -> None:
    text = manifest(extra=with_version("1.0")).replace("\n", "\r\n")
    assert only(check(make_skill, text=text), "version.not-semver").line == 6


@pytest.mark.parametrize("text", [b"\x00\xff binary", b"---\nname: demo-skill\nmetadata:\n  version: caf\xe9\n---\n",
                                  "---\nname: x\n", "---\n- a\n---\n", manifest(extra="metadata: just-text\n")],
                         ids=["binary", "latin-1", "unclosed", "list", "metadata-scalar"])
def test_broken_manifests_are_schemas_business(make_skill: MakeSkill, text: str | bytes) -> None:
    result = check(make_skill, text=text)
    assert result.status is Status.PASSED and result.findings == []
