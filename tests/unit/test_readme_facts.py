"""Facts the README states that the code decides: they are read from the code, so the text cannot drift from it."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_skilleval.published import PUBLISHED
from pytest_skilleval.reports.model import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text("utf-8")


def _section(heading: str) -> str:
    return README.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_results_json_schema_version_is_the_models() -> None:
    stated = re.findall(r"`schema_version` `([^`]+)`", README)
    assert stated == [SCHEMA_VERSION]


def test_the_junit_properties_named_are_the_ones_items_publish() -> None:
    junit = next(line for line in _section("### Reports").split("\n- ") if line.startswith("JUnit"))
    assert sorted(p for p in PUBLISHED if f"`{p}`" not in junit) == []  # each kind of item's record is named
    assert "each item carries" not in junit and "every item carries" not in junit  # none carries all of them


def test_make_eval_is_described_as_what_the_makefile_runs() -> None:
    recipe = (REPO / "Makefile").read_text("utf-8").split("\neval:", 1)[1].split("\n\n", 1)[0]
    line = next(line for line in _section("## Two commands").splitlines() if line.startswith("make eval"))
    assert "--skilleval-tier3" in recipe
    assert "Tier 1 on" not in line and "all three tiers" in line, line
