"""The quality check: named deductions, the weighted score, the pass mark and the long-file finding."""

from __future__ import annotations

import re
import string
from collections.abc import Callable

import pytest
from conftest import CORPUS, manifest, run_check

from pytest_skilleval.gate import Policy, final_status
from pytest_skilleval.results import CheckResult, Deduction, Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import quality
from pytest_skilleval.tier1.quality import QualityCheck, grade, score

MakeSkill = Callable[..., Skill]

GOOD_DESCRIPTION = ("Builds printable PDF reports from CSV tables. Use when the user asks for a report of tabular "
                    "results; not for editing existing PDFs.")
GOOD_BODY = """
# Report Builder

## Overview

Turns one or more CSV tables into a short printable PDF report with a title page, one section per
table and a summary of totals. It keeps the column order of the input and never rounds numbers.

## Requirements

- Python 3.11 or newer with the reportlab package installed.
- Read access to every CSV file named by the user.

## Usage

1. Ask the user which CSV files to include and what title the report should carry.
2. Run the builder once per report, passing every table in the order the user gave.
3. Open the resulting PDF and check that each table has a heading and a totals row.

```bash
report-builder --title "Quarterly sales" sales_q1.csv sales_q2.csv -o report.pdf
```

## Examples

A request such as "make a PDF of these two sales tables" becomes the command above, with the
title taken from the user's words and one section for each of the two tables.

## Troubleshooting

- If the builder fails with an encoding error, convert the CSV file to UTF-8 first and retry.
- An invalid or empty table is reported by name; ask the user for a corrected file.

## Limitations

- Tables wider than twelve columns are split across pages, which some readers dislike.
- Charts are out of reach: the builder only lays out tables and text.
"""

#: Everything a minimal, vague skill loses, as (dimension, rule, points).
VAGUE_DEDUCTIONS = {
    ("correctness", "body-too-short", 15),
    ("correctness", "body-nearly-empty", 45),
    ("correctness", "no-examples", 10),
    ("discoverability", "description-short", 20),
    ("discoverability", "no-trigger", 10),
    ("discoverability", "vague-description", 15),
    ("discoverability", "name-short", 5),
    ("discoverability", "no-purpose-section", 5),
    ("reliability", "no-error-guidance", 10),
    ("reliability", "no-requirements-section", 5),
    ("reliability", "no-limitations-section", 5),
    ("reliability", "no-troubleshooting-section", 5),
}


def good_skill(make_skill: MakeSkill, body: str = GOOD_BODY, extra_files: dict[str, str | bytes] | None = None,
               name: str = "report-builder", **kw: str) -> Skill:
    files: dict[str, str | bytes] = {"SKILL.md": manifest(name, kw.pop("description", GOOD_DESCRIPTION), body=body, **kw)}
    files.update(extra_files or {})
    return make_skill(files, name=name)


def triples(result: CheckResult) -> set[tuple[str, str, int]]:
    return {(d.dimension, d.rule, d.points) for d in result.deductions}


def rule_names(result: CheckResult) -> set[str]:
    return {d.rule for d in result.deductions}


def outcome(result: CheckResult) -> Status:
    return final_status(result, Policy())[0]


# -- whole skills -------------------------------------------------------------------------------------
def test_well_formed_skill_scores_full_marks_and_passes(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill))
    assert result.deductions == []
    assert result.score == 100.0
    assert result.min_score == 70.0
    assert result.findings == []
    assert outcome(result) is Status.PASSED
    assert result.metrics == {"correctness": 100, "discoverability": 100, "reliability": 100, "efficiency": 100,
                              "grade": "A", "skill_type": "guide-only", "tokens": result.metrics["tokens"]}
    assert 300 < result.metrics["tokens"] < 1000


