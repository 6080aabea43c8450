"""The plugin as a user drives it: collection, selection, outcomes, JUnit and reports, in and out of xdist."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REPO, manifest, write_skill

pytest_plugins = ["pytester"]
BASIC = "--skilleval-checks=files,schema,version"

CUSTOM_CHECKS = '''
import pytest
from pytest_skilleval.checks import Check
from pytest_skilleval.results import CheckResult, Finding, Severity

class Incomplete(Check):
    name = "needs-tool"
    def run(self, skill, ctx):
        return CheckResult.incomplete(self.name, "faketool: missing; install it with: pip install faketool")

class Advisory(Check):
    name = "style"
    blocking = False
    def run(self, skill, ctx):
        return self.result([Finding(rule="style.x", severity=Severity.HIGH, file="SKILL.md", line=1, message="ugly")])

class Crashing(Check):
    name = "crashy"
    def run(self, skill, ctx):
        raise RuntimeError("boom in check")

class Medium(Check):
    name = "medium"
    def run(self, skill, ctx):
        return self.result([Finding(rule="medium.x", severity=Severity.MEDIUM, file="SKILL.md", line=2, message="meh")])

@pytest.hookimpl
def pytest_skilleval_checks(config):
    return [Incomplete(), Advisory(), Crashing(), Medium()]
'''


def _good(base: Path, rel: str) -> Path:
    name = Path(rel).name
    return write_skill(base, rel, {"SKILL.md": manifest(name)}) if "/" not in rel else write_skill(
        base / Path(rel).parent, name, {"SKILL.md": manifest(name)})


def test_collects_nested_skills_with_stable_ids(pytester: pytest.Pytester) -> None:
    for rel in ("skills/a/alpha-skill", "skills/b/c/beta-skill", "skills/.hidden/gamma-skill", "skills/node_modules/delta-skill"):
        _good(pytester.path, rel)
    result = pytester.runpytest("--skills", "skills", BASIC, "--collect-only", "-q")
    ids = [ln for ln in result.outlines if "::tier1::" in ln]
    assert ids == [
        "skills/a/alpha-skill::tier1::files", "skills/a/alpha-skill::tier1::schema", "skills/a/alpha-skill::tier1::version",
        "skills/b/c/beta-skill::tier1::files", "skills/b/c/beta-skill::tier1::schema", "skills/b/c/beta-skill::tier1::version",
    ]


def test_a_skill_folder_itself_and_plain_path_arguments(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    one = pytester.runpytest("--skills=skills/alpha-skill", BASIC, "-q")
    one.assert_outcomes(passed=3)
    plain = pytester.runpytest("skills", BASIC, "-q")
    plain.assert_outcomes(passed=3)


@pytest.mark.parametrize("started", ["inside", "outside"])
def test_a_single_skill_named_as_the_tree_keeps_its_folder_name_in_node_ids(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, started: str) -> None:
    """``cd skill; pytest --skills=.`` (the skill is the rootdir) and ``--skills=/abs/skill`` from elsewhere (outside
    the rootdir): pytest would give the folder node the id ``.`` or an empty one. The id carries the folder's name, as
    the skill key, the card folder, JUnit's classname, ``-k`` and ``--deselect`` do."""
    skill = _good(pytester.path, "skills/alpha-skill")
    report = pytester.path / "rep"
    if started == "inside":
        monkeypatch.chdir(skill)
        named = "."
    else:
        (pytester.path / "proj").mkdir()
        monkeypatch.chdir(pytester.path / "proj")
        named = str(skill)
    common = (f"--skills={named}", BASIC, f"--skilleval-report-dir={report}", "-p", "no:cacheprovider")
    collected = pytester.runpytest(*common, "--collect-only", "-q")
    assert [ln for ln in collected.outlines if "::tier1::" in ln] == [
        "alpha-skill::tier1::files", "alpha-skill::tier1::schema", "alpha-skill::tier1::version"]
    junit = report / "out.xml"
    pytester.runpytest(*common, f"--junitxml={junit}").assert_outcomes(passed=3)
    assert {c.get("classname") for c in ET.parse(junit).iter("testcase")} == {"alpha-skill.tier1"}
    assert [s["key"] for s in json.loads((report / "results.json").read_text())["skills"]] == ["alpha-skill"]
    assert (report / "alpha-skill" / "BENCHMARK.md").is_file()
    pytester.runpytest(*common, "-k", "alpha-skill and schema").assert_outcomes(passed=1)
    pytester.runpytest(*common, "--deselect", "alpha-skill::tier1::files").assert_outcomes(passed=2)


