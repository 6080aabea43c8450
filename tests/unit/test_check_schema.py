"""The ``schema`` check: every rule fails on a broken skill and stays quiet on a near-identical
valid one; malformed manifests become findings with line numbers; and under the spec profile the
check agrees with the reference validator skills-ref except where we differ on purpose."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import skills_ref
from conftest import CORPUS, manifest, require, run_check, write_skill

from pytest_skilleval.checks import Check
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import schema
from pytest_skilleval.tier1.schema import SchemaCheck

MakeSkill = Callable[..., Skill]
CHECK = SchemaCheck()
STRICT_BODY = "# Demo\n\n## Instructions\n\nDo it.\n\n## Examples\n\nAn example.\n"
AUTHOR = 'metadata:\n  author: "Jane Doe <jane@example.com>"\n'


def fm(*lines: str, body: str = "# Demo\n\nText.\n") -> str:
    """A SKILL.md whose frontmatter is exactly ``lines``."""
    return "---\n" + "".join(f"{ln}\n" for ln in lines) + "---\n" + body


def check(make_skill: MakeSkill, text: str | bytes, name: str = "demo-skill", **settings: object) -> CheckResult:
    return run_check(CHECK, make_skill({"SKILL.md": text}, name=name), **settings)


def only(result: CheckResult, rule: str) -> Finding:
    hits = [f for f in result.findings if f.rule == rule]
    assert len(hits) == 1, result.findings
    return hits[0]


def worst(result: CheckResult) -> Severity | None:
    return max((f.severity for f in result.findings), key=lambda s: s.rank, default=None)


def test_registered_through_the_hook() -> None:
    checks = schema.pytest_skilleval_checks(config=None)  # type: ignore[arg-type]
    assert [c.name for c in checks] == ["schema"] and isinstance(checks[0], Check)


def test_valid_skill_has_no_findings(make_skill: MakeSkill) -> None:
    assert check(make_skill, manifest()).findings == []


def test_all_six_fields_valid(make_skill: MakeSkill) -> None:
    text = fm("name: demo-skill", "description: Demo things.", "license: MIT", "compatibility: Needs git",
              "allowed-tools: Bash(git:*) Read", "metadata:", "  author: me", "  tags: [a, b]")
    assert {f.rule for f in check(make_skill, text).findings} == {"schema.flow-style"}


# -- malformed manifests ---------------------------------------------------------------------------
MALFORMED = [
    ("bom", b"\xef\xbb\xbf" + manifest().encode(), "frontmatter.bom", 1, Severity.MEDIUM),
    ("crlf", manifest().replace("\n", "\r\n"), "frontmatter.crlf", 1, Severity.LOW),
    ("tab-indent", fm("name: demo-skill", "description: d", "metadata:", "\tauthor: me"), "frontmatter.tab-indent", 5,
     Severity.HIGH),
    ("duplicate-key", fm("name: demo-skill", "description: d", "name: demo-skill"), "frontmatter.duplicate-key", 4,
     Severity.HIGH),
    ("yaml-list", fm("- name", "- description"), "frontmatter.not-mapping", 2, Severity.HIGH),
    ("yaml-scalar", fm("just some words"), "frontmatter.not-mapping", 2, Severity.HIGH),
    ("unclosed", "---\nname: demo-skill\ndescription: d\n# Demo\n", "frontmatter.unclosed", 1, Severity.HIGH),
    ("missing", "# Demo\n\nNo frontmatter here.\n", "frontmatter.missing", 1, Severity.HIGH),
    ("empty", "---\n---\n# Demo\n", "frontmatter.empty", 2, Severity.HIGH),
    ("colon-in-value", fm("name: demo-skill", "description: Use when: x"), "frontmatter.yaml-syntax", 3, Severity.HIGH),
    ("leading-blank", "\n" + manifest(), "frontmatter.leading-content", 1, Severity.HIGH),
]


@pytest.mark.parametrize(("text", "rule", "line", "severity"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_frontmatter_is_a_finding_with_its_line(make_skill: MakeSkill, text: str | bytes, rule: str, line: int,
                                                        severity: Severity) -> None:
    found = only(check(make_skill, text), rule)
    assert (found.line, found.severity, found.file) == (line, severity, "SKILL.md")


def test_bom_and_crlf_are_otherwise_valid(make_skill: MakeSkill) -> None:
    text = b"\xef\xbb\xbf" + manifest().replace("\n", "\r\n").encode()
    assert worst(check(make_skill, text)) is Severity.MEDIUM


@pytest.mark.parametrize(("content", "line"), [(b"---\nname: demo-skill\n\x00\x01\x02\xff", None),
                                               (b"---\nname: demo-skill\ndescription: caf\xe9\n---\n", 3)],
                         ids=["binary", "latin-1"])
def test_unreadable_manifest_is_a_finding_not_an_exception(make_skill: MakeSkill, content: bytes, line: int | None) -> None:
    found = only(check(make_skill, content), "schema.manifest-unreadable")
    assert found.severity is Severity.HIGH and found.line == line


def test_missing_and_lowercase_manifest(make_skill: MakeSkill) -> None:
    assert only(run_check(CHECK, make_skill({"README.md": "# hi\n"})), "schema.manifest-missing").severity is Severity.HIGH
    lower = run_check(CHECK, make_skill({"skill.md": manifest()}, name="lower"), profile="spec")
    assert only(lower, "schema.manifest-case").file == "skill.md"


# -- field rules: (frontmatter lines, folder) that fail, and a lookalike that passes ------------------
LONG = "a" * 65
FIELD_RULES = [
    ("schema.name-missing", (["description: d"], "demo-skill"), (["name: demo-skill", "description: d"], "demo-skill")),
    ("schema.name-empty", (['name: ""', "description: d"], "demo-skill"), (["name: demo-skill", "description: d"], "demo-skill")),
    ("schema.name-type", (["name: no", "description: d"], "no"), (['name: "no"', "description: d"], "no")),
    ("schema.name-too-long", ([f"name: {LONG}", "description: d"], LONG), ([f"name: {LONG[:64]}", "description: d"], LONG[:64])),
    ("schema.name-case", (["name: Demo-Skill", "description: d"], "Demo-Skill"), (["name: demo-skill", "description: d"], "demo-skill")),
    ("schema.name-chars", (["name: demo_skill", "description: d"], "demo_skill"),
     (["name: unicode-名前", "description: d"], "unicode-名前")),
    ("schema.name-hyphen-edge", (["name: demo-", "description: d"], "demo-"), (["name: demo", "description: d"], "demo")),
    ("schema.name-double-hyphen", (["name: demo--skill", "description: d"], "demo--skill"),
     (["name: demo-skill", "description: d"], "demo-skill")),
    ("schema.name-mismatch", (["name: other-name", "description: d"], "demo-skill"),
     (["name: ｆｕｌｌ", "description: d"], "full")),
    ("schema.description-missing", (["name: demo-skill"], "demo-skill"), (["name: demo-skill", "description: d"], "demo-skill")),
    ("schema.description-empty", (["name: demo-skill", "description:"], "demo-skill"),
     (["name: demo-skill", "description: ok"], "demo-skill")),
    ("schema.description-type", (["name: demo-skill", "description: yes"], "demo-skill"),
     (["name: demo-skill", 'description: "yes"'], "demo-skill")),
    ("schema.description-too-long", (["name: demo-skill", "description: " + "d" * 1025], "demo-skill"),
     (["name: demo-skill", "description: " + "d" * 1024], "demo-skill")),
    ("schema.xml-tag", (["name: demo-skill", "description: Wrap output in <result> tags"], "demo-skill"),
     (["name: demo-skill", "description: Use when a < b or x > 5 files"], "demo-skill")),
    ("schema.compatibility-type", (["name: demo-skill", "description: d", "compatibility: 1.0"], "demo-skill"),
     (["name: demo-skill", "description: d", 'compatibility: "1.0"'], "demo-skill")),
    ("schema.compatibility-too-long", (["name: demo-skill", "description: d", "compatibility: " + "c" * 501], "demo-skill"),
     (["name: demo-skill", "description: d", "compatibility: " + "c" * 500], "demo-skill")),
    ("schema.license-type", (["name: demo-skill", "description: d", "license:", "  - MIT"], "demo-skill"),
     (["name: demo-skill", "description: d", "license: MIT"], "demo-skill")),
    ("schema.allowed-tools-type", (["name: demo-skill", "description: d", "allowed-tools:", "  Bash: yes"], "demo-skill"),
     (["name: demo-skill", "description: d", "allowed-tools: Bash Read"], "demo-skill")),
    ("schema.metadata-type", (["name: demo-skill", "description: d", "metadata: author"], "demo-skill"),
     (["name: demo-skill", "description: d", "metadata:", "  author: me"], "demo-skill")),
]


@pytest.mark.parametrize(("rule", "bad", "good"), FIELD_RULES, ids=[r[0].split(".", 1)[1] for r in FIELD_RULES])
def test_field_rule_fails_and_lookalike_passes(make_skill: MakeSkill, rule: str, bad: tuple[list[str], str],
                                               good: tuple[list[str], str]) -> None:
    failing = check(make_skill, fm(*bad[0]), name=bad[1])
    found = [f for f in failing.findings if f.rule == rule]
    assert found and all(f.severity is Severity.HIGH for f in found), failing.findings
    assert all(f.file == "SKILL.md" and f.line for f in failing.findings)
    passing = check(make_skill, fm(*good[0]), name=good[1])
    assert passing.findings == [], passing.findings


def test_finding_points_at_the_key_line(make_skill: MakeSkill) -> None:
    result = check(make_skill, fm("license: MIT", "description: d", "", "name: Other"))
    assert only(result, "schema.name-case").line == 5 and only(result, "schema.name-mismatch").line == 5
    assert only(check(make_skill, fm("description: d")), "schema.name-missing").line == 1


def test_yaml_type_message_explains_quoting(make_skill: MakeSkill) -> None:
    found = only(check(make_skill, fm("name: no  # a comment", "description: d"), name="no"), "schema.name-type")
    assert "boolean false" in found.message and "'no'" not in found.message
    assert found.suggestion == 'quote the value: name: "no"'
    float_found = only(check(make_skill, fm("name: demo-skill", "description: d", "compatibility: 1.0")),
                       "schema.compatibility-type")
    assert "number 1.0" in float_found.message and float_found.suggestion == 'quote the value: compatibility: "1.0"'
    listed = only(check(make_skill, fm("name: demo-skill", "description:", "  - a")), "schema.description-type")
    assert "got a list" in listed.message


def test_xml_tag_in_name_is_high(make_skill: MakeSkill) -> None:
    result = check(make_skill, fm('name: "<b>demo</b>"', "description: d"))
    assert only(result, "schema.xml-tag").severity is Severity.HIGH


def test_unicode_name_with_fullwidth_folder_still_must_match_case(make_skill: MakeSkill) -> None:
    # NFKC folds full-width letters to ASCII but does not fold case: 'ＦＵＬＬ' is 'FULL', not 'full'.
    assert "schema.name-mismatch" in {f.rule for f in check(make_skill, fm("name: full", "description: d"), name="ＦＵＬＬ").findings}


def test_unknown_field_is_medium_with_line_and_hint(make_skill: MakeSkill) -> None:
    result = check(make_skill, fm("name: demo-skill", "description: d", "version: 1.0.0", "when_to_use: later"))
    assert worst(result) is Severity.MEDIUM
    version = next(f for f in result.findings if "'version'" in f.message)
    other = next(f for f in result.findings if "'when_to_use'" in f.message)
    assert (version.line, other.line) == (4, 5) and "metadata" in (version.suggestion or "")


def test_allowed_tools_list_is_low(make_skill: MakeSkill) -> None:
    result = check(make_skill, fm("name: demo-skill", "description: d", "allowed-tools:", "  - Bash", "  - Read"))
    found = only(result, "schema.allowed-tools-list")
    assert found.severity is Severity.LOW and found.suggestion == "allowed-tools: Bash Read" and found.line == 4
    spaced = only(check(make_skill, fm("name: demo-skill", "description: d", "allowed-tools:", "  - Azure MCP/docs")),
                  "schema.allowed-tools-list")
    assert "space" in (spaced.suggestion or "")
    empty = check(make_skill, fm("name: demo-skill", "description: d", "allowed-tools: []"))
    assert "schema.allowed-tools-type" in {f.rule for f in empty.findings}


def test_flow_style_is_low_at_first_occurrence(make_skill: MakeSkill) -> None:
    result = check(make_skill, fm("name: demo-skill", "description: d", "metadata:", "  author: me", "  tags: [a, b]",
                                  "  langs: {py: 3}"))
    found = only(result, "schema.flow-style")
    assert (found.severity, found.line) == (Severity.LOW, 6) and "2 in all" in found.message
    block = check(make_skill, fm("name: demo-skill", "description: d", "metadata:", "  tags:", "    - a", "  note: '[x]'"))
    assert block.findings == []


@pytest.mark.parametrize(("body", "has_finding"), [("Just text.\n", True), ("## Only a subsection\n", True), ("", True),
                                                   ("# Title\n", False), ("Title\n=====\n\ntext\n", False)])
def test_body_heading(make_skill: MakeSkill, body: str, has_finding: bool) -> None:
    result = check(make_skill, manifest(body=body))
    assert ("schema.body-heading" in {f.rule for f in result.findings}) is has_finding
    if has_finding:
        assert only(result, "schema.body-heading").severity is Severity.LOW
        assert only(result, "schema.body-heading").line == 5  # first body line
        assert only(check(make_skill, manifest(body=body), profile="strict"), "schema.body-heading").severity is Severity.HIGH


# -- strict profile --------------------------------------------------------------------------------
def strict(make_skill: MakeSkill, *lines: str, body: str = STRICT_BODY, name: str = "demo-skill") -> CheckResult:
    return check(make_skill, fm(*lines, body=body), name=name, profile="strict")


def test_strict_valid_skill_passes(make_skill: MakeSkill) -> None:
    assert strict(make_skill, "name: demo-skill", "description: d", *AUTHOR.splitlines()).findings == []


def test_strict_rules_are_off_under_spec(make_skill: MakeSkill) -> None:
    text = fm("name: claude-demo", "description: d", "alwaysApply: true", body="# T\n" + "x\n" * 600)
    assert {f.rule for f in check(make_skill, text, name="claude-demo").findings} == {"schema.unknown-field"}


@pytest.mark.parametrize(("author", "rule"), [(None, "schema.author-missing"), ("NVIDIA Corporation", "schema.author-format"),
                                              ("Jane <jane@localhost>", "schema.author-format"), ("<jane@example.com>", "schema.author-format"),
                                              ("Jane Doe <jane@example.com>", None), ("Holoscan Team <holo-team@nvidia.com>", None)])
def test_strict_author(make_skill: MakeSkill, author: str | None, rule: str | None) -> None:
    lines = ["name: demo-skill", "description: d"] + (["metadata:", f'  author: "{author}"'] if author else [])
    result = strict(make_skill, *lines)
    assert {f.rule for f in result.findings} == ({rule} if rule else set())
    if rule:
        assert only(result, rule).severity is Severity.HIGH


@pytest.mark.parametrize(("name", "reserved"), [("claude-helper", True), ("my-anthropic-tool", True), ("claude", True),
                                                ("claudette-helper", False), ("anthropics-fan", False)])
def test_strict_reserved_words_by_segment(make_skill: MakeSkill, name: str, reserved: bool) -> None:
    result = strict(make_skill, f"name: {name}", "description: d", *AUTHOR.splitlines(), name=name)
    assert ("schema.name-reserved" in {f.rule for f in result.findings}) is reserved


@pytest.mark.parametrize(("body", "expected"), [
    ("# T\n\n## Instructions\n\n## Examples\n", set()),
    ("# T\n\n## Usage\n\n## Example\n", set()),
    ("# T\n\n## Examples\n", {"schema.section-instructions"}),
    ("# T\n\n## Instructions\n\n### Examples\n", {"schema.section-examples"}),
    ("# T\n\nNothing else.\n", {"schema.section-instructions", "schema.section-examples"}),
])
def test_strict_recommended_sections(make_skill: MakeSkill, body: str, expected: set[str]) -> None:
    result = strict(make_skill, "name: demo-skill", "description: d", *AUTHOR.splitlines(), body=body)
    assert {f.rule for f in result.findings} == expected
    assert all(f.severity is Severity.MEDIUM for f in result.findings)


def test_strict_line_count(make_skill: MakeSkill) -> None:
    head = ["name: demo-skill", "description: d", *AUTHOR.splitlines()]
    fixed = len(fm(*head, body=STRICT_BODY).splitlines())
    at_limit = strict(make_skill, *head, body=STRICT_BODY + "x\n" * (500 - fixed))
    assert at_limit.findings == []
    over = strict(make_skill, *head, body=STRICT_BODY + "x\n" * (501 - fixed))
    assert only(over, "schema.line-count").severity is Severity.MEDIUM


@pytest.mark.parametrize("key", ["alwaysApply", "always_apply", "globs"])
def test_strict_forbidden_fields(make_skill: MakeSkill, key: str) -> None:
    result = strict(make_skill, "name: demo-skill", "description: d", *AUTHOR.splitlines(), f"{key}: true")
    found = only(result, "schema.forbidden-field")
    assert (found.severity, found.line) == (Severity.HIGH, 6) and "schema.unknown-field" not in {f.rule for f in result.findings}


# -- differential test against skills-ref ----------------------------------------------------------
DIFFERENTIAL: list[tuple[str, str, str | bytes]] = [
    ("valid-minimal", "valid-minimal", manifest("valid-minimal")),
    ("all-fields", "pdf-tools", fm("name: pdf-tools", "description: d", "license: MIT", "compatibility: git",
                                   "allowed-tools: Read", "metadata:", "  author: me")),
    ("bad-case-chars", "Bad_Name", manifest("Bad_Name")),
    ("too-long", "a" * 70, manifest("a" * 70)),
    ("hyphens", "hyphens", manifest("-bad--name-")),
    ("dir-mismatch", "dir-mismatch", manifest("other-name")),
    ("unicode", "unicode-名前", manifest("unicode-名前")),
    ("fullwidth-dir", "ＦＵＬＬ", manifest("full")),
    ("long-description", "longdesc", manifest("longdesc", "d" * 1100)),
    ("empty-description", "empty-desc", fm("name: empty-desc", 'description: ""')),
    ("missing-description", "missing-desc", fm("name: missing-desc")),
    ("long-compatibility", "compat-long", manifest("compat-long", extra="compatibility: " + "c" * 600 + "\n")),
    ("no-frontmatter", "no-frontmatter", "# Just a body\n"),
    ("unclosed", "unclosed", "---\nname: unclosed\ndescription: d\n"),
    ("list-frontmatter", "list-fm", "---\n- a\n- b\n---\n# B\n"),
    ("duplicate-keys", "dup-keys", fm("name: dup-keys", "description: d", "name: dup-keys")),
    ("crlf", "crlf", manifest("crlf").replace("\n", "\r\n")),
    ("folded-description", "multi", fm("name: multi", "description: >", "  Folded over", "  two lines.")),
    ("unknown-fields", "extra2", manifest("extra2", extra="author: me\nversion: 1.0.0\n")),
    ("flow-style", "flow", manifest("flow", extra="metadata:\n  tags: [a, b]\n")),
    ("bom", "bom", b"\xef\xbb\xbf" + manifest("bom").encode()),
    ("yaml-bool-name", "no", fm("name: no", "description: d")),
    ("xml-in-description", "xml", manifest("xml", "Wrap the answer in <answer> tags")),
    ("padded-name", "padded", fm('name: " padded "', "description: d")),
]

#: Where we disagree with skills-ref on purpose: case id -> (skills-ref fails?, we fail?, why).
INTENTIONAL = {
    "unknown-fields": (True, False, "unknown top-level fields are MEDIUM: agents ignore them and many real skills carry them"),
    "flow-style": (True, False, "flow collections are valid YAML; only strictyaml rejects them, so we report LOW"),
    "bom": (True, False, "skills-ref keeps the BOM and misses the frontmatter; we strip it and report MEDIUM"),
    "yaml-bool-name": (False, True, "strictyaml keeps 'no' a string; YAML 1.1 loaders (PyYAML) read a boolean"),
    "xml-in-description": (False, True, "XML tags in the description are rejected by Anthropic's API; skills-ref does not check"),
    "padded-name": (False, True, "skills-ref strips the name before checking; an agent sees the spaces, so we do not"),
}


@pytest.mark.parametrize(("case", "folder", "text"), DIFFERENTIAL, ids=[c[0] for c in DIFFERENTIAL])
def test_agrees_with_skills_ref(tmp_path: Path, case: str, folder: str, text: str | bytes) -> None:
    root = write_skill(tmp_path, folder, {"SKILL.md": text})
    reference = skills_ref.validate(root)
    ours = run_check(CHECK, Skill(root=root, key=folder), profile="spec")
    we_fail = any(f.severity.at_least(Severity.HIGH) for f in ours.findings)
    expected = INTENTIONAL.get(case)
    if expected is None:
        assert we_fail == bool(reference), f"skills-ref: {reference}; ours: {[f.format_line() for f in ours.findings]}"
    else:
        # The documented difference must still hold, or the list above is stale.
        assert (bool(reference), we_fail) == expected[:2], f"skills-ref: {reference}; ours: {ours.findings}"


# -- fields of agents, near misses, per-profile severity -------------------------------------------
@pytest.mark.parametrize(("key", "agent"), [("model", "Claude Code"), ("argument-hint", "VS Code Copilot"),
                                            ("disable-model-invocation", "Claude Code"), ("user-invocable", "Claude Code"),
                                            ("context", "Claude Code"), ("agent", "Claude Code"), ("when_to_use", "Claude Code")])
def test_agent_fields_are_accepted_and_named(make_skill: MakeSkill, key: str, agent: str) -> None:
    text = fm("name: demo-skill", "description: d", f"{key}: x")
    found = only(check(make_skill, text), "schema.agent-field")
    assert found.severity is Severity.INFO and agent in found.message and found.line == 4
    assert only(check(make_skill, text, profile="strict"), "schema.agent-field").severity is Severity.MEDIUM


@pytest.mark.parametrize(("key", "meant"), [("descripton", "description"), ("licence", "license"), ("allowed_tools", "allowed-tools"),
                                            ("user_invocable", "user-invocable"), ("Description", "description"),
                                            ("compatability", "compatibility"), ("metdata", "metadata"), ("tools", "allowed-tools")])
def test_near_miss_field_is_high_with_did_you_mean(make_skill: MakeSkill, key: str, meant: str) -> None:
    lines = [ln for ln in ("name: demo-skill", "description: d") if not ln.startswith(meant + ":")]
    result = check(make_skill, fm(*lines, f"{key}: x"))
    found = only(result, "schema.field-typo")
    assert found.severity is Severity.HIGH and f"did you mean '{meant}'" in found.message and found.line == len(lines) + 2
    assert "schema.unknown-field" not in {f.rule for f in result.findings}


def test_near_miss_beside_the_real_field_is_medium(make_skill: MakeSkill) -> None:
    found = only(check(make_skill, fm("name: demo-skill", "description: d", "tools: [Read]", "allowed-tools: Read")),
                 "schema.field-typo")
    assert found.severity is Severity.MEDIUM and "also sets 'allowed-tools'" in found.message


def test_near_miss_set_to_the_default_is_low(make_skill: MakeSkill) -> None:
    found = only(check(make_skill, fm("name: demo-skill", "description: d", "user_invocable: true")), "schema.field-typo")
    assert found.severity is Severity.LOW and "is the default" in found.message
    changed = only(check(make_skill, fm("name: demo-skill", "description: d", "user_invocable: false")), "schema.field-typo")
    assert changed.severity is Severity.HIGH


@pytest.mark.parametrize("key", ["version", "tags", "author", "owner", "title", "category", "triggers", "alwaysApply", "tag", "name"])
def test_ordinary_fields_are_not_near_misses(key: str) -> None:
    assert schema.near_miss(key) is None


def test_unknown_field_severity_follows_the_profile(make_skill: MakeSkill) -> None:
    text = fm("name: demo-skill", "description: d", "owner: team-x", *AUTHOR.splitlines(), body=STRICT_BODY)
    assert only(check(make_skill, text), "schema.unknown-field").severity is Severity.MEDIUM
    assert only(check(make_skill, text, profile="strict"), "schema.unknown-field").severity is Severity.HIGH


#: Why our ``schema`` verdict (spec profile) differs from skills-ref's on a corpus skill, by what each side said.
CORPUS_REASONS = {
    "unknown-fields": "skills-ref rejects fields outside the spec; under the spec profile an agent's own field is INFO and "
                      "any other unknown field MEDIUM (docs/checks.md), so they do not fail",
    "flow-style": "skills-ref's strictyaml rejects flow collections ('[a, b]'); they are valid YAML every agent reads: LOW",
    "xml-tag": "an XML tag in the description is rejected by Anthropic's API; skills-ref does not look",
}


def _disagreement_reason(reference: list[str], ours: list[Finding]) -> str | None:
    rules = {f.rule for f in ours}
    high = {f.rule for f in ours if f.severity.at_least(Severity.HIGH)}
    if reference and not high:
        if all(e.startswith("Unexpected fields in frontmatter") for e in reference) and rules & {"schema.unknown-field", "schema.agent-field"}:
            return "unknown-fields"
        if all(e.startswith("Invalid YAML in frontmatter") for e in reference) and "schema.flow-style" in rules:
            return "flow-style"
    if not reference and high == {"schema.xml-tag"}:
        return "xml-tag"
    return None


def test_corpus_verdicts_against_skills_ref(capsys: pytest.CaptureFixture[str]) -> None:
    """Every corpus skill where skills-ref and our ``schema`` disagree has a known reason; the list is printed."""
    roots = sorted(p.parent for p in CORPUS.glob("*/*/SKILL.md"))
    require(bool(roots), f"corpus not found at {CORPUS}")
    table: dict[str, list[str]] = {}
    unexplained = []
    for root in roots:
        reference = skills_ref.validate(root)
        ours = run_check(CHECK, Skill(root=root, key=root.name), profile="spec").findings
        if bool(reference) == any(f.severity.at_least(Severity.HIGH) for f in ours):
            continue
        reason = _disagreement_reason(reference, ours)
        if reason is None:
            unexplained.append(f"{root.parent.name}/{root.name}: skills-ref {reference}; ours {[f.format_line() for f in ours]}")
        else:
            table.setdefault(reason, []).append(f"{root.parent.name}/{root.name}")
    with capsys.disabled():
        print(f"\nschema vs skills-ref over {len(roots)} corpus skills: {sum(map(len, table.values()))} disagreements")
        for reason, skills in sorted(table.items()):
            print(f"  {len(skills):>4}  {reason}: {CORPUS_REASONS[reason]}\n        {', '.join(skills)}")
    assert not unexplained, "\n".join(unexplained)


def _near_miss_everywhere(key: str) -> str | None:
    """near_miss as defined: the nearest known field by edit distance over every field (ties by name)."""
    known = {schema._fold(k): k for k in (*schema.ALLOWED_FIELDS, *schema.AGENT_FIELDS)}
    folded = schema._fold(key)
    if folded in schema.FIELD_ALIASES:
        return schema.FIELD_ALIASES[folded]
    if folded in known:
        return known[folded] if known[folded] != key else None
    best = min(known, key=lambda k: (schema._edit_distance(folded, k), k))
    limit = 2 if len(best) > 6 else 1
    return known[best] if len(folded) >= 4 and schema._edit_distance(folded, best) <= limit else None


def test_near_miss_measures_only_fields_near_in_length() -> None:
    # near_miss skips fields whose length is more than 2 off (their distance is more than 2): the same
    # answer as measuring every field, for each known field's slips (a letter dropped, doubled, changed,
    # two swapped), short keys and every frontmatter key of the corpus
    known = [*schema.ALLOWED_FIELDS, *schema.AGENT_FIELDS]
    keys = {"", "a", "ab", "abc", "abcd", "tags", "version", "when_to_use", "x" * 40, "descripton", "licence"}
    for k in known:
        for i in range(len(k)):
            keys |= {k[:i] + k[i + 1:], k[:i] + k[i] + k[i:], k[:i] + "z" + k[i + 1:], k[:i] + k[i + 1:i + 2] + k[i] + k[i + 2:]}
        keys |= {k + "s", k.upper(), k.replace("-", "_"), k + "-extra", k[:3]}
    if CORPUS.is_dir():
        keys |= {str(key) for path in CORPUS.rglob("SKILL.md") for key in Skill(path.parent, path.parent.name).meta}
    assert len(keys) > 500
    assert {k: schema.near_miss(k) for k in keys} == {k: _near_miss_everywhere(k) for k in keys}