def test_minimal_vague_skill_fails_with_named_deductions(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": manifest("demo", "Does stuff.", body="# Demo\n\nDo things.\n")}, name="demo")
    result = run_check(QualityCheck(), skill)
    assert triples(result) == VAGUE_DEDUCTIONS
    # correctness 30, discoverability 45, reliability 75, efficiency 100:
    # 0.35*30 + 0.25*45 + 0.25*75 + 0.15*100 = 10.5 + 11.25 + 18.75 + 15 = 55.5
    assert result.score == 55.5
    assert {k: result.metrics[k] for k in quality.WEIGHTS} == {"correctness": 30, "discoverability": 45,
                                                                "reliability": 75, "efficiency": 100}
    assert result.metrics["grade"] == "F"
    assert outcome(result) is Status.FAILED
    # deductions are not findings; a description with no 'when' is both (see the no-when tests)
    assert [f.rule for f in result.findings] == ["quality.no-when"]
    assert all(d.reason for d in result.deductions)
    short = next(d for d in result.deductions if d.rule == "description-short")
    assert "11 characters" in short.reason


@pytest.mark.parametrize("files", [
    {"SKILL.md": "# Demo\n\nNo frontmatter at all, just a heading.\n"},
    {"SKILL.md": "---\nname: [unclosed\ndescription: x\n---\nbody\n"},
    {"SKILL.md": "---\n- a\n- list\n---\nbody\n"},
    {"SKILL.md": "---\nname: demo-skill\n"},
    {"SKILL.md": ""},
    {"SKILL.md": b"\xff\xfe\x00binary\x00junk"},
    {"README.md": "no manifest here"},
], ids=["no-frontmatter", "bad-yaml", "not-mapping", "unclosed", "empty-file", "binary", "no-manifest"])
def test_broken_frontmatter_costs_correctness_and_still_scores(make_skill: MakeSkill, files: dict[str, str | bytes]) -> None:
    result = run_check(QualityCheck(), make_skill(files))
    assert result.status is Status.PASSED  # the check completed; the gate decides
    assert ("correctness", "frontmatter-invalid", 50) in triples(result)
    assert ("discoverability", "undiscoverable", 60) in triples(result)
    assert result.score is not None and 0 <= result.score < 70
    assert outcome(result) is Status.FAILED


def test_broken_frontmatter_fails_even_with_a_perfect_body(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), make_skill({"SKILL.md": GOOD_BODY}))
    assert triples(result) == {("correctness", "frontmatter-invalid", 50), ("discoverability", "undiscoverable", 60)}
    assert "SKILL.md must start with '---'" in result.deductions[0].reason
    assert result.score == 67.5  # 0.35*50 + 0.25*40 + 25 + 15


def test_missing_description_fails_a_perfect_body(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": f"---\nname: report-builder\n---\n{GOOD_BODY}"}, name="report-builder")
    result = run_check(QualityCheck(), skill)
    assert rule_names(result) == {"description-missing", "undiscoverable"}
    assert result.score == 67.5


def test_empty_body_fails_even_with_a_good_description(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, body="\n"))
    assert {"body-too-short", "body-nearly-empty"} <= rule_names(result)
    assert result.score is not None and result.score < 70


# -- the score ---------------------------------------------------------------------------------------
def ded(dimension: str, points: int, rule: str = "r") -> Deduction:
    return Deduction(dimension=dimension, rule=rule, points=points, reason="test")


@pytest.mark.parametrize(("dimension", "expected"), [
    ("correctness", 96.5), ("discoverability", 97.5), ("reliability", 97.5), ("efficiency", 98.5)])
def test_each_dimension_carries_its_weight(dimension: str, expected: float) -> None:
    dims, overall = score([ded(dimension, 10)])
    assert dims[dimension] == 90
    assert overall == expected


def test_weights_by_hand() -> None:
    # 0.35*90 + 0.25*80 + 0.25*70 + 0.15*60 = 31.5 + 20 + 17.5 + 9 = 78.0
    dims, overall = score([ded("correctness", 10), ded("discoverability", 20), ded("reliability", 30),
                           ded("efficiency", 25, "a"), ded("efficiency", 15, "b")])
    assert dims == {"correctness": 90, "discoverability": 80, "reliability": 70, "efficiency": 60}
    assert overall == 78.0


def test_rounds_half_up_to_one_decimal() -> None:
    # 0.35*95 + 75 = 98.25: binary-float round() would give 98.2
    assert score([ded("correctness", 5)])[1] == 98.3
    assert score([ded("correctness", 5), ded("efficiency", 5)])[1] == 97.5