def test_ini_paths_and_no_collection_without_an_explicit_path(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "catalog/alpha-skill")
    pytester.makeini("[pytest]\nskilleval_paths = catalog\nskilleval_checks = files,schema\n")
    pytester.runpytest("-q").assert_outcomes(passed=2)
    pytester.makeini("[pytest]\n")
    # A skill merely lying in the tree is not collected by a plain `pytest`: only explicit paths are.
    assert pytester.runpytest("-q").ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_skills_folder_without_any_skill_says_so(pytester: pytest.Pytester) -> None:
    (pytester.path / "empty" / "docs").mkdir(parents=True)
    (pytester.path / "empty" / "docs" / "README.md").write_text("# not a skill\n")
    result = pytester.runpytest("--skills", "empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--skills: no SKILL.md under*empty*"])


def test_k_m_deselect_and_check_selection(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    _good(pytester.path, "skills/beta-skill")
    pytester.runpytest("--skills=skills", BASIC, "-k", "beta and schema").assert_outcomes(passed=1)
    pytester.runpytest("--skills=skills", BASIC, "-m", "tier1 and skilleval", "--strict-markers").assert_outcomes(passed=6)
    pytester.runpytest("--skills=skills", BASIC, "-m", "tier2").assert_outcomes()
    pytester.runpytest("--skills=skills", BASIC, "--deselect", "skills/alpha-skill::tier1::files").assert_outcomes(passed=5)
    pytester.runpytest("--skills=skills", "--skilleval-checks=schema").assert_outcomes(passed=2)
    pytester.runpytest("--skills=skills", "--skilleval-checks=files,schema,version,-version").assert_outcomes(passed=4)


def test_unknown_check_name_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=schema,nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown check 'nope'*known:*schema*"])



def test_unknown_check_name_is_a_usage_error_in_a_run_without_skills(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check selection is validated at start-up even when the run names no skill (the checks are
    otherwise registered only when a run meets one): from the command line, the ini file and the environment."""
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    result = pytester.runpytest("--skilleval-checks=schema,nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown check 'nope'*known:*schema*"])
    pytester.makeini("[pytest]\nskilleval_checks = nope\n")
    assert pytester.runpytest().ret == pytest.ExitCode.USAGE_ERROR
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("SKILLEVAL_CHECKS", "nope")
    assert pytester.runpytest().ret == pytest.ExitCode.USAGE_ERROR


def test_a_skill_met_during_collection_gets_the_checks_then(pytester: pytest.Pytester) -> None:
    """No skill named and no skilleval option at start-up: the checks are registered when collection
    meets the first skill folder under an explicit path (here the project itself), and run as always."""
    _good(pytester.path, "skills/alpha-skill")
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    result = pytester.runpytest(".", "-k", "own or schema or version", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*skills/alpha-skill::tier1::schema PASSED*", "*test_own.py::test_own PASSED*"])

def test_failure_shows_findings_with_location_and_no_traceback(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills", "bad-skill", {"SKILL.md": "---\nname: bad-skill\nname: other\ndescription: x\n---\n# T\n"})
    result = pytester.runpytest("--skills=skills", BASIC)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*schema: FAILED*", "*HIGH*SKILL.md:3 duplicate key 'name'*"])
    assert "Traceback" not in result.stdout.str()
    assert "pytest_skilleval" not in result.stdout.str().split("short test summary")[0].split("FAILURES")[-1]


def test_skill_code_is_never_imported_or_executed(pytester: pytest.Pytester) -> None:
    marker = pytester.path / "EXECUTED"
    payload = f"open({str(marker)!r}, 'w').write('x')\n"
    write_skill(pytester.path / "skills", "evil-skill", {
        "SKILL.md": manifest("evil-skill"), "conftest.py": payload, "scripts/test_evil.py": payload,
        "tests/conftest.py": payload, "tests/test_x.py": payload, "__init__.py": payload,
    })
    result = pytester.runpytest_subprocess("--skills=skills", BASIC, "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert not marker.exists()


def test_junit_carries_status_score_and_finding_counts(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills", "bad-skill", {"SKILL.md": "---\nname: Bad_Skill\ndescription: x\n---\n# T\n"})
    pytester.runpytest("--skills=skills", BASIC, "--junitxml=out.xml")
    cases = {tc.get("name"): tc for tc in ET.parse(pytester.path / "out.xml").iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["schema"].iter("property")}
    assert props["skilleval.status"] == "FAILED"
    assert int(props["skilleval.findings.high"]) >= 1
    assert json.loads(props["skilleval.result"])["result"]["check"] == "schema"


def test_incomplete_fails_and_can_be_allowed(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest(CUSTOM_CHECKS)
    failed = pytester.runpytest("--skills=skills", "--skilleval-checks=needs-tool")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*needs-tool: INCOMPLETE*faketool: missing*pip install faketool*"])
    allowed = pytester.runpytest("--skills=skills", "--skilleval-checks=needs-tool", "--skilleval-allow-incomplete", "-rs")
    allowed.assert_outcomes(skipped=1)
    allowed.stdout.fnmatch_lines(["*INCOMPLETE (allowed by --skilleval-allow-incomplete)*"])


def test_advisory_failure_is_visible_but_does_not_fail(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest(CUSTOM_CHECKS)
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=style", "-v", "--skilleval-report-dir=rep")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*::tier1::style ADVISORY*"])
    data = json.loads((pytester.path / "rep/results.json").read_text())
    check = data["skills"][0]["checks"][0]
    assert check["result"]["status"] == "FAILED" and check["blocking"] is False
    assert data["skills"][0]["tiers"]["1"]["status"] == "PASSED WITH OBSERVATIONS"


def test_crashing_check_is_an_error_with_its_traceback(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest(CUSTOM_CHECKS)
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=crashy")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*crashy: ERROR*RuntimeError: boom in check*", "*Traceback*"])


def test_fail_on_threshold(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest(CUSTOM_CHECKS)
    pytester.runpytest("--skills=skills", "--skilleval-checks=medium").assert_outcomes(passed=1)
    pytester.runpytest("--skills=skills", "--skilleval-checks=medium", "--skilleval-fail-on=medium").assert_outcomes(failed=1)
    bad = pytester.runpytest("--skills=skills", "--skilleval-fail-on=severe")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_third_party_check_clash_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest(
        "import pytest\nfrom pytest_skilleval.checks import Check\n"
        "class Mine(Check):\n    name = 'schema'\n    def run(self, skill, ctx): return self.result()\n"
        "@pytest.hookimpl\ndef pytest_skilleval_checks(config): return [Mine()]\n")
    result = pytester.runpytest("--skills=skills")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*two plugins provide a check named 'schema'*"])


def test_a_check_clash_met_while_collecting_is_a_usage_error_too(pytester: pytest.Pytester) -> None:
    """A run that names no skill makes its checks when collection meets the first skill folder: a clash
    there ends the run as a usage error naming both, not as a collection error per skill (review)."""
    _good(pytester.path, "skills/alpha-skill")
    _good(pytester.path, "skills/beta-skill")
    pytester.makeconftest(
        "import pytest\nfrom pytest_skilleval.checks import Check\n"
        "class Mine(Check):\n    name = 'schema'\n    def run(self, skill, ctx): return self.result()\n"
        "@pytest.hookimpl\ndef pytest_skilleval_checks(config): return [Mine()]\n")
    result = pytester.runpytest(".", "--skilleval-report-dir=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    assert "two plugins provide a check named 'schema'" in result.stdout.str() + result.stderr.str()
    assert "errors during collection" not in result.stdout.str()


@pytest.mark.parametrize("folder", ["a_tests", "z_tests"])
def test_a_conftest_met_while_collecting_contributes_no_check(pytester: pytest.Pytester, folder: str) -> None:
    """The checks are those of the plugins there before collection, wherever the conftest sorts beside
    the skills folder and whether or not a check selection is given (review: a folder named before
    ``skills`` added its check, one named after did not)."""
    _good(pytester.path, "skills/alpha-skill")
    (pytester.path / folder).mkdir()
    (pytester.path / folder / "conftest.py").write_text(
        "from pytest_skilleval.checks import Check\n"
        "class Mine(Check):\n    name = 'mine'\n    def run(self, skill, ctx): return self.result()\n"
        "def pytest_skilleval_checks(config): return [Mine()]\n", encoding="utf-8")
    (pytester.path / folder / "test_theirs.py").write_text("def test_theirs():\n    pass\n", encoding="utf-8")
    for extra in ([], ["--skilleval-checks=-lint"]):
        result = pytester.runpytest(".", "--collect-only", "-q", *extra)
        assert "::mine" not in result.stdout.str(), (extra, result.stdout.str()[-2000:])
        assert "::schema" in result.stdout.str()


def _copy_examples(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "example_skills", pytester.path / "skills")
    write_skill(pytester.path / "skills", "broken-skill", {
        "SKILL.md": "---\nname: Broken\ndescription: Use when: things\n---\nno heading\n"})


def _normalized(report_dir: Path) -> tuple[dict, dict[str, str]]:
    data = json.loads((report_dir / "results.json").read_text())
    data.pop("generated_at")
    data.pop("duration_s", None)  # the session wall time
    for sk in data["skills"]:
        for rec in sk["checks"]:
            rec["result"]["duration_s"] = None
    cards = {}
    for card in sorted(report_dir.rglob("BENCHMARK.md")):
        text = "\n".join(ln for ln in card.read_text().splitlines() if not ln.startswith("- Evaluation date:"))
        cards[card.relative_to(report_dir).as_posix()] = text
    return data, cards


def test_reports_are_identical_with_and_without_xdist(pytester: pytest.Pytester) -> None:
    """All default checks, scanners included: batching across workers must not change any result."""
    _copy_examples(pytester)
    serial = pytester.runpytest_subprocess("--skills=skills", "-n", "0", "--skilleval-report-dir=rep0", "-p", "no:cacheprovider")
    parallel = pytester.runpytest_subprocess("--skills=skills", "-n", "4", "--skilleval-report-dir=rep4", "-p", "no:cacheprovider",
                                             "--skilleval-cache-dir=")
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED  # the broken skill fails
    data0, cards0 = _normalized(pytester.path / "rep0")
    data4, cards4 = _normalized(pytester.path / "rep4")
    assert data0["skill_count"] == 4 and len(cards0) == 4
    assert data0 == data4
    assert cards0 == cards4


def test_reports_cards_json_and_github_summary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_examples(pytester)
    summary = pytester.path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("--skills=skills", BASIC, "--skilleval-report-dir=rep")
    result.stdout.fnmatch_lines(["*skilleval summary*", "*broken-skill*FAIL*", "*4 skill(s): 3 pass, 1 fail*"])
    data = json.loads((pytester.path / "rep/results.json").read_text())
    assert data["schema_version"] == "1.1" and data["complete"] is True and data["overall_status"] == "failed"
    card = (pytester.path / "rep/broken-skill/BENCHMARK.md").read_text()
    assert card.startswith("# Skill Benchmark: broken-skill")
    assert "❌ **Overall verdict: FAIL — Publication blocked**" in card
    assert "## Blocking Findings" in card and "SKILL.md:3" in card
    good = (pytester.path / "rep/csv-summary/BENCHMARK.md").read_text()
    assert "Not yet recommended for publication" in good and "Recommended for publication**" not in good
    assert "| Tier 2 |" in good and "NOT RUN" in good
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "## pytest-skilleval" in text and "broken-skill" in text


def test_interrupted_run_leaves_a_valid_partial_report(pytester: pytest.Pytester) -> None:
    _copy_examples(pytester)
    pytester.makeconftest("seen = []\ndef pytest_runtest_teardown(item):\n    seen.append(item)\n"
                          "    if len(seen) == 4:\n        raise KeyboardInterrupt\n")
    result = pytester.runpytest_subprocess("--skills=skills", BASIC, "--skilleval-report-dir=rep", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    data = json.loads((pytester.path / "rep/results.json").read_text())
    assert data["complete"] is False
    results = [c["result"] for s in data["skills"] for c in s["checks"]]
    ran = [r for r in results if "interrupted" not in (r["reason"] or "")]
    assert 1 <= len(ran) <= 4
    # a skill cut in half: each check that did not finish is INCOMPLETE, and the skill with it
    assert all(r["status"] == "INCOMPLETE" for r in results if r not in ran)
    assert all(s["verdict"] == "INCOMPLETE" for s in data["skills"] if len(s["checks"]) > sum(c["result"] in ran for c in s["checks"]))
    card = next((pytester.path / "rep").rglob("BENCHMARK.md")).read_text()
    assert "This run was interrupted" in card


def test_report_dir_through_a_symlink_is_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _good(pytester.path, "skills/alpha-skill")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (pytester.path / "rep").symlink_to(target)
    result = pytester.runpytest("--skills=skills", BASIC, "--skilleval-report-dir=rep")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*reports NOT written*symbolic link*"])
    assert list(target.iterdir()) == []


SUMMARY_PROBE = '''
import pytest

@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    kept = [r for r in terminalreporter.stats.get("", []) if getattr(r, "when", None) in ("setup", "teardown")]
    ours = sum(1 for r in kept if "skilleval" in r.keywords)
    theirs = sum(1 for r in kept if "skilleval" not in r.keywords)
    terminalreporter.write_line(f"PROBE passing setup/teardown reports kept: ours={ours} theirs={theirs}")
'''


def test_failure_summary_is_not_quadratic_in_the_items(pytester: pytest.Pytester) -> None:
    """pytest's FAILURES section looks up each failure's teardown output in the list of every passing
    setup and teardown report (O(failures x items): 6 s of a 754-skill run with 369 failures). Ours
    carry no output, so they leave that list; the user's own tests keep theirs, and every failure is shown."""
    for i in range(3):
        write_skill(pytester.path / "skills", f"bad-skill-{i}", {"SKILL.md": f"---\nname: Bad_{i}\ndescription: x\n---\n# T\n"})
    pytester.makepyfile(test_own="def test_own():\n    print('own teardown')\n")
    pytester.makeconftest(SUMMARY_PROBE)
    result = pytester.runpytest("--skills=skills", BASIC, "test_own.py")
    result.assert_outcomes(passed=7, failed=3)
    result.stdout.fnmatch_lines(["*= FAILURES =*", "*bad-skill-0::tier1::schema*", "*bad-skill-1::tier1::schema*",
                                 "*bad-skill-2::tier1::schema*", "PROBE passing setup/teardown reports kept: ours=0 theirs=2"])


def test_report_cards_are_written_without_an_fsync_each(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card per skill: an fsync each was seconds of wall time over a catalog (see atomic.write_atomic)."""
    for i in range(3):
        _good(pytester.path, f"skills/skill-{i}")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    pytester.runpytest_inprocess("--skills=skills", BASIC, "-p", "no:cacheprovider").assert_outcomes(passed=9)
    assert sorted(p.name for p in (pytester.path / "skilleval-report").rglob("*.*")) == ["BENCHMARK.md"] * 3 + ["index.html", "results.json"]
    assert synced == []


def test_a_tier1_run_never_imports_numpy(pytester: pytest.Pytester) -> None:
    """NumPy (~70 ms of start-up) is Tier 2's, Tier 3's statistics' and the trigger rivals'; a Tier 1
    run with its reports does not load it."""
    _good(pytester.path, "skills/alpha-skill")
    pytester.makeconftest("import sys\n\ndef pytest_unconfigure(config):\n    print('NUMPY LOADED:', 'numpy' in sys.modules)\n")
    result = pytester.runpytest_subprocess("--skills=skills", BASIC, "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=3)
    assert (pytester.path / "skilleval-report" / "results.json").exists()
    result.stdout.fnmatch_lines(["*NUMPY LOADED: False*"])
