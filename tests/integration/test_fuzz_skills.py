"""Fuzz: a catalog of generated malformed skills through the real plugin, scanners and xdist.

Hypothesis generates the skills (seeded: the same catalog every run); one ``pytest --skills`` run
over all of them with ``-n 2`` must end without an internal error or a traceback, give every item
a status, write a card per skill, and keep each process's memory bounded: a peak for every process, and
for the report controller a bound on what it keeps per skill while the items run (it held every result
until session end once: about 0.5 MB a skill, 2.4 GB over 5,000). The catalog size is
``SKILLEVAL_FUZZ_EXAMPLES`` (default 150; a nightly run sets thousands), the seed
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
EXAMPLES = int(os.environ.get("SKILLEVAL_FUZZ_EXAMPLES", "150"))
CHECKS = os.environ.get("SKILLEVAL_FUZZ_CHECKS", "")
SEED = int(os.environ.get("SKILLEVAL_FUZZ_SEED", "20261201"))
#: Peak resident memory any process of the run may reach (controller or worker; scanners excluded).
MAX_RSS_MB = int(os.environ.get("SKILLEVAL_FUZZ_MAX_RSS_MB", "1500"))
#: What the controller's resident memory may grow per skill while the items run (pytest's own JUnit
#: tree and kept reports; not the results, which go to a spool on disk).
MAX_CONTROLLER_KB_PER_SKILL = int(os.environ.get("SKILLEVAL_FUZZ_MAX_CONTROLLER_KB_PER_SKILL", "250"))
#: The same for each xdist worker: it keeps every item, but nothing of an item's run once its reports
#: are out (it grew 277-381 KB a skill when results, failures and reports stayed: release.py). What
#: is left is pytest's and its plugins' few hundred bytes per item (caplog and rerun state on the
#: item, warning filters): 45-80 KB a skill over 5,000 skills, and anywhere from 1 to 115 over
#: 200 skills (which skills a worker draws; seen in CI). The bound sits between the two.
MAX_WORKER_KB_PER_SKILL = int(os.environ.get("SKILLEVAL_FUZZ_MAX_WORKER_KB_PER_SKILL", "200"))
STATUSES = {"PASSED", "FAILED", "INCOMPLETE", "SKIPPED"}

RSS_PROBE = '''
import ctypes, ctypes.util, gc, json, os, resource
import pytest

try:
    TRIM = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim  # glibc
except (OSError, AttributeError, TypeError):
    TRIM = None

seen = {}

def rss_mb():
    with open("/proc/self/statm") as fh:  # resident now (ru_maxrss is only the peak)
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def pytest_runtest_logreport(report):
    if report.when == "call":  # resident memory after every 25th item: growth per item, without start-up costs
        seen["calls"] = seen.get("calls", 0) + 1
        if seen["calls"] % 25 == 0:
            # what is alive, not the allocator's high-water mark: freed blocks go back to the system first
            gc.collect()
            if TRIM is not None:
                TRIM(0)
            seen.setdefault("rss_by_calls", []).append((seen["calls"], rss_mb()))

def pytest_unconfigure(config):  # after the reports are written: the peak includes writing them
    who = getattr(config, "workerinput", {}).get("workerid", "controller")
    seen.update(who=who, rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    with open(os.path.join(str(config.rootpath), f"rss-{who}.json"), "w") as fh:
        json.dump(seen, fh)
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

    probes = {p.stem.removeprefix("rss-"): json.loads(p.read_text()) for p in pytester.path.glob("rss-*.json")}
    assert len(probes) == 3, probes  # the controller and two workers
    peaks = {who: round(p["rss_mb"]) for who, p in probes.items()}
    # each process's growth over the second half of the items it ran, per skill (one-time costs come early)
    items_per_skill = len(records) / generated

    def kept_kb_per_skill(who: str) -> float:
        samples = probes[who]["rss_by_calls"]
        (mid_calls, mid_mb), (end_calls, end_mb) = samples[len(samples) // 2], samples[-1]
        return (end_mb - mid_mb) * 1024 / ((end_calls - mid_calls) / items_per_skill)

    def worker_kept_kb_per_skill(who: str) -> float:
        """The median of the slopes between every two samples of the second half (Theil-Sen): a worker's
        memory steps up once or twice (a huge skill, an allocator arena), which says nothing of what
        it keeps per skill, and which the end-minus-middle slope of a short run mistakes for growth."""
        half = probes[who]["rss_by_calls"][len(probes[who]["rss_by_calls"]) // 2:]
        slopes = sorted((b_mb - a_mb) / (b_calls - a_calls) for (a_calls, a_mb), (b_calls, b_mb) in itertools.combinations(half, 2))
        return slopes[len(slopes) // 2] * 1024 * items_per_skill if slopes else 0.0

    kept = {who: round(kept_kb_per_skill(who) if who == "controller" else worker_kept_kb_per_skill(who)) for who in sorted(probes)}
    statuses = {s: sum(r["status"] == s for r in records) for s in sorted(STATUSES)}
    print(f"fuzz: {generated} skills, {len(records)} items {statuses}, peak RSS MB {peaks}, "
          f"KB kept per skill while the items ran {kept}")
    assert max(peaks.values()) < MAX_RSS_MB, peaks
    assert kept["controller"] < MAX_CONTROLLER_KB_PER_SKILL, (kept, probes)
    assert all(kb < MAX_WORKER_KB_PER_SKILL for who, kb in kept.items() if who != "controller"), (kept, probes)