def test_dimensions_floor_at_zero_and_score_is_bounded() -> None:
    dims, overall = score([ded("correctness", 80), ded("correctness", 70)])
    assert dims["correctness"] == 0
    assert overall == 65.0
    assert score([ded(d, 500) for d in quality.WEIGHTS])[1] == 0.0
    assert score([])[1] == 100.0


def test_rule_points_are_positive_and_dimensions_known() -> None:
    names = [r.name for r in quality.RULES]
    assert len(names) == len(set(names))
    assert all(r.points > 0 and r.dimension in quality.WEIGHTS for r in quality.RULES)


@pytest.mark.parametrize(("value", "letter"), [(100, "A"), (90, "A"), (89.9, "B"), (80, "B"), (79.9, "C"), (70, "C"),
                                               (69.9, "D"), (60, "D"), (59.9, "F"), (0, "F")])
def test_grades(value: float, letter: str) -> None:
    assert grade(value) == letter


def test_min_quality_setting_is_the_pass_mark(make_skill: MakeSkill) -> None:
    skill = good_skill(make_skill, body=GOOD_BODY.replace("## Limitations", "## Notes"))  # 100 - 0.25*5 = 98.8
    strict = run_check(QualityCheck(), skill, min_quality=99.0)
    assert strict.score == 98.8 and strict.min_score == 99.0
    assert outcome(strict) is Status.FAILED
    lenient = run_check(QualityCheck(), make_skill({"SKILL.md": manifest("demo", "Does stuff.", body="# Demo\n")},
                                                   name="demo"), min_quality=50.0)
    assert lenient.score is not None and 50 <= lenient.score < 70
    assert outcome(lenient) is Status.PASSED


# -- long files --------------------------------------------------------------------------------------
def long_body(chars: int) -> str:
    lines = [f"- Step {i}: run the validator on input file number {i} and record its result." for i in range(chars // 70 + 1)]
    return (GOOD_BODY + "\n".join(lines))


def test_over_5000_tokens_is_a_medium_finding_and_a_deduction(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, body=long_body(21_000)))
    assert result.metrics["tokens"] > 5000
    assert [(f.rule, f.severity, f.file) for f in result.findings] == [("quality.too-long", Severity.MEDIUM, "SKILL.md")]
    assert triples(result) == {("efficiency", "too-long", 15)}
    assert result.score == 97.8  # 100 - 0.15*15 = 97.75, rounded half-up
    assert outcome(result) is Status.PASSED  # MEDIUM is under the default --skilleval-fail-on=high
    assert final_status(result, Policy(fail_on=Severity.MEDIUM))[0] is Status.FAILED


def test_exactly_5000_tokens_is_fine(make_skill: MakeSkill) -> None:
    text = manifest("report-builder", GOOD_DESCRIPTION, body=GOOD_BODY)
    text += "x" * (20_000 - len(text) - 1) + "\n"
    result = run_check(QualityCheck(), make_skill({"SKILL.md": text}, name="report-builder"))
    assert result.metrics["tokens"] == 5000
    assert result.findings == [] and "too-long" not in rule_names(result)


# -- the fixed inconsistencies -----------------------------------------------------------------------
def test_no_top_level_version_needed_and_metadata_version_is_fine(make_skill: MakeSkill) -> None:
    skill = good_skill(make_skill, extra="metadata:\n  version: 1.2.0\n")
    assert run_check(QualityCheck(), skill).deductions == []


def test_a_code_block_counts_as_an_example(make_skill: MakeSkill) -> None:
    without_section = GOOD_BODY.replace("## Examples", "## Notes")
    assert "no-examples" not in rule_names(run_check(QualityCheck(), good_skill(make_skill, body=without_section)))
    no_code = without_section.replace("```bash\n", "").replace("\n```\n", "\n")
    assert "no-examples" in rule_names(run_check(QualityCheck(), good_skill(make_skill, body=no_code)))


def test_headings_inside_code_are_not_sections(make_skill: MakeSkill) -> None:
    body = GOOD_BODY.replace("## Limitations", "```\n## Limitations\n```\n\n## Notes")
    assert "no-limitations-section" in rule_names(run_check(QualityCheck(), good_skill(make_skill, body=body)))


@pytest.mark.parametrize(("original", "synonym"), [
    ("## Usage", "## Quick start"), ("## Usage", "## Workflow"), ("## Usage", "## Instructions"), ("## Usage", "## Steps"),
    ("## Examples", "## Example"), ("## Troubleshooting", "## Common issues"), ("## Troubleshooting", "## FAQ"),
    ("## Troubleshooting", "## Pitfalls"), ("## Requirements", "## Prerequisites"), ("## Requirements", "## Setup"),
    ("## Limitations", "## When not to use"), ("## Overview", "## When to use"), ("## Overview", "## Purpose")])
def test_section_synonyms(make_skill: MakeSkill, original: str, synonym: str) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, body=GOOD_BODY.replace(original, synonym)))
    assert result.deductions == []


