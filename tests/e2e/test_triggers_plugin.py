"""Trigger mode as a user runs it: pytest items with ids, markers and JUnit properties, results.json's
``triggers`` section, the card and the terminal, advisory vs ``--block-on-triggers``, and ``-max 0``."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

pytest_plugins = ["pytester"]
COMMON = ("-p", "no:cacheprovider", f"--skilleval-agents-dir={AGENTS_DIR}", "-m", "triggers", "--skilleval-triggers",
          "--skilleval-agents=claude-code", "--skilleval-trigger-runs=1", "--junitxml=junit.xml")
SMALL = {"script": {"match": ["\\bcsv\\b"], "unless": ["xlsx"]},
         "queries": [{"id": "hit", "query": "What is in sales.csv?", "should_trigger": True},
                     {"id": "miss", "query": "Profile orders.tsv for me", "should_trigger": True},
                     {"id": "near", "query": "Convert sales.csv to JSON", "should_trigger": False},
                     {"id": "stolen", "query": "What should the next release version be?", "should_trigger": False}]}


def skills(pytester: pytest.Pytester) -> None:
    require(have("bwrap"), "trigger trials need bubblewrap (apt-get install bubblewrap)")
    require(CLIS["claude-code"].agent.locate([AGENTS_DIR]) is not None, "claude-code is not installed (make agents)")
    for name in ("csv-summary", "semver-bump"):
        shutil.copytree(REPO / "example_skills" / name, pytester.path / "skills" / name, ignore=shutil.ignore_patterns("evals"))
    (pytester.path / "skills" / "csv-summary" / "evals").mkdir()
    (pytester.path / "skills" / "csv-summary" / "evals" / "triggers.json").write_text(json.dumps(SMALL))
    (pytester.path / "skills" / "semver-bump" / "evals").mkdir()
    semver = json.loads((REPO / "example_skills" / "semver-bump" / "evals" / "triggers.json").read_text())
    (pytester.path / "skills" / "semver-bump" / "evals" / "triggers.json").write_text(json.dumps({"script": semver["script"], "queries": []}))


def test_items_reports_and_the_advisory_default(pytester: pytest.Pytester) -> None:
    skills(pytester)
    result = pytester.runpytest_subprocess("--skills", "skills", "-n", "2", *COMMON, timeout=600)
    out = result.stdout.str()
    assert result.ret == 0, out[-4000:]  # a wrong decision is advisory
    assert result.parseoutcomes() == {"passed": 2, "advisory": 2}, out[-3000:]  # "miss" is missed, "near" false-triggers
    cases = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
             for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    assert set(cases) == {"hit[claude-code-r1]", "miss[claude-code-r1]", "near[claude-code-r1]", "stolen[claude-code-r1]"}
    assert cases["hit[claude-code-r1]"]["skilleval.triggered"] == "true"
    assert cases["stolen[claude-code-r1]"]["skilleval.rival_loaded"] == "semver-bump"
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    [t] = [s["triggers"] for s in data["skills"] if s["key"] == "csv-summary"]
    [agent] = t["agents"]
    assert t["harness_check"] and t["rivals"] == ["semver-bump"] and t["rivals_digest"].startswith("sha256:")
    assert agent["confusion"] == {"tp": 1, "fn": 1, "fp": 1, "tn": 1} and agent["recall"]["value"] == 0.5
    assert agent["recall"]["low"] < 0.5 < agent["recall"]["high"] and agent["missed_queries"] == ["miss"]
    card = (pytester.path / "skilleval-report" / "csv-summary" / "BENCHMARK.md").read_text()
    assert "## Trigger Evaluation" in card and "| `stolen` | no | · (semver-bump) |" in card
    assert "triggers csv-summary [claude-code]: recall 50% precision 50% (TP 1 FN 1 FP 1 TN 1, 0 error(s)) — harness check" in out


def test_block_on_triggers_and_no_rivals(pytester: pytest.Pytester) -> None:
    skills(pytester)
    result = pytester.runpytest_subprocess("--skills", "skills/csv-summary", "--block-on-triggers=0.9,0.9",
                                           "--skilleval-trigger-rivals-max=0", *COMMON, timeout=600)
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]  # recall 50% < 90%: the thresholds fail the run
    assert "BELOW THRESHOLD" in out
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    [t] = [s["triggers"] for s in data["skills"]]
    assert t["rivals"] == [] and t["blocking"] and t["thresholds"] == {"recall": 0.9, "precision": 0.9}
    [agent] = t["agents"]
    assert agent["confusion"]["tn"] == 1 and agent["stealing_rivals"] == {} and agent["outcomes"][-1]["rivals"] == []  # nobody took "stolen"
