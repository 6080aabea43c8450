"""The report controller keeps no check results in memory while the run goes on: they are spooled to
disk as they arrive and read back one skill at a time when the reports are written, so its memory is
bounded by one skill, not the catalog. The documents are the same as when they were built in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import manifest, write_skill

from pytest_skilleval.reports.model import RunReport
from pytest_skilleval.reports.session import write_reports

pytest_plugins = ["pytester"]
CHECKS = "--skilleval-checks=files,schema,version,unicode,pii,license"
SKILLS = 12

#: At session end, before the reports are written: how many check records the controller process holds.
HELD_PROBE = '''
import gc, json, os
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):
        return
    from pytest_skilleval.reports.model import CheckRecord
    from pytest_skilleval.collect import RESULT_PROPERTY
    gc.collect()
    held = sum(1 for o in gc.get_objects() if isinstance(o, CheckRecord))
    stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
    carried = sum(1 for reps in stats.values() for r in reps for k, _ in getattr(r, "user_properties", ()) if k == RESULT_PROPERTY)
    with open(os.path.join(str(session.config.rootpath), "held.json"), "w") as fh:
        json.dump({"records": held, "carried": carried}, fh)
'''


def catalog(base: Path) -> None:
    for n in range(SKILLS):
        name = f"skill-{n:02d}"
        write_skill(base / "skills", name, {"SKILL.md": manifest(name) + ("\nCall 555-123-4567.\n" if n % 3 else "")})


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_controller_holds_no_check_results_until_session_end(pytester: pytest.Pytester, workers: str) -> None:
    catalog(pytester.path)
    pytester.makeconftest(HELD_PROBE)
    result = pytester.runpytest_subprocess("--skills=skills", CHECKS, "-n", workers, "--skilleval-report-dir=rep",
                                           "--junitxml=junit.xml", "-p", "no:cacheprovider")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    held = json.loads((pytester.path / "held.json").read_text())
    data = json.loads((pytester.path / "rep/results.json").read_text())
    assert sum(len(s["checks"]) for s in data["skills"]) == SKILLS * 6  # every result reached the report
    assert held["records"] == 0, held  # none of them waits in memory for the end
    # pytest's terminal keeps every report to the end: it no longer keeps a copy of each result with it
    assert held["carried"] == 0, held
    # JUnit still carries every result (pytest writes it; its content is unchanged)
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count('name="skilleval.result"') == SKILLS * 6


#: At session end in each xdist worker: how many published records its items still carry.
WORKER_PROBE = '''
import json, os
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {}).get("workerid")
    if who is None:
        return
    import gc
    from pytest_skilleval.collect import RESULT_PROPERTY
    from pytest_skilleval.skill import Skill
    carried = sum(len(v) for item in session.items for k, v in item.user_properties if k == RESULT_PROPERTY)
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, (Skill, pytest.ExceptionInfo)))
    reports = sum(1 for o in gc.get_objects() if isinstance(o, pytest.TestReport) and "skilleval" in o.keywords)
    with open(os.path.join(str(session.config.rootpath), f"worker-{who}.json"), "w") as fh:
        json.dump({"items": len(session.items), "carried_bytes": carried, "skills_and_failures_alive": alive,
                   "reports_alive": reports}, fh)
'''


def test_a_worker_keeps_no_result_once_its_item_is_reported(pytester: pytest.Pytester) -> None:
    """An xdist worker keeps every item for the session, so nothing of an item's run may stay on it once
    its reports have gone to the controller, or a worker grows with every skill it runs (1.4 GB over a
    5,000-skill fuzz catalog): not the result it published (its JSON on ``user_properties``), and not
    the ExceptionInfo of a failed check that pytest-rerunfailures keeps on the item, whose frames hold
    the loaded skill (its parsed Markdown) and every report of the item, and not the reports themselves,
    which a worker's terminal reporter (it prints nothing) kept to the end, results and all."""
    catalog(pytester.path)
    for n in range(4):  # failing checks: their ExceptionInfo is what rerunfailures keeps
        write_skill(pytester.path / "skills", f"broken-{n}", {"SKILL.md": "no frontmatter\n"})
    pytester.makeconftest(WORKER_PROBE)
    result = pytester.runpytest_subprocess("--skills=skills", CHECKS, "-n", "2", "--skilleval-report-dir=rep",
                                           "--junitxml=junit.xml", "-p", "no:cacheprovider")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    workers = [json.loads(p.read_text()) for p in sorted(pytester.path.glob("worker-gw*.json"))]
    assert len(workers) == 2 and all(w["items"] == (SKILLS + 4) * 6 for w in workers), workers
    assert [w["carried_bytes"] for w in workers] == [0, 0], workers
    assert [w["skills_and_failures_alive"] for w in workers] == [0, 0], workers
    assert all(w["reports_alive"] <= 1 for w in workers), workers  # the terminal remembers the last one it saw
    data = json.loads((pytester.path / "rep/results.json").read_text())
    assert sum(len(s["checks"]) for s in data["skills"]) == (SKILLS + 4) * 6
    assert sum(1 for s in data["skills"] if s["verdict"] == "FAIL") == 4
    assert (pytester.path / "junit.xml").read_text().count('name="skilleval.result"') == (SKILLS + 4) * 6


def test_streamed_documents_equal_the_ones_built_in_memory(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """results.json byte for byte as ``model_dump_json(indent=2)`` of the whole run; cards and HTML too."""
    catalog(pytester.path)
    write_skill(pytester.path / "skills", "empty-skill", {"SKILL.md": "no frontmatter\n"})
    result = pytester.runpytest_subprocess("--skills=skills", CHECKS, "-n", "0", "--skilleval-report-dir=rep", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    text = (pytester.path / "rep/results.json").read_text("utf-8")
    run = RunReport.model_validate_json(text)
    assert text == run.model_dump_json(indent=2) + "\n"
    again = tmp_path / "again"
    write_reports(run, again)
    assert (again / "results.json").read_text("utf-8") == text
    for card in (pytester.path / "rep").rglob("BENCHMARK.md"):
        assert (again / card.relative_to(pytester.path / "rep")).read_text("utf-8") == card.read_text("utf-8")
    assert (again / "index.html").read_text("utf-8") == (pytester.path / "rep/index.html").read_text("utf-8")
    empty = run.model_copy(update={"skills": [], "skill_count": 0})
    write_reports(empty, tmp_path / "empty")
    assert (tmp_path / "empty/results.json").read_text("utf-8") == empty.model_dump_json(indent=2) + "\n"
