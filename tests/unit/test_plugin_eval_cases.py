"""Claude Code plugin-eval case folders (prompt.md, case.yaml, graders/) read as eval cases."""

from __future__ import annotations

from pathlib import Path

from conftest import manifest, write_skill

from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.case_formats.model import FileContains, FileExists, Judge, Regex, SkillInvoked, SkillNotInvoked
from pytest_skilleval.tier3.cases import load_cases

CASE_YAML = """schema_version: "1.1"
name: profile-sales
description: Profiles sales.csv with row count and column stats.
tags: [csv]
graders:
  - {name: rows, type: regex, pattern: "3 rows", flags: i}
  - {name: loads-skill, type: tool_used, tool: Skill, min: 1}
  - {name: wrote-report, type: file_exists, glob: "report.md"}
  - {name: report-has-mean, type: regex, source: file, path: report.md, pattern: "mean 8\\\\.5"}
  - {name: edits, type: tool_used, tool: Edit, max: 0}
  - {name: order, type: tool_order, first: Read, then: Bash}
"""
GRADER_MD = "---\ntype: llm\n---\n\nPASS if the reply names every column with its type.\nFAIL if it invents a column.\n"


def test_folder_cases_load_with_their_graders(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "csv-tools", {
        "SKILL.md": manifest("csv-tools"),
        "evals/profile/case.yaml": CASE_YAML,
        "evals/profile/prompt.md": "What is in sales.csv? Write the summary to report.md too.\n",
        "evals/profile/graders/columns.md": GRADER_MD,
        "evals/prompt-only/prompt.md": "---\nnote: frontmatter is stripped\n---\nSummarize orders.csv.\n",
        "evals/prompt-only/graders/never.md": "---\ntype: tool_used\ntool: Skill\nmax: 0\n---\n",
        "evals/negative/case.yaml": "name: neg\nshould_trigger: false\nexecution:\n  prompt: Reverse a string in Python.\n"
                                     "graders:\n  - {type: regex, pattern: '\\[::-1\\]'}\n",
    })
    cases = load_cases(Skill(root=root, key="csv-tools"))
    by_id = {c.id: c for c in cases}
    assert set(by_id) == {"profile-sales", "prompt-only", "neg"}
    profile = by_id["profile-sales"]
    assert profile.prompt.startswith("What is in sales.csv?") and profile.expected_skill == "csv-tools"
    kinds = [type(a) for a in profile.assertions]
    assert kinds.count(Regex) == 1 and SkillInvoked in kinds and FileExists in kinds and FileContains in kinds and Judge in kinds
    assert next(a for a in profile.assertions if isinstance(a, Regex)).ignore_case
    assert any("names every column" in a.text for a in profile.assertions if isinstance(a, Judge))
    assert by_id["prompt-only"].prompt == "Summarize orders.csv." and any(isinstance(a, SkillNotInvoked) for a in by_id["prompt-only"].assertions)
    assert by_id["neg"].expected_skill is None and by_id["neg"].prompt == "Reverse a string in Python."
    unsupported = sorted(p.message for p in cases.problems if p.rule == "grader-unsupported")
    assert len(unsupported) == 2 and "'edits' (tool_used)" in unsupported[0] and "'order' (tool_order)" in unsupported[1]
    assert {f.shape for f in cases.files} == {"plugin-eval"} and not [p for p in cases.problems if p.severity.value == "HIGH"]
