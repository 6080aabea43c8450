"""``schema``: SKILL.md follows the Agent Skills specification.

Under the default ``spec`` profile this reports what the reference validator (skills-ref) reports,
with a line number for each problem, plus a few type checks it cannot make because strictyaml reads
every scalar as a string. The ``strict`` profile adds the catalog rules of SkillEvaluator's
external profile (author, reserved words, recommended sections, forbidden fields).

Decisions:

* ``allowed-tools``: the spec defines a space-delimited string; a YAML list of strings is accepted
  (Claude Code documents that form) with a LOW note on portability. Anything else is HIGH.
* ``metadata``: must be a mapping. Its values are not type-checked: the spec asks for strings, but
  lists (``tags: [a, b]``) are common and every client tolerates them. ``metadata.version`` is
  the ``version`` check's business.
* Unknown top-level fields are MEDIUM, not HIGH (see :data:`UNKNOWN_FIELD_SEVERITY`).
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from typing import Any

import pytest
import yaml

from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import MANIFEST, Skill

ALLOWED_FIELDS = ("name", "description", "license", "allowed-tools", "metadata", "compatibility")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_LINES_STRICT = 500
RESERVED_WORDS = frozenset({"anthropic", "claude"})
FORBIDDEN_STRICT = ("alwaysApply", "always_apply", "globs")
#: skills-ref rejects unknown fields, yet about a fifth of the real skills we surveyed carry one
#: (``version``, ``tags``, Claude Code's ``argument-hint``, ...). Agents ignore keys they do not
#: know, so such a key is a portability smell, not a broken skill: it must not fail the default
#: gate (HIGH) but should not hide below it as LOW either.
UNKNOWN_FIELD_SEVERITY = Severity.MEDIUM
#: Fields agents document beyond the spec, by field: who reads it. Such a field is named and accepted
#: (INFO) under the spec profile: the agent it is written for uses it, the others ignore it.
AGENT_FIELDS: dict[str, str] = {
    "model": "Claude Code", "argument-hint": "Claude Code, VS Code Copilot", "disable-model-invocation": "Claude Code, VS Code Copilot",
    "user-invocable": "Claude Code, VS Code Copilot", "context": "Claude Code", "agent": "Claude Code", "hooks": "Claude Code",
    "when_to_use": "Claude Code", "effort": "Claude Code", "paths": "Claude Code",
}
#: Documented defaults of agents' boolean fields: a misspelt field set to its default changes nothing.
FIELD_DEFAULTS: dict[str, object] = {"user-invocable": True, "disable-model-invocation": False}
#: Misspellings no edit distance finds: British spelling, and the subagent field skills do not read.
FIELD_ALIASES = {"licence": "license", "tools": "allowed-tools", "allowedtools": "allowed-tools"}
#: Severity of a top-level field that is neither the spec's, an agent's, nor a near miss of one,
#: by profile. ``spec``: MEDIUM (see :data:`UNKNOWN_FIELD_SEVERITY`); ``strict`` follows the
#: reference validator, which rejects the whole skill over one: a catalog that publishes to every
#: agent gates on it.
UNKNOWN_BY_PROFILE = {"spec": UNKNOWN_FIELD_SEVERITY, "strict": Severity.HIGH}
#: An agent's own field is accepted by the agents that read it and rejected by the reference
#: validator; a catalog for every agent (strict) hears about it, one for that agent does not.
AGENT_FIELD_BY_PROFILE = {"spec": Severity.INFO, "strict": Severity.MEDIUM}
#: Keys people put at the top level that the spec wants under ``metadata``.
_BELONGS_IN_METADATA = frozenset({"version", "author", "authors", "tags", "owner", "category", "title"})

# A tag opener or closer such as ``<example>``, ``</b>`` or ``<br/>``: a letter must follow ``<``,
# so comparisons like "a < b" or "<5 files" are not tags.
_XML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_.:-]*(\s[^<>]*)?/?>")
_AUTHOR = re.compile(r"(?P<who>[^<>@]*[^<>@\s])\s*<(?P<local>[^<>@\s]+)@(?P<domain>[^<>@\s]+\.[^<>@\s.]+)>")
_COMPOSER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the same breaks frontmatter.parse counts


class SchemaCheck(Check):
    name = "schema"
    description = "SKILL.md frontmatter and body follow the Agent Skills specification"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        return self.result(_Review(skill, strict=ctx.settings.profile == "strict").run())


class _Review:
    """One pass over one skill; collects findings so the rules stay small functions."""

    def __init__(self, skill: Skill, *, strict: bool) -> None:
        self.skill, self.strict = skill, strict
        self.file = skill.manifest or MANIFEST
        self.findings: list[Finding] = []
        self.lines = _LINE_BREAK.split(skill.manifest_text or "")

    def add(self, rule: str, severity: Severity, message: str, key: str | None = None,
            suggestion: str | None = None, line: int | None = None) -> None:
        if line is None and key is not None:
            line = self.skill.key_line(key)
        self.findings.append(Finding(rule=f"schema.{rule}", severity=severity, file=self.file, line=line,
                                     message=message, suggestion=suggestion))

    def run(self) -> list[Finding]:
        # Loading and parsing problems come first; without a mapping there is nothing to validate.
        self.findings.extend(self.skill.load_findings)
        self.findings.extend(self.skill.frontmatter.findings)
        if self.skill.frontmatter.data is None:
            return self.findings
        meta = self.skill.meta
        self.fields(meta)
        self.name(meta)
        self.text_field(meta, "description", MAX_DESCRIPTION, required=True)
        self.text_field(meta, "compatibility", MAX_COMPATIBILITY, required=False)
        if "license" in meta and not isinstance(meta["license"], str):
            self.type_error("license", meta["license"])
        self.allowed_tools(meta)
        self.flow_style()
        if "metadata" in meta and not isinstance(meta["metadata"], dict):
            self.type_error("metadata", meta["metadata"], want="a mapping of key: value lines")
        self.body()
        if self.strict:
            self.strict_rules(meta)
        return self.findings

    # -- fields ---------------------------------------------------------------------------------
    def fields(self, meta: dict[str, Any]) -> None:
        for key in meta:
            if key in ALLOWED_FIELDS:
                continue
            if self.strict and key in FORBIDDEN_STRICT:
                self.add("forbidden-field", Severity.HIGH, f"field '{key}' belongs to editor rules, not to skills", key,
                         f"remove '{key}'")
                continue
            profile = "strict" if self.strict else "spec"
            if key in AGENT_FIELDS:
                self.add("agent-field", AGENT_FIELD_BY_PROFILE[profile],
                         f"field '{key}' is an extension of {AGENT_FIELDS[key]}, not in the Agent Skills spec: "
                         "other agents ignore it and the reference validator rejects it", key,
                         "keep it if the skill is for that agent; a catalog for every agent leaves it out")
                continue
            meant = near_miss(key)
            if meant:
                message = f"field '{key}' is not a field any agent reads; did you mean '{meant}'? Every agent silently ignores it"
                if meant in meta:  # the real field is set too: the slip is a redundant copy, not a lost setting
                    self.add("field-typo", Severity.MEDIUM, f"{message}; the skill also sets '{meant}', which agents read",
                             key, f"remove '{key}' and keep '{meant}'")
                elif meant in FIELD_DEFAULTS and meta[key] is FIELD_DEFAULTS[meant]:
                    self.add("field-typo", Severity.LOW, f"{message} (no effect here: {meta[key]!r} is the default of '{meant}')",
                             key, f"rename '{key}' to '{meant}'")
                else:
                    self.add("field-typo", Severity.HIGH, message, key, f"rename '{key}' to '{meant}'")
                continue
            hint = (f"move '{key}' under 'metadata:'" if key in _BELONGS_IN_METADATA
                    else f"remove '{key}', or move it under 'metadata:'")
            self.add("unknown-field", UNKNOWN_BY_PROFILE[profile],
                     f"field '{key}' is not in the Agent Skills spec (allowed: {', '.join(ALLOWED_FIELDS)})", key, hint)

    def name(self, meta: dict[str, Any]) -> None:
        if "name" not in meta:
            self.add("name-missing", Severity.HIGH, "required field 'name' is missing", line=1,
                     suggestion=f"add 'name: {self.skill.folder_name}'")
            return
        value = meta["name"]
        if value is not None and not isinstance(value, str):
            self.type_error("name", value)
            return
        if value is None or not value.strip():
            self.add("name-empty", Severity.HIGH, "field 'name' is empty", "name", f"name: {self.skill.folder_name}")
            return
        # NFKC as the spec does, so full-width or compatibility forms compare by meaning.
        name = unicodedata.normalize("NFKC", value)
        if len(name) > MAX_NAME:
            self.add("name-too-long", Severity.HIGH, f"name is {len(name)} characters; the limit is {MAX_NAME}", "name")
        if name != name.lower():
            self.add("name-case", Severity.HIGH, f"name '{name}' must be lowercase", "name", f"name: {name.lower()}")
        if _XML_TAG.search(name):
            self.add("xml-tag", Severity.HIGH, "name contains an XML tag; agents inject it into their prompt verbatim", "name")
        bad = sorted({c for c in name if not (c.isalnum() or c == "-")})
        if bad:
            shown = " ".join(repr(c) for c in bad[:8])
            self.add("name-chars", Severity.HIGH, f"name '{name}' has characters other than letters, digits and '-': {shown}",
                     "name", "use lowercase letters, digits and single hyphens")
        if name.startswith("-") or name.endswith("-"):
            self.add("name-hyphen-edge", Severity.HIGH, f"name '{name}' starts or ends with a hyphen", "name")
        if "--" in name:
            self.add("name-double-hyphen", Severity.HIGH, f"name '{name}' contains consecutive hyphens", "name")
        folder = unicodedata.normalize("NFKC", self.skill.folder_name)
        if folder != name:
            self.add("name-mismatch", Severity.HIGH, f"name '{name}' differs from the folder name '{self.skill.folder_name}'",
                     "name", f"rename the folder to '{name}' or set name: {self.skill.folder_name}")

    def text_field(self, meta: dict[str, Any], key: str, limit: int, *, required: bool) -> None:
        if key not in meta:
            if required:
                self.add(f"{key}-missing", Severity.HIGH, f"required field '{key}' is missing", line=1,
                         suggestion=f"add '{key}:' saying what the skill does and when to use it")
            return
        value = meta[key]
        if value is None and required:
            self.add(f"{key}-empty", Severity.HIGH, f"field '{key}' is empty", key)
            return
        if not isinstance(value, str):
            self.type_error(key, value)
            return
        if required and not value.strip():
            self.add(f"{key}-empty", Severity.HIGH, f"field '{key}' is empty", key)
            return
        if len(value) > limit:
            self.add(f"{key}-too-long", Severity.HIGH, f"{key} is {len(value)} characters; the limit is {limit}", key,
                     f"shorten it; move detail into the body{' or references/' if key == 'description' else ''}")
        tag = _XML_TAG.search(value) if key == "description" else None
        if tag:
            self.add("xml-tag", Severity.HIGH,
                     f"description contains the XML tag {tag.group(0)!r}; agents inject it into their prompt verbatim",
                     key, "describe it in words, without angle brackets")

    def allowed_tools(self, meta: dict[str, Any]) -> None:
        if "allowed-tools" not in meta:
            return
        value = meta["allowed-tools"]
        if isinstance(value, str):
            return
        if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
            spaced = any(" " in v.strip() for v in value)
            self.add("allowed-tools-list", Severity.LOW,
                     "allowed-tools is a YAML list; the spec defines a space-delimited string, which every agent reads",
                     "allowed-tools", "a tool name contains a space, so only agents that accept a list can read it" if spaced
                     else f"allowed-tools: {' '.join(v.strip() for v in value)}")
            return
        self.type_error("allowed-tools", value, want="a space-delimited string of tool names")

    def flow_style(self) -> None:
        """Flow collections (``tags: [a, b]``) are valid YAML, but skills-ref's strictyaml rejects
        the whole frontmatter over them, so a skill using them fails ``agentskills validate``."""
        end = self.skill.frontmatter.end_line
        try:
            root = yaml.compose("\n".join(self.lines[1:end - 1]), Loader=_COMPOSER)
        except yaml.YAMLError:  # parse() already accepted this text; never let a re-read break the check
            return
        stack, found = ([root] if root is not None else []), []
        while stack:
            node = stack.pop()
            if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
                if node.flow_style:
                    found.append(node.start_mark.line + 2)
                for item in node.value:
                    stack.extend(item if isinstance(item, tuple) else (item,))
        if found:  # one note, at the first one: the fix is the same everywhere
            self.add("flow-style", Severity.LOW, f"flow-style collection ('[...]' or '{{...}}'), {len(found)} in all; "
                     "the reference validator skills-ref rejects the whole frontmatter over it", line=min(found),
                     suggestion="write one '- item' per line, or quote the value")

    def type_error(self, key: str, value: Any, want: str = "a string") -> None:
        kind = _yaml_kind(value)
        raw = self.raw_value(key)
        if isinstance(value, bool | int | float | datetime.date) and raw:
            message = f"'{key}' must be {want}, but YAML reads the unquoted {raw} as {kind}"
            suggestion = f'quote the value: {key}: "{raw}"'
        else:
            message = f"'{key}' must be {want}, got {kind}"
            suggestion = f"write {key} as {want}"
        self.add(f"{key}-type", Severity.HIGH, message, key, suggestion)

    def raw_value(self, key: str) -> str:
        """The text after ``key:`` on the key's line, to quote it back in a suggestion."""
        line = self.skill.key_line(key)
        if line is None or not 0 < line <= len(self.lines):
            return ""
        _, _, rest = self.lines[line - 1].partition(":")
        return rest.split(" #", 1)[0].strip()

    # -- body -----------------------------------------------------------------------------------
    def body(self) -> None:
        if not any(level == 1 for level, _, _ in self.skill.headings()):
            self.add("body-heading", Severity.HIGH if self.strict else Severity.LOW,
                     "the body has no top-level '# Title' heading", line=self.skill.body_start_line,
                     suggestion=f"start the body with '# {self.skill.name}' or a human title")

    # -- strict profile -------------------------------------------------------------------------
    def strict_rules(self, meta: dict[str, Any]) -> None:
        name = meta.get("name")
        if isinstance(name, str):
            segments = unicodedata.normalize("NFKC", name).lower().split("-")
            for word in sorted(RESERVED_WORDS.intersection(segments)):
                self.add("name-reserved", Severity.HIGH, f"name uses the reserved word '{word}'", "name",
                         f"drop '{word}' from the name")
        self.author(meta.get("metadata"))
        titles = [text.lower() for level, text, _ in self.skill.headings() if level == 2]
        if not any(re.match(r"(instructions|usage)\b", t) for t in titles):
            self.add("section-instructions", Severity.MEDIUM, "no '## Instructions' or '## Usage' section",
                     line=self.skill.body_start_line, suggestion="add '## Instructions' with the steps the agent follows")
        if not any(re.match(r"examples?\b", t) for t in titles):
            self.add("section-examples", Severity.MEDIUM, "no '## Examples' section", line=self.skill.body_start_line,
                     suggestion="add '## Examples' with one or two worked requests")
        count = len(self.lines) - (1 if self.lines and self.lines[-1] == "" else 0)
        if count > MAX_LINES_STRICT:
            self.add("line-count", Severity.MEDIUM, f"SKILL.md has {count} lines; keep it under {MAX_LINES_STRICT}",
                     line=MAX_LINES_STRICT + 1, suggestion="move detail into references/ and link to it")

    def author(self, metadata: Any) -> None:
        line = self.skill.key_line("metadata")
        author = metadata.get("author") if isinstance(metadata, dict) else None
        if author is None:
            self.add("author-missing", Severity.HIGH, "metadata.author is required under the strict profile", line=line,
                     suggestion='add author: "Your Name <you@example.com>" under metadata:')
        elif not isinstance(author, str) or not _AUTHOR.fullmatch(author.strip()):
            self.add("author-format", Severity.HIGH, f"metadata.author {author!r} is not in 'Name <local@domain>' form",
                     line=line, suggestion='write it as "Your Name <you@example.com>"')


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def _fold(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def near_miss(key: str) -> str | None:
    """The known field (the spec's or an agent's) that ``key`` is a slip of, or None.

    A slip is the same name in another case or with ``_`` for ``-`` (``allowed_tools``), a known
    alias (``licence``), or one edit away (two for names over six letters: ``descripton``)."""
    known = {_fold(k): k for k in (*ALLOWED_FIELDS, *AGENT_FIELDS)}
    folded = _fold(key)
    if folded in FIELD_ALIASES:
        return FIELD_ALIASES[folded]
    if folded in known:
        return known[folded] if known[folded] != key else None
    if len(folded) < 4:
        return None
    # a distance is at least the difference of the lengths, and no slip is more than 2 away: the
    # fields further off in length cannot be the nearest one of a slip (most unknown keys are no slip)
    near = [k for k in known if abs(len(k) - len(folded)) <= 2]
    if not near:
        return None
    distance, best = min((_edit_distance(folded, k), k) for k in near)
    limit = 2 if len(best) > 6 else 1
    return known[best] if distance <= limit else None


def _yaml_kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, datetime.date):
        return "a date"
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [SchemaCheck()]
