"""Fuzz: a catalog of generated malformed skills through the real plugin, scanners and xdist.

Hypothesis generates the skills (seeded: the same catalog every run); one ``pytest --skills`` run
over all of them with ``-n 2`` must end without an internal error or a traceback, give every item
a status, write a card per skill, and keep each process's peak memory bounded. The catalog size is
``SKILLEVAL_FUZZ_EXAMPLES`` (default 200; a nightly run sets thousands), the seed
``SKILLEVAL_FUZZ_SEED``, and ``SKILLEVAL_FUZZ_CHECKS`` narrows the checks (default: the default
selection, Tier 2 included).
"""

from __future__ import annotations

import itertools
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import fuzz_skills
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

pytest_plugins = ["pytester"]
EXAMPLES = int(os.environ.get("SKILLEVAL_FUZZ_EXAMPLES", "200"))
CHECKS = os.environ.get("SKILLEVAL_FUZZ_CHECKS", "")
SEED = int(os.environ.get("SKILLEVAL_FUZZ_SEED", "20261201"))
#: Peak resident memory any process of the run may reach (controller or worker; scanners excluded).
MAX_RSS_MB = int(os.environ.get("SKILLEVAL_FUZZ_MAX_RSS_MB", "1500"))
STATUSES = {"PASSED", "FAILED", "INCOMPLETE", "SKIPPED"}

RSS_PROBE = '''
import json, os, resource

def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(os.path.join(str(session.config.rootpath), f"rss-{who}.json"), "w") as fh:
        json.dump({"who": who, "rss_mb": rss_kb / 1024}, fh)
'''


def generate_catalog(catalog: Path, examples: int, seed_value: int) -> int:
    counter = itertools.count()

    @seed(seed_value)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(fuzz_skills.skill())
    def write_one(entries: list[fuzz_skills.Entry]) -> None:
        fuzz_skills.write(catalog / f"fuzz-{next(counter):05d}", entries)

    write_one()
    return next(counter)


def test_generated_malformed_skills(pytester: pytest.Pytester) -> None:
    catalog = pytester.path / "skills"
    generated = generate_catalog(catalog, EXAMPLES, SEED)
    assert generated >= min(EXAMPLES, 100)
    pytester.makeconftest(RSS_PROBE)
    result = pytester.runpytest_subprocess("--skills=skills", "-n", "2", "--skilleval-report-dir=rep", "--junitxml=junit.xml",
                                           "--skilleval-cache-dir=", "-p", "no:cacheprovider", "-q", "--tb=short",
                                           *([f"--skilleval-checks={CHECKS}"] if CHECKS else []),
                                           timeout=int(os.environ.get("SKILLEVAL_FUZZ_TIMEOUT_S", "3600")))
    text = result.stdout.str() + result.stderr.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-4000:]
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-4000:]

    # every item has a status: each JUnit test case has a result record in results.json, none an ERROR
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    items = {(c.get("classname", ""), c.get("name", "")) for c in cases}
    data = json.loads((pytester.path / "rep" / "results.json").read_text("utf-8"))
    records = [c["result"] for s in data["skills"] for c in s["checks"]]
    assert len(records) == len(items) > 0
    assert {r["status"] for r in records} <= STATUSES, sorted({r["status"] for r in records})
    assert data["complete"] is True and data["skill_count"] == len(list((pytester.path / "rep").rglob("BENCHMARK.md")))
    crashed = [(s["key"], c["result"]["check"], c["result"]["reason"]) for s in data["skills"] for c in s["checks"]
               if "crashed" in (c["result"]["reason"] or "") and c["result"]["status"] != "INCOMPLETE"]
    assert not crashed, crashed[:5]

    peaks = {p.name: json.loads(p.read_text())["rss_mb"] for p in pytester.path.glob("rss-*.json")}
    assert len(peaks) == 3, peaks  # the controller and two workers
    statuses = {s: sum(r["status"] == s for r in records) for s in sorted(STATUSES)}
    print(f"fuzz: {generated} skills, {len(records)} items {statuses}, peak RSS MB {peaks}")
    assert max(peaks.values()) < MAX_RSS_MB, peaks
