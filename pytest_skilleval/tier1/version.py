"""``version``: a skill that declares a version declares a semantic version.

Only ``metadata.version`` is read; it is where the Agent Skills spec lets a skill keep extra
properties. A top-level ``version:`` is not a spec field and is reported LOW with a suggestion to
move it. The version is optional: a skill without one passes with no findings (nothing is skipped,
because there was nothing wrong to report). If present it must be a string in the form
``MAJOR.MINOR.PATCH`` with an optional ``-prerelease`` and ``+build`` as defined at semver.org.
An unquoted ``1.0`` is a YAML number, not a string, and gets a message that explains quoting.

A malformed frontmatter or a ``metadata`` that is not a mapping is the ``schema`` check's
finding, not this one's: here it simply means there is no version to judge.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import MANIFEST, Skill

# The semver.org 2.0.0 grammar, spelled with [0-9] (Python's \d would also accept other scripts'
# digits). A numeric identifier has no leading zero; a prerelease identifier is numeric or
# contains a letter or hyphen; build identifiers are any non-empty alphanumeric-hyphen run.
_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = rf"(?:{_NUM}|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = r"[0-9A-Za-z-]+"
SEMVER = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?(?:\+{_BUILD_ID}(?:\.{_BUILD_ID})*)?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NESTED_VERSION = re.compile(r"(?P<indent>[ ]+)[\"']?version[\"']?[ ]*:")


class VersionCheck(Check):
    name = "version"
    description = "metadata.version, when present, is a semantic version (MAJOR.MINOR.PATCH)"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        findings: list[Finding] = []
        file = skill.manifest or MANIFEST
        meta = skill.meta
        if "version" in meta:
            findings.append(Finding(
                rule="version.top-level", severity=Severity.LOW, file=file, line=skill.key_line("version"),
                message="top-level 'version' is not an Agent Skills field and is not read; the spec keeps it in metadata",
                suggestion=f"move it under 'metadata:' as version: \"{_as_text(meta['version'])}\""))
        metadata = meta.get("metadata")
        if not isinstance(metadata, dict) or "version" not in metadata:
            return self.result(findings)
        value = metadata["version"]
        problem = _problem(value)
        if problem is not None:
            message, suggestion = problem
            findings.append(Finding(rule="version.not-semver", severity=Severity.HIGH, file=file,
                                    line=_metadata_version_line(skill), message=message, suggestion=suggestion,
                                    evidence=_as_text(value)[:80]))
            return self.result(findings)
        return self.result(findings, metrics={"version": value})


def _problem(value: Any) -> tuple[str, str] | None:
    """Why ``value`` is not a semver string (message, suggestion), or None when it is one."""
    if isinstance(value, str):
        if SEMVER.fullmatch(value):
            return None
        text = value.strip()
        if text[:1] in ("v", "V") and SEMVER.fullmatch(text[1:]):
            return (f"metadata.version {value!r} has a 'v' prefix; semver is the bare MAJOR.MINOR.PATCH",
                    f'version: "{text[1:]}"')
        return (f"metadata.version {value!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.2.0 or 2.0.0-rc.1)",
                f'version: "{_padded(text)}"')
    if isinstance(value, bool):
        return f"metadata.version must be a semantic version string, got the boolean {str(value).lower()}", 'version: "1.0.0"'
    if isinstance(value, int | float):
        # YAML reads an unquoted 1.0 or 2 as a number; even quoted it lacks the PATCH part.
        return (f"metadata.version {value!r} is read by YAML as a number, not a string, and is not MAJOR.MINOR.PATCH",
                f'quote a full semantic version: version: "{_padded(str(value))}"')
    if isinstance(value, datetime.date):
        return "metadata.version is read by YAML as a date, not a version", 'version: "1.0.0"'
    kind = {type(None): "an empty value", list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)
    return f"metadata.version must be a semantic version string, got {kind}", 'version: "1.0.0"'


def _padded(text: str) -> str:
    """``1`` -> ``1.0.0``, ``1.2`` -> ``1.2.0``: the nearest valid version, for the suggestion."""
    parts = text.lstrip("vV").split(".")
    if 1 <= len(parts) <= 3 and all(p.isascii() and p.isdigit() for p in parts):
        return ".".join([str(int(p)) for p in parts] + ["0"] * (3 - len(parts)))
    return "1.0.0"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _metadata_version_line(skill: Skill) -> int | None:
    """The line of ``version:`` inside the block ``metadata:`` mapping, else the ``metadata:`` line.

    The frontmatter parser records lines of top-level keys only; a nested key is found by looking
    for ``version:`` at the block's first indentation, up to the next unindented line.
    """
    start = skill.key_line("metadata")
    if start is None or skill.manifest_text is None:
        return start
    lines = _LINE_BREAK.split(skill.manifest_text)
    end = skill.frontmatter.end_line or len(lines)
    indent: int | None = None
    for number in range(start + 1, end):
        text = lines[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if not text.startswith(" "):
            break  # the next top-level key: the metadata block is over
        width = len(text) - len(text.lstrip(" "))
        indent = width if indent is None else indent
        match = _NESTED_VERSION.match(text)
        if match and len(match.group("indent")) == indent:
            return number
    return start


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [VersionCheck()]