@pytest.mark.parametrize("synonym", ["Usage", "Quick start", "Workflow", "Instructions", "Steps", "How to use"])
def test_usage_section_found_by_synonym(make_skill: MakeSkill, synonym: str) -> None:
    # the usage rules judge the section's content, so a prose-only section shows that it was found
    start, end = GOOD_BODY.index("## Usage"), GOOD_BODY.index("## Examples")
    body = GOOD_BODY[:start] + f"## {synonym}\n\nNothing more is needed here.\n\n" + GOOD_BODY[end:]
    result = run_check(QualityCheck(), good_skill(make_skill, body=body))
    assert triples(result) == {("efficiency", "usage-no-action-verbs", 15), ("efficiency", "usage-unstructured", 5)}


def test_usage_section_is_the_shallowest_match(make_skill: MakeSkill) -> None:
    # "## Workflow" is judged as a whole, not by its prose-only "### Step 2"
    start, end = GOOD_BODY.index("## Usage"), GOOD_BODY.index("## Examples")
    body = (GOOD_BODY[:start] + "## Workflow\n\n1. Run the builder.\n\n### Step 2\n\nNothing more is needed here.\n\n"
            + GOOD_BODY[end:])
    assert run_check(QualityCheck(), good_skill(make_skill, body=body)).deductions == []


def test_a_command_block_needs_no_verbs(make_skill: MakeSkill) -> None:
    start, end = GOOD_BODY.index("## Usage"), GOOD_BODY.index("## Examples")
    body = GOOD_BODY[:start] + "## Quick start\n\n```bash\npdfgen tables/*.csv\n```\n\n" + GOOD_BODY[end:]
    assert run_check(QualityCheck(), good_skill(make_skill, body=body)).deductions == []


@pytest.mark.parametrize(("heading", "rule"), [
    ("## Overview", "no-purpose-section"), ("## Requirements", "no-requirements-section"),
    ("## Limitations", "no-limitations-section"), ("## Troubleshooting", "no-troubleshooting-section")])
def test_each_missing_section_is_named(make_skill: MakeSkill, heading: str, rule: str) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, body=GOOD_BODY.replace(heading, "## Notes")))
    assert [d.rule for d in result.deductions] == [rule]
    assert result.deductions[0].points == 5


def test_scripts_must_be_named_but_not_with_run_script(make_skill: MakeSkill) -> None:
    script = {"scripts/build_report.py": "import sys\n\ntry:\n    main()\nexcept OSError:\n    sys.exit(1)\n"}
    unnamed = run_check(QualityCheck(), good_skill(make_skill, extra_files=script))
    assert unnamed.metrics["skill_type"] == "script-based"
    assert triples(unnamed) == {("correctness", "scripts-unreferenced", 10)}
    named = good_skill(make_skill, body=GOOD_BODY + "\nRun `python scripts/build_report.py` for one table.\n",
                       extra_files=script)
    assert run_check(QualityCheck(), named).deductions == []


def test_scripts_without_error_handling(make_skill: MakeSkill) -> None:
    body = GOOD_BODY + "\nRun `scripts/go.sh` to build.\n"
    result = run_check(QualityCheck(), good_skill(make_skill, body=body, extra_files={"scripts/go.sh": "echo hi\n"}))
    assert triples(result) == {("reliability", "scripts-unguarded", 5)}
    assert "scripts/go.sh" in result.deductions[0].reason


