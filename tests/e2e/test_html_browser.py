"""The HTML report in a real browser: Debian's chromium driven by playwright, against the report of
the `make eval` run (example skills, all tiers, Tier 3 through the real Claude Code CLI, scripted).

Checks what a reader relies on: the page loads with no console error, makes no request beyond its
own file, the headline strip shows results.json's numbers, a failing item is open, the sorting
script works, and hostile text from a skill stays text. A screenshot lands in the report dir.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

from pytest_skilleval.reports import html

CHROMIUM = Path("/usr/bin/chromium")
# Offline and quiet: no GPU, no QUIC, no first-run, no background fetches of components or sync.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SCREENSHOT = "report-screenshot.png"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require(importlib.util.find_spec("playwright") is not None, "playwright is not installed (pip install -e '.[dev]')")
    require(CHROMIUM.exists(), "Debian's chromium is not installed (make test installs it: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh user-data-dir every run
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True, args=FLAGS,
                                                        viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def eval_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `make eval` command, run on a copy of example_skills."""
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    require(CLIS["claude-code"].agent.locate([AGENTS_DIR]) is not None, "Claude Code is not installed (make agents)")
    work = tmp_path_factory.mktemp("eval")
    shutil.copytree(REPO / "example_skills", work / "example_skills")
    done = subprocess.run([sys.executable, "-m", "pytest", "--skills", "example_skills", "--skilleval-tier3", "-p", "no:cacheprovider", "-n", "2",
                           f"--skilleval-agents-dir={AGENTS_DIR}", "--junitxml=skilleval-report/junit.xml", "-o", "addopts=", "-q"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return work / "skilleval-report"


def open_page(browser: Any, page_file: Path) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page()
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri(), wait_until="load")
    return page, problems, requests


def test_report_of_an_example_run(browser: Any, eval_report: Path) -> None:
    results = json.loads((eval_report / "results.json").read_text(encoding="utf-8"))
    page, problems, requests = open_page(browser, eval_report / "index.html")
    assert problems == []
    assert requests == [(eval_report / "index.html").as_uri()]  # nothing but the file itself
    kpi = {key: page.locator(f'[data-kpi="{key}"] .value').inner_text() for key in ("skills", "verdicts", "trials", "lift")}
    verdicts = results["verdict_counts"]
    assert kpi["skills"] == str(results["skill_count"]) == "3"
    assert kpi["verdicts"] == f"{verdicts.get('PASS', 0)} / {verdicts.get('FAIL', 0)} / {verdicts.get('INCOMPLETE', 0)}"
    trials = [t for s in results["skills"] for a in s["tier3"]["agents"] for t in a["attempts"]]
    assert kpi["trials"] == f"{sum(t['status'] == 'PASSED' for t in trials)}/{len(trials)}"
    lifts = [r["delta"] for s in results["skills"] for a in s["tier3"]["agents"] for r in a["lift"] if r["measure"] == "overall"]
    assert kpi["lift"] == f"{html.points(sum(lifts) / len(lifts))} pts"
    # the example baselines fail their cases: those are the failing items, open, with their evidence
    failing = page.locator("details.failing-item[open]")
    assert failing.count() == sum(t["status"] in ("FAILED", "ERROR") for t in trials) > 0
    assert failing.first.locator(":scope > .body").is_visible() and "ASSERTIONS" in failing.first.inner_text().upper()
    assert page.evaluate(OVERFLOWING) == []  # no number or chart label cut at its box's edge
    shot = eval_report / SCREENSHOT  # the first screen, as a reader opens it
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000
    # passes collapsed: a passing skill's section is closed; the sorting script works
    assert page.locator("details.skill:not([open])").count() == 3
    header = page.locator("#skills-table th").first
    header.click()
    header.click()
    assert page.locator("#skills-table tbody tr").first.inner_text().startswith("semver-bump")
    page.close()


def test_hostile_text_stays_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    hostile = '</script><script>alert("x")</script><img src=x onerror="alert(1)">'
    document = {"skill_count": 1, "overall_status": "failed", "verdict_counts": {"FAIL": 1},
                "skills": [{"key": hostile, "name": hostile, "verdict": "FAIL",
                            "checks": [{"blocking": True, "result": {"check": "schema", "tier": 1, "status": "FAILED", "reason": hostile,
                                                                      "findings": [{"rule": "x", "severity": "HIGH", "message": hostile,
                                                                                    "file": hostile, "line": 1, "suggestion": hostile}]}}]}]}
    target = html.write(document, tmp_path)
    page, problems, requests = open_page(browser, target)
    assert problems == [] and requests == [target.as_uri()]  # no alert, no image fetched
    assert page.locator("img").count() == 0 and page.locator("script").count() == 1
    assert hostile in page.locator("details.failing-item").first.inner_text()
    page.close()


#: Every element of the page whose text overflows its box, as the browser laid it out: a KPI value wider
#: than its card, or an SVG text running past its chart's right edge.
OVERFLOWING = """() => {
  const out = [];
  for (const v of document.querySelectorAll('.kpi .value')) {
    const card = v.closest('.kpi').getBoundingClientRect(), text = v.getBoundingClientRect();
    if (v.scrollWidth > v.clientWidth + 1 || text.right > card.right + 1) out.push('kpi ' + v.textContent);
  }
  for (const svg of document.querySelectorAll('svg')) {
    const chart = svg.getBoundingClientRect();  // on screen, so a rotated axis title is measured as drawn
    for (const t of svg.querySelectorAll('text')) {
      const box = t.getBoundingClientRect();
      if (box.left < chart.left - 1 || box.right > chart.right + 1) out.push('svg ' + t.textContent);
    }
  }
  return out;
}"""


def test_no_number_or_label_is_clipped(browser: Any, tmp_path: Path) -> None:
    # Regression: on the corpus the verdict KPI read "411 / 343 / (" (wider than its card), and the forest
    # plot's notes ran past the SVG's edge ("… · crosses (" for "… · crosses 0").
    lift = [{"measure": m, "with_skill": 0.9, "without_skill": 0.5, "delta": 0.31, "ci_low": -0.44, "ci_high": 1.0, "n": 3, "band": "NEUTRAL"}
            for m in ("overall", "security", "correctness", "effectiveness", "efficiency")]
    skill = {"key": "changelog-writer", "name": "changelog-writer", "verdict": "PASS",
             "checks": [{"blocking": True, "result": {"check": "schema", "tier": 1, "status": "PASSED", "findings": []}}],
             "tier3": {"scripted": True, "agents": [{"agent": "claude-code", "arms": {}, "lift": lift, "attempts": []}]}}
    document = {"skill_count": 754, "overall_status": "failed", "verdict_counts": {"PASS": 411, "FAIL": 343, "INCOMPLETE": 0},
                "skills": [skill, {**skill, "key": "a-skill-with-a-rather-long-name-for-its-folder"}]}
    target = html.write(document, tmp_path)
    page, problems, _ = open_page(browser, target)
    assert problems == []
    assert page.locator('[data-kpi="verdicts"] .value').inner_text() == "411 / 343 / 0"
    page.screenshot(path=str(tmp_path / "clipping.png"), full_page=True)  # to look at when this fails
    assert page.evaluate(OVERFLOWING) == []
    page.close()