@pytest.mark.parametrize(("files", "kind"), [
    ({}, "guide-only"),
    ({"references/api-guide.md": "# API\n"}, "resource-based"),
    ({"scripts/build.py": "raise SystemExit(1)\n"}, "script-based"),
    ({"scripts/build.py": "raise SystemExit(1)\n", "assets/logo.txt": "logo\n"}, "hybrid"),
    ({"tests/test_it.md": "x\n", ".claude-plugin/plugin.json": "{}"}, "guide-only"),
])
def test_skill_type(make_skill: MakeSkill, files: dict[str, str | bytes], kind: str) -> None:
    assert run_check(QualityCheck(), good_skill(make_skill, extra_files=files)).metrics["skill_type"] == kind


def test_document_folders_must_be_mentioned(make_skill: MakeSkill) -> None:
    files: dict[str, str | bytes] = {"references/api-guide.md": "# API\n", "config/defaults.yaml": "a: 1\n"}
    result = run_check(QualityCheck(), good_skill(make_skill, extra_files=files))
    assert triples(result) == {("correctness", "resources-unreferenced", 10)}
    assert "references/" in result.deductions[0].reason and "config/" not in result.deductions[0].reason
    linked = good_skill(make_skill, body=GOOD_BODY + "\nSee [the API guide](references/api-guide.md).\n", extra_files=files)
    assert run_check(QualityCheck(), linked).deductions == []


def test_references_stay_one_level_deep(make_skill: MakeSkill) -> None:
    files: dict[str, str | bytes] = {"references/api-guide.md": "See [errors](error-codes.md) and [home](../SKILL.md).\n",
                                     "references/error-codes.md": "# Codes\n"}
    body = GOOD_BODY + "\nRead references/api-guide.md first.\n"
    result = run_check(QualityCheck(), good_skill(make_skill, body=body, extra_files=files))
    assert triples(result) == {("efficiency", "nested-references", 10)}
    assert "references/api-guide.md links to error-codes.md" in result.deductions[0].reason


@pytest.mark.parametrize("link", ["../SKILL.md", "../../other-skill/references/x.md", "https://example.com/a.md", "#codes"])
def test_links_home_or_out_of_the_skill_are_not_nesting(make_skill: MakeSkill, link: str) -> None:
    files: dict[str, str | bytes] = {"references/api-guide.md": f"See [there]({link}).\n"}
    body = GOOD_BODY + "\nRead references/api-guide.md first.\n"
    assert run_check(QualityCheck(), good_skill(make_skill, body=body, extra_files=files)).deductions == []


@pytest.mark.parametrize(("description", "rule", "points"), [
    ("Builds PDF reports from tables for you when asked to print results nicely.", "personal-description", 10),
    ("Builds PDF reports from CSV tables and prints <b>bold</b> totals.", "xml-in-description", 15),
    ("Builds PDF reports from CSV tables, and various other things.", "vague-description", 15),
    ("Builds PDF reports from CSV tables with totals and page numbers.", "no-trigger", 10),
])
def test_description_rules(make_skill: MakeSkill, description: str, rule: str, points: int) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, description=description))
    assert ("discoverability" if rule != "xml-in-description" else "correctness", rule, points) in triples(result)


def test_general_in_a_boundary_is_not_vague(make_skill: MakeSkill) -> None:
    skill = good_skill(make_skill, description=GOOD_DESCRIPTION.replace("existing PDFs", "general PDF questions"))
    assert run_check(QualityCheck(), skill).deductions == []


def test_xml_in_other_frontmatter_fields(make_skill: MakeSkill) -> None:
    hint = good_skill(make_skill, extra="argument-hint: <csv-file> [title]\n")
    assert run_check(QualityCheck(), hint).deductions == []
    nested = good_skill(make_skill, extra="metadata:\n  notes:\n    - keep <b>totals</b> bold\n")
    result = run_check(QualityCheck(), nested)
    assert triples(result) == {("correctness", "xml-in-frontmatter", 15)}
    assert "'metadata'" in result.deductions[0].reason


def test_bad_name_costs_correctness(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, name="Report_Builder"))
    assert triples(result) == {("correctness", "name-format", 15)}


def test_catalog_rules_only_in_strict_profile(make_skill: MakeSkill) -> None:
    skill = good_skill(make_skill, name="claude-reports")
    assert run_check(QualityCheck(), skill).deductions == []
    strict = run_check(QualityCheck(), skill, profile="strict")
    assert triples(strict) == {("correctness", "reserved-word", 15), ("correctness", "metadata-author", 5),
                               ("correctness", "metadata-tags", 5)}


def test_windows_paths_and_buzzwords(make_skill: MakeSkill) -> None:
    body = GOOD_BODY + "\nRun scripts\\build.py to leverage the builder.\n"
    assert {"windows-paths", "buzzwords"} <= rule_names(run_check(QualityCheck(), good_skill(make_skill, body=body)))


def test_the_buzzword_prefilter_never_hides_a_match() -> None:
    # _buzzwords skips the pattern when no stem is in the lower-cased text: that is exact only if the
    # characters IGNORECASE folds to ASCII letters, which lower() does not lower to them, are all known
    letters = [re.compile(f"(?i){a}") for a in string.ascii_lowercase]
    maybe = re.compile("(?i)[a-z]")
    folds = {chr(cp) for cp in range(128, 0x110000) if maybe.fullmatch(chr(cp))}
    assert folds == {c for c in folds if any(p.fullmatch(c) for p in letters)}
    assert folds == set(quality._FOLDS_TO_ASCII)
    assert all(any(stem in m.lower() for stem in quality.BUZZWORD_STEMS) for m in
               ("utilise", "UTILIZE", "Facilitate", "leverage", "paradigm", "synergy", "Seamlessly", "cutting-edge"))
    for text in ("We ſeamlessly leverage", "a \u212aEY paradigm", "utılıze it", "nothing here", "Cutting-Edge!"):
        assert quality._buzzwords(text) == {m.group(0).lower() for m in quality.BUZZWORDS.finditer(text)}
    assert quality._buzzwords("We \u017feamlessly go") == {"\u017feamlessly"}


def test_plugin_contributes_the_check(pytestconfig: pytest.Config) -> None:
    checks = quality.pytest_skilleval_checks(pytestconfig)
    assert [type(c) for c in checks] == [QualityCheck] and checks[0].name == "quality"


# -- far beyond the guidance: a HIGH finding that says what to move ----------------------------------
def test_far_beyond_the_guidance_fails_and_names_what_to_move(make_skill: MakeSkill) -> None:
    api = "## API reference\n\n" + "".join(f"- `call_{n}(x)` returns the {n}th value of the table.\n" for n in range(700))
    tables = "## Error codes\n\n" + "".join(f"| E{n} | meaning {n} |\n" for n in range(300))
    result = run_check(QualityCheck(), good_skill(make_skill, body=GOOD_BODY + "\n" + api + "\n" + tables))
    far = [f for f in result.findings if f.rule == "quality.far-too-long"]
    assert len(far) == 1 and far[0].severity is Severity.HIGH
    assert "'API reference' (" in far[0].message and "references/" in (far[0].suggestion or "")
    assert far[0].message.index("API reference") < far[0].message.index("Error codes")  # the longest first
    assert outcome(result) is Status.FAILED


def test_just_over_5000_tokens_is_not_far_too_long(make_skill: MakeSkill) -> None:
    result = run_check(QualityCheck(), good_skill(make_skill, body=long_body(21_000)))
    assert "quality.far-too-long" not in {f.rule for f in result.findings}


def test_description_that_never_says_when_is_a_medium_finding(make_skill: MakeSkill) -> None:
    text = manifest("report-builder", "Printable PDF reports from CSV tables with a title page and totals.", body=GOOD_BODY)
    result = run_check(QualityCheck(), make_skill({"SKILL.md": text}, name="report-builder"))
    found = [f for f in result.findings if f.rule == "quality.no-when"]
    assert len(found) == 1 and found[0].severity is Severity.MEDIUM and found[0].line == 3
    good = run_check(QualityCheck(), good_skill(make_skill))
    assert "quality.no-when" not in {f.rule for f in good.findings}


@pytest.mark.parametrize(("words", "short", "nearly_empty"), [(0, True, True), (29, True, True), (30, True, False),
                                                               (149, True, False), (150, False, False), (20_000, False, False)])
def test_body_word_count_around_the_thresholds(make_skill: MakeSkill, words: int, short: bool, nearly_empty: bool) -> None:
    # words are counted only as far as a rule looks (150): the verdicts and the counts the messages
    # quote must be those of a whole count
    body = "\n# Guide\n\n" + " ".join(f"w{n}" for n in range(words - 1)) + "\n" if words else "\n"
    facts = quality.Facts(good_skill(make_skill, body=body))  # a guide-only skill: 150 words at least
    reasons = {d.rule: d.reason for d in run_check(QualityCheck(), good_skill(make_skill, body=body)).deductions}
    assert ("body-too-short" in reasons) is short and ("body-nearly-empty" in reasons) is nearly_empty
    if short:
        assert reasons["body-too-short"].startswith(f"body has {words} words;")
    assert facts.words == min(words, quality.WORDS_COUNTED)


#: Texts where the fast paths of quality's body rules could part ways with their patterns: case, the
#: characters IGNORECASE folds to ASCII letters, word boundaries, fences behind Unicode spaces, CR.
_EDGE_BODIES = ("ERRORS happen. Retrying", "no mistakes here", "ınvalid input", "Fail\u017fafe", "preerror", "error_code",
                "We ſeamlessly LEVERAGE", "Utilize, utilise; utility", "x\u212a paradigm", "cutting-edge.", "İnvalid",
                "```\ncode\n```\n\u3000```python\n \t~~~\n\u2028```x\nword\r\n```\r\n__\n\n-- --\nλόγος\n",
                "scripts\\run.py and references\\a.md", "assets\\\\x", "Scripts\\a", "templates\\ ")


def _bodies() -> list[str]:
    bodies = list(_EDGE_BODIES)
    if CORPUS.is_dir():
        bodies += [Skill(p.parent, p.parent.name).body for p in sorted(CORPUS.rglob("SKILL.md"))]
    return bodies


def test_body_rules_fast_paths_match_their_patterns() -> None:
    # distinct_lines in one pass over the body, the error words and buzzwords found case-sensitively in
    # the lower-cased body (from the first place one may begin), Windows paths searched only where one
    # may be: each the same as its pattern over every corpus body and the edge cases
    bodies = _bodies()
    assert len(bodies) > 700
    for body in bodies:
        lines = [ln.strip() for ln in body.split("\n") if quality.WORD_CHAR.search(ln) and not quality.FENCE.match(ln)]
        assert [ln.strip() for ln in quality.WORDY_LINE.findall(body)] == lines, body[:80]
        assert quality._error_words(body) == bool(quality.ERROR_WORDS.search(body)), body[:80]
        assert quality._buzzwords(body) == {m.group(0).lower() for m in quality.BUZZWORDS.finditer(body)}, body[:80]
        windows = quality.WINDOWS_PATH.search(body)
        assert windows is None or any(n in windows.group(0) for n in quality.WINDOWS_PATH_NEEDS), body[:80]


def test_facts_body_rules_match_their_patterns(make_skill: MakeSkill) -> None:
    # Facts lowers the body once for the error words and the buzzwords (and the stripped description
    # for these): the same as the patterns over the body and over body + description
    for body, description in (("We ſeamlessly go. Errors!", "Use when x"), ("Leverage it", "Uses \u212a synergy"),
                              ("plain", "  Utilize when asked  "), ("FAILURE modes", "İnvalid paradigm")):
        skill = good_skill(make_skill, body=body, description=description)
        facts = quality.Facts(skill)
        assert facts.mentions_errors == bool(quality.ERROR_WORDS.search(skill.body))
        text = skill.body + "\n" + skill.description.strip()
        assert facts.buzzwords == {m.group(0).lower() for m in quality.BUZZWORDS.finditer(text)}
