"""The report controller's session rules (reports/session.py), each in a real pytest session run in-process
(about half a second each, no scanners, no subprocess): items publish results as checks, trials, trigger
trials and selection rows do; the report is written once, marked incomplete after SIGTERM, Ctrl-C, an
internal error or a dead worker; a report that cannot be written, or trigger metrics under
--block-on-triggers thresholds, fail a run that would otherwise pass. The slow end-to-end versions with
real worker kills and real signals from outside are in tests/integration/test_report_robustness.py."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import numpy  # noqa: F401 - see below
import pytest

from pytest_skilleval.reports.model import RunReport

pytest_plugins = ["pytester"]
# pytester's in-process runs drop the modules they imported; numpy's C extension cannot be loaded twice in
# one process, so it is loaded here, outside them (the statistics import it lazily)

#: Items that publish what check items, Tier 3 trials, trigger trials and selection rows publish.
PUBLISHERS = '''
import json, os, signal
import pytest
from pytest_skilleval.collect import RESULT_PROPERTY
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.selection.report import SELECTION_PROPERTY
from pytest_skilleval.tier3.grading.model import DIMENSIONS, Grade
from pytest_skilleval.tier3.record import TRIAL_PROPERTY, TrialRecord
from pytest_skilleval.triggers.record import TRIGGER_PROPERTY, TriggerRecord

pytestmark = pytest.mark.skilleval


def check(record_property, key, name, check, failed=False):
    findings = [Finding(rule="x.y", severity=Severity.HIGH, file="SKILL.md", line=1, message="bad")] if failed else []
    result = CheckResult(check=check, tier=1, status="FAILED" if failed else "PASSED", findings=findings)
    envelope = {"skill": key, "skill_name": name, "skill_path": "/src/" + name, "blocking": True,
                "result": result.model_dump(mode="json")}
    record_property(RESULT_PROPERTY, json.dumps(envelope, sort_keys=True))
    record_property("work_item", "JIRA-1")  # a user's own property: sorts after every skilleval.* name
    if failed:
        pytest.fail("the check failed")


def trial(case, execution, status, score, skill="t"):
    grade = Grade(status=status, dimensions=dict.fromkeys(DIMENSIONS, score), score=score)
    return TrialRecord(skill=skill, skill_name="trial-skill", skill_path="/src/trial-skill", case_id=case, agent="claude-code",
                       arm="with_skill", execution=execution, status=status, grade=grade, mode="proxy", isolated=True)


def trigger(query, should, triggered, skill="g"):
    return TriggerRecord(skill=skill, skill_name="trigger-skill", skill_path="/src/trigger-skill", query_id=query, query=query,
                         should_trigger=should, agent="claude-code", status="TRIGGERED" if triggered else "NOT_TRIGGERED",
                         triggered=triggered)
'''

CHECKS = PUBLISHERS + '''
def test_one_schema(record_property):
    check(record_property, "a/one", "one", "schema")

def test_one_files(record_property):
    check(record_property, "a/one", "one", "files", failed=os.environ.get("FAIL_ONE") == "1")

def test_two_schema(record_property):
    record_property("note", "another plugin's property, before the result")
    check(record_property, "two", "two", "schema")
'''


def run(pytester: pytest.Pytester, source: str, *args: str, conftest: str | None = None) -> pytest.RunResult:
    pytester.makepyfile(test_items=source)
    if conftest is not None:
        pytester.makeconftest(conftest)
    # no_reraise_ctrlc: an interrupted inner run must not interrupt this one
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args, no_reraise_ctrlc=True)


def results(pytester: pytest.Pytester, folder: str = "rep") -> dict:
    return json.loads((pytester.path / folder / "results.json").read_text("utf-8"))


def _trial() -> object:
    from pytest_skilleval.tier3.grading.model import DIMENSIONS, Grade
    from pytest_skilleval.tier3.record import TrialRecord

    return TrialRecord(skill="s", skill_name="s", skill_path="/s", case_id="a", agent="claude-code", arm="with_skill", status="FAILED",
                       grade=Grade(status="FAILED", dimensions=dict.fromkeys(DIMENSIONS, 0.0), score=0.0), mode="proxy", isolated=True)


def _trigger() -> object:
    from pytest_skilleval.triggers.record import TriggerRecord

    return TriggerRecord(skill="g", skill_name="g", skill_path="/g", query_id="q1", query="q1", should_trigger=True, agent="claude-code",
                         status="TRIGGERED", triggered=True)


@pytest.fixture
def default_sigterm() -> Iterator[None]:
    """Each test starts with SIGTERM at its default, as a fresh ``pytest`` process has it; the handler is put back after."""
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


#: Probe, before the reports are written: results that pytest's terminal still carries, and this plugin's kept setup/teardown reports.
CARRIED_PROBE = '''
import json, os
import pytest
from pytest_skilleval.collect import RESULT_PROPERTY

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
    carried = sum(1 for reps in stats.values() for r in reps for k, _ in getattr(r, "user_properties", ()) if k == RESULT_PROPERTY)
    kept = sum(1 for r in stats.get("", []) if getattr(r, "when", None) in ("setup", "teardown"))
    with open("probe.json", "w") as fh:
        json.dump({"carried": carried, "kept": kept}, fh)
'''


@pytest.mark.parametrize("fail", [False, True], ids=["passing", "failing"])
def test_each_published_result_reaches_the_report_once(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    monkeypatch.setenv("FAIL_ONE", "1" if fail else "0")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = run(pytester, CHECKS, "--skilleval-report-dir=rep", "--junitxml=junit.xml", "--skilleval-fail-on=medium",
                 "--skilleval-allow-incomplete", "--skilleval-min-quality=55", conftest=CARRIED_PROBE)
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if fail else pytest.ExitCode.OK), result.stdout.str()
    text = (pytester.path / "rep/results.json").read_text("utf-8")
    assert text == RunReport.model_validate_json(text).model_dump_json(indent=2) + "\n"  # streamed, yet the whole document's text
    data = json.loads(text)
    assert [(s["key"], s["name"], s["path"], sorted(c["result"]["check"] for c in s["checks"])) for s in data["skills"]] == [
        ("a/one", "one", "/src/one", ["files", "schema"]), ("two", "two", "/src/two", ["schema"])]  # the teardown's copy not counted again
    assert data["complete"] is True and data["exit_status"] == int(result.ret)
    assert data["overall_status"] == ("failed" if fail else "passed")
    assert data["settings"] == {"profile": "spec", "fail_on": "MEDIUM", "checks": "default", "allow_incomplete": True, "min_quality": 55.0}
    assert 0 < data["duration_s"] < 600 and data["shard"] is None and data["selection"] is None
    assert sorted(p.relative_to(pytester.path / "rep").as_posix() for p in (pytester.path / "rep").rglob("*.*")) == [
        "a/one/BENCHMARK.md", "index.html", "results.json", "two/BENCHMARK.md"]
    result.stdout.fnmatch_lines(["*- skilleval summary -*", "2 skill(s): *",
                                 f"skilleval: 2 BENCHMARK.md card(s), results.json and index.html in {pytester.path / 'rep'}"])
    # Once every hook has seen them, the results leave the reports pytest keeps to the end (JUnit took its copy) ...
    assert (pytester.path / "junit.xml").read_text("utf-8").count('name="skilleval.result"') == 3
    # ... and this plugin's passing, silent setup/teardown reports leave the terminal's list
    assert json.loads((pytester.path / "probe.json").read_text()) == {"carried": 0, "kept": 0}


def test_a_run_that_publishes_nothing_writes_no_report(pytester: pytest.Pytester) -> None:
    result = run(pytester, "def test_plain():\n    pass\n", "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.OK
    assert not (pytester.path / "rep").exists() and "skilleval summary" not in result.stdout.str()


def test_without_a_report_dir_the_summary_is_shown_and_nothing_written(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = run(pytester, CHECKS, "--skilleval-report-dir=")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*- skilleval summary -*", "2 skill(s): 2 pass, 0 fail, 0 incomplete*"])
    assert "BENCHMARK.md card(s)" not in result.stdout.str() and "NOT written" not in result.stdout.str()
    assert not (pytester.path / "skilleval-report").exists()
    # the step summary does not depend on the report files (README: two outputs, each on its own switch)
    assert step_summary.read_text("utf-8").startswith("## pytest-skilleval\n\n**2 skill(s)**: 2 pass, 0 fail, 0 incomplete")


def test_the_github_step_summary_is_appended_to(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = pytester.path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    assert run(pytester, CHECKS, "--skilleval-report-dir=rep").ret == pytest.ExitCode.OK
    text = step_summary.read_text("utf-8")
    assert text.startswith("earlier step\n## pytest-skilleval") and "a/one" in text


def test_a_step_summary_that_cannot_be_written_is_a_warning_and_changes_nothing_else(pytester: pytest.Pytester,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = pytester.path / "nonexistent" / "dir" / "sum.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = run(pytester, CHECKS, "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*- skilleval summary -*", "2 skill(s): 2 pass, 0 fail, 0 incomplete*",
                                 f"skilleval: WARNING: $GITHUB_STEP_SUMMARY not written: {step_summary}: "
                                 "FileNotFoundError: No such file or directory",
                                 "skilleval: 2 BENCHMARK.md card(s), results.json and index.html in *"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert results(pytester)["exit_status"] == 0 and not step_summary.parent.exists()


INTERRUPTS = {
    # SIGTERM (CI cancel, `timeout`): a real signal to this process, while the second item runs
    "sigterm": "    os.kill(os.getpid(), signal.SIGTERM)\n",
    "ctrl-c": "    raise KeyboardInterrupt\n",
}
INTERRUPTED = PUBLISHERS + '''
def test_first(record_property):
    check(record_property, "a/one", "one", "schema")

def test_second(record_property):
    check(record_property, "a/one", "one", "files")
{interrupt}
def test_never_runs(record_property):
    check(record_property, "two", "two", "schema")
'''


@pytest.mark.usefixtures("default_sigterm")
@pytest.mark.parametrize("how", list(INTERRUPTS))
def test_an_interrupted_run_leaves_a_partial_report_marked_incomplete(pytester: pytest.Pytester, how: str) -> None:
    result = run(pytester, INTERRUPTED.replace("{interrupt}", INTERRUPTS[how]), "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete" and data["exit_status"] == pytest.ExitCode.INTERRUPTED
    assert [(s["key"], len(s["checks"])) for s in data["skills"]] == [("a/one", 1)]
    assert "This run was interrupted" in (pytester.path / "rep/a/one/BENCHMARK.md").read_text("utf-8")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the session's handler is gone with it


@pytest.mark.usefixtures("default_sigterm")
def test_sigterm_is_left_to_a_handler_someone_else_installed(pytester: pytest.Pytester) -> None:
    received: list[int] = []

    def theirs(signum: int, frame: object) -> None:
        received.append(signum)

    signal.signal(signal.SIGTERM, theirs)
    result = run(pytester, INTERRUPTED.replace("{interrupt}", INTERRUPTS["sigterm"]), "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert received == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is theirs
    assert results(pytester)["complete"] is True


LATE_SIGTERM = '''
import os, signal
import pytest

@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    os.kill(os.getpid(), signal.SIGTERM)  # after the reports: the run is ending anyway
    terminalreporter.write_line("LATE SIGTERM IGNORED")
'''


@pytest.mark.usefixtures("default_sigterm")
def test_a_sigterm_once_the_session_is_finishing_is_ignored(pytester: pytest.Pytester) -> None:
    result = run(pytester, CHECKS, "--skilleval-report-dir=rep", conftest=LATE_SIGTERM)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["LATE SIGTERM IGNORED"])
    assert results(pytester)["complete"] is True
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.usefixtures("default_sigterm")
def test_the_sigterm_handler_is_installed_only_from_the_main_thread(pytester: pytest.Pytester) -> None:
    """``signal.signal`` raises outside the main thread: a session started there (an embedding tool) must not try."""
    from pytest_skilleval.config import Settings
    from pytest_skilleval.reports.session import ReportSession

    config = pytester.parseconfigure("-p", "no:cacheprovider")
    session = ReportSession(config, Settings.from_config(config))
    errors: list[BaseException] = []

    def start() -> None:
        try:
            session.pytest_sessionstart()
        except BaseException as exc:  # noqa: BLE001 - the assertion below names it
            errors.append(exc)

    worker = threading.Thread(target=start)
    worker.start()
    worker.join()
    assert errors == [] and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    session.pytest_unconfigure()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


INTERNAL_ERROR = PUBLISHERS + '''
def test_first(record_property):
    check(record_property, "a/one", "one", "schema")

def test_second(record_property):
    check(record_property, "two", "two", "schema")
'''
BROKEN_HOOK = '''
def pytest_runtest_logfinish(nodeid):
    if nodeid.endswith("test_first"):
        raise RuntimeError("a plugin broke")
'''


def test_an_internal_error_leaves_a_report_marked_incomplete(pytester: pytest.Pytester) -> None:
    result = run(pytester, INTERNAL_ERROR, "--skilleval-report-dir=rep", conftest=BROKEN_HOOK)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete"
    assert [s["key"] for s in data["skills"]] == ["a/one"]


#: What xdist's controller does when a worker dies: a made-up report for the item it was running, phase "???".
CRASHES = PUBLISHERS + '''
def crash(config, nodeid):
    fspath = nodeid.split("::")[0]
    report = pytest.TestReport(nodeid=nodeid, location=(fspath, None, fspath), keywords={}, outcome="failed",
                               longrepr=f"worker 'gw0' crashed while running {nodeid!r}", when="???")
    config.hook.pytest_runtest_logreport(report=report)

def test_victim_schema(record_property):
    check(record_property, "victim-skill", "victim-skill", "schema")

def test_worker_deaths(request):
    for nodeid in os.environ["CRASHED"].split(","):
        crash(request.config, nodeid)
'''


def test_the_item_a_dead_worker_was_running_is_incomplete_on_its_card(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("victim-skill", "other-skill"):
        (pytester.path / "skills" / name).mkdir(parents=True)
        (pytester.path / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Use when testing.\n---\n# T\n")
    monkeypatch.setenv("CRASHED", "skills/victim-skill::tier1::slow,skills/victim-skill::tier2::overlap,"
                                  "skills/ghost-skill::eval::case-a[claude-code-with_skill]")
    # --skills names the base: the card's key is the path below it, as for the skill's other results
    result = run(pytester, CRASHES, "--skills=skills", "--skilleval-checks=schema", "--skilleval-report-dir=rep", "test_items.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete"
    skills = {s["key"]: s for s in data["skills"]}
    assert sorted(skills) == ["ghost-skill", "other-skill", "victim-skill"]
    victim = {c["result"]["check"]: c for c in skills["victim-skill"]["checks"]}
    assert sorted(victim) == ["overlap", "schema", "slow"] and skills["victim-skill"]["verdict"] == "INCOMPLETE"
    slow = victim["slow"]
    assert slow["blocking"] is True and slow["result"]["status"] == "INCOMPLETE" and slow["result"]["tier"] == 1
    assert slow["result"]["reason"] == ("no result: worker 'gw0' crashed while running 'skills/victim-skill::tier1::slow' "
                                        "(killed, or out of memory)")
    assert victim["overlap"]["result"]["tier"] == 2 and victim["overlap"]["result"]["status"] == "INCOMPLETE"
    ghost = skills["ghost-skill"]  # no other result: named after its folder
    assert ghost["name"] == "ghost-skill" and ghost["path"] == str(pytester.path / "skills" / "ghost-skill")
    [trial] = ghost["checks"]
    assert trial["result"]["check"] == "eval::case-a[claude-code-with_skill]" and trial["result"]["tier"] == 3
    assert skills["other-skill"]["verdict"] == "PASS"
    card = (pytester.path / "rep/victim-skill/BENCHMARK.md").read_text("utf-8")
    assert "| slow | 1 | INCOMPLETE |" in card and "crashed" in card
    result.stdout.fnmatch_lines(["skilleval: 3 BENCHMARK.md card(s), results.json and index.html in *"])


def test_a_dead_workers_item_of_a_folder_named_like_an_escape_or_undecodable_keeps_its_skills_key(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node ids of the folder literally named ``\udcff`` and of the one named by the byte 0xff are escaped
    (``skills/\\udcff``, ``skills/\udcff``): a dead worker's item of each maps back to its own skill's key, and one
    of a folder with no other result (``ghost-\xfe``) is named after its folder, escaped."""
    base = os.fsencode(pytester.path / "skills")
    for folder, name in ((b"\\udcff", "backslash-skill"), (b"\xff", "byte-skill")):
        os.makedirs(os.path.join(base, folder))
        with open(os.path.join(base, folder, b"SKILL.md"), "w") as fh:
            fh.write(f"---\nname: {name}\ndescription: Use when testing.\n---\n# T\n")
    monkeypatch.setenv("CRASHED", "skills/\\\\udcff::tier1::slow,skills/\\udcff::tier1::slow,skills/ghost-\\udcfe::tier1::slow")
    result = run(pytester, CRASHES, "--skills=skills", "--skilleval-checks=schema", "--skilleval-report-dir=rep", "test_items.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    skills = {s["key"]: s for s in results(pytester)["skills"]}
    assert sorted(skills) == ["\\\\udcff", "\\udcff", "ghost-\\udcfe", "victim-skill"], sorted(skills)
    for key, name in (("\\\\udcff", "backslash-skill"), ("\\udcff", "byte-skill")):
        checks = {c["result"]["check"]: c["result"]["status"] for c in skills[key]["checks"]}
        assert checks == {"schema": "FAILED", "slow": "INCOMPLETE"} and skills[key]["name"] == name, (key, checks)
    assert skills["ghost-\\udcfe"]["name"] == "ghost-\\udcfe"
    assert skills["ghost-\\udcfe"]["path"] == str(pytester.path / "skills" / "ghost-\\udcfe")

def test_a_dead_workers_item_of_a_single_skill_named_outside_the_rootdir_lands_on_that_skill(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--skills=/abs/solo-skill`` outside the rootdir: the skill's node id is its folder name (collect.py), not a
    path below the rootdir; a dead worker's item of it is INCOMPLETE on that skill, with that skill's path."""
    solo = pytester.path.parent / f"{pytester.path.name}-outside" / "solo-skill"
    solo.mkdir(parents=True)
    (solo / "SKILL.md").write_text("---\nname: solo-skill\ndescription: Use when testing.\n---\n# T\n")
    monkeypatch.setenv("CRASHED", "solo-skill::tier1::slow")
    result = run(pytester, CRASHES, f"--skills={solo}", "--skilleval-checks=schema", "--skilleval-report-dir=rep",
                 "--deselect=solo-skill::tier1::schema", "test_items.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    skills = {s["key"]: s for s in results(pytester)["skills"]}
    assert skills["solo-skill"]["path"] == str(solo), skills["solo-skill"]["path"]
    assert {c["result"]["check"]: c["result"]["status"] for c in skills["solo-skill"]["checks"]} == {"slow": "INCOMPLETE"}


@pytest.mark.parametrize("nodeid", ["test_items.py::test_plain", "skills/victim-skill::tier1::slow"])
def test_a_dead_worker_makes_the_run_incomplete_even_without_a_skill_of_its_own(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                                                 nodeid: str) -> None:
    monkeypatch.setenv("CRASHED", nodeid)
    result = run(pytester, CRASHES, "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete"
    keys = sorted(s["key"] for s in data["skills"])
    # without a run's --skills base, the key is the path in the node id
    assert keys == (["victim-skill"] if nodeid.startswith("test_items") else ["skills/victim-skill", "victim-skill"])


UNWRITABLE = CHECKS + '''
def test_last():
    if os.environ.get("INTERRUPT") == "1":
        raise KeyboardInterrupt
'''


@pytest.mark.parametrize(("fail", "interrupt", "code"), [
    ("0", "0", pytest.ExitCode.TESTS_FAILED),  # every item passed, but the report is lost: not green
    ("1", "0", pytest.ExitCode.TESTS_FAILED),
    ("0", "1", pytest.ExitCode.INTERRUPTED),  # an interrupted run stays interrupted
], ids=["passing", "failing", "interrupted"])
def test_a_report_that_cannot_be_written_fails_the_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fail: str, interrupt: str,
                                                      code: pytest.ExitCode) -> None:
    monkeypatch.setenv("FAIL_ONE", fail)
    monkeypatch.setenv("INTERRUPT", interrupt)
    step_summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    (pytester.path / "afile").write_text("a file, not a folder")
    result = run(pytester, UNWRITABLE, "--skilleval-report-dir=afile/rep", "--color=yes")
    assert result.ret == code, result.stdout.str()
    result.stdout.fnmatch_lines(["*- skilleval summary -*", "*skilleval: reports NOT written: NotADirectoryError: *afile*"])
    assert "\x1b[31mskilleval: reports NOT written" in result.stdout.str()  # in red
    assert "BENCHMARK.md card(s)" not in result.stdout.str()
    text = step_summary.read_text("utf-8")  # the step summary is what CI shows: it says the report was lost
    assert "## pytest-skilleval" in text and "**reports NOT written**: NotADirectoryError: " in text and "see results.json" not in text


TRIGGERS = PUBLISHERS + '''
def test_queries(record_property):
    # recall 1/2 and precision 1/2: under 0.8,0.9; a rerun's records come on one report
    for rec in (trigger("q1", True, True), trigger("q2", True, False), trigger("q3", False, True), trigger("q4", False, False)):
        record_property(TRIGGER_PROPERTY, rec.model_dump_json())
'''


@pytest.mark.parametrize(("flags", "code"), [([], 0), (["--block-on-triggers=0.8,0.9"], 1), (["--block-on-triggers=0.5,0.5"], 0)])
def test_trigger_metrics_under_the_thresholds_fail_the_run(pytester: pytest.Pytester, flags: list[str], code: int) -> None:
    result = run(pytester, TRIGGERS, "--skilleval-report-dir=rep", *flags)
    assert result.ret == code, result.stdout.str()
    data = results(pytester)
    assert data["exit_status"] == code
    [skill] = data["skills"]
    assert (skill["key"], skill["name"], skill["path"]) == ("g", "trigger-skill", "/src/trigger-skill")
    agent = skill["triggers"]["agents"][0]
    assert agent["recall"]["value"] == pytest.approx(0.5) and agent["precision"]["value"] == pytest.approx(0.5)  # all four records counted
    assert skill["triggers"]["blocking"] is bool(flags)


def test_trigger_thresholds_do_not_turn_an_interrupted_run_into_a_failed_one(pytester: pytest.Pytester) -> None:
    source = TRIGGERS + "\ndef test_stop():\n    raise KeyboardInterrupt\n"
    result = run(pytester, source, "--skilleval-report-dir=rep", "--block-on-triggers=0.8,0.9")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert results(pytester)["exit_status"] == pytest.ExitCode.INTERRUPTED


TRIALS = PUBLISHERS + '''
def test_checks(record_property):
    check(record_property, "t", "trial-skill", "schema")

def test_trial(record_property):
    # a rerun: both executions come on the final report
    for rec in (trial("a", 1, "FAILED", 0.0), trial("a", 2, "PASSED", 1.0)):
        record_property(TRIAL_PROPERTY, rec.model_dump_json())

def test_trials_and_triggers_of_a_skill_without_checks(record_property):
    record_property(TRIAL_PROPERTY, trial("a", 1, "PASSED", 1.0, skill="u").model_dump_json())
    record_property(TRIGGER_PROPERTY, trigger("q1", True, True, skill="u").model_dump_json())
'''


def test_every_execution_of_a_trial_reaches_the_report_with_the_skills_checks(pytester: pytest.Pytester) -> None:
    result = run(pytester, TRIALS, "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # one skill with both its checks and its trials, one with trials and trigger trials and no check
    skill, other = results(pytester)["skills"]
    assert (skill["key"], skill["name"], skill["path"]) == ("t", "trial-skill", "/src/trial-skill")
    assert skill["tier3"]["trials"] == 2 and [c["result"]["check"] for c in skill["checks"]] == ["schema"]
    assert other["key"] == "u" and other["tier3"]["trials"] == 1 and other["triggers"]["agents"][0]["recall"]["value"] == 1.0


SELECTION = PUBLISHERS + '''
def test_trajectory(record_property):
    for n in (1, 2):
        record_property(SELECTION_PROPERTY, json.dumps({"nodeid": f"traj.json::{n}", "trajectory": "traj.json", "kind": "parse-error",
                                                        "error": "unreadable"}))
'''


def test_a_trajectories_only_run_writes_its_selection_summary(pytester: pytest.Pytester) -> None:
    result = run(pytester, SELECTION, "--skilleval-report-dir=rep", "--skilleval-shard=1/2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = results(pytester)
    assert data["skills"] == [] and data["selection"]["parse_errors"] == 2  # each record once, though call and teardown repeat it
    assert data["shard"] == "1/2"



def test_reports_as_xdist_replays_them_on_the_controller(pytester: pytest.Pytester) -> None:
    """Under xdist the controller sees each report rebuilt from the wire (pytest's serialisation hooks, as xdist
    uses them): its strings are new objects, never the interned literals of an in-process run, so every rule
    must compare them by value."""
    from pytest_skilleval.collect import RESULT_PROPERTY
    from pytest_skilleval.results import CheckResult
    from pytest_skilleval.selection.report import SELECTION_PROPERTY
    from pytest_skilleval.tier3.record import TRIAL_PROPERTY
    from pytest_skilleval.tier3.report import exit_status
    from pytest_skilleval.triggers.record import TRIGGER_PROPERTY

    config = pytester.parseconfigure("-p", "no:cacheprovider", "-p", "no:terminal", "--skilleval-report-dir=rep")  # no session to show
    session = config.pluginmanager.get_plugin("skilleval-reports")
    envelope = json.dumps({"skill": "one", "skill_name": "one", "skill_path": "/src/one", "blocking": True,
                           "result": CheckResult(check="schema").model_dump(mode="json")}, sort_keys=True)
    trial = _trial().model_dump_json()  # type: ignore[attr-defined]

    def replay(nodeid: str, when: str, outcome: str, properties: list[tuple[str, str]]) -> pytest.TestReport:
        report = pytest.TestReport(nodeid=nodeid, location=(nodeid, 0, nodeid), keywords={"skilleval": 1}, outcome=outcome,  # type: ignore[arg-type]
                                   longrepr=None, when=when, user_properties=list(properties))  # type: ignore[arg-type]
        data = json.loads(json.dumps(config.hook.pytest_report_to_serializable(config=config, report=report)))
        rebuilt = config.hook.pytest_report_from_serializable(config=config, data=data)
        assert rebuilt.when == when and rebuilt.when is not when
        config.hook.pytest_runtest_logreport(report=rebuilt)
        return rebuilt

    # a check item's properties: the result, then its status and counts for JUnit, before and after it in sort order
    others = [("skilleval.findings.high", "1"), ("skilleval.status", "FAILED")]
    seen = [replay("s::tier1::schema", when, "passed", [(RESULT_PROPERTY, envelope), *others] if when != "setup" else [])
            for when in ("setup", "call", "teardown")]
    assert [len(list(session.results.read(k))) for k in session.results.groups()] == [1]  # the call's copy only
    # once every hook has seen the teardown, the result (and only it) leaves the reports pytest keeps
    assert [r.user_properties for r in seen] == [[], others, others]
    replay("s::tier3::a[claude-code-with_skill]", "call", "failed", [(TRIAL_PROPERTY, trial)])
    assert session.failures == {"s::tier3::a[claude-code-with_skill]": True}  # a trial that failed its case: advisory
    replay("g::triggers::q1[claude-code]", "call", "passed", [(TRIGGER_PROPERTY, _trigger().model_dump_json())])  # type: ignore[attr-defined]
    selection = json.dumps({"nodeid": "traj.json::1", "trajectory": "traj.json", "kind": "parse-error", "error": "unreadable"})
    replay("traj.json::1", "call", "passed", [(SELECTION_PROPERTY, selection)])
    built = session.build(pytest.ExitCode.TESTS_FAILED)
    assert exit_status(1, session.failures.values(), [sk.tier3 for sk in built.skills if sk.tier3], block=False) == 0
    assert [(sk.key, len(sk.checks), sk.tier3 is not None and sk.tier3.trials, sk.triggers is not None) for sk in built.skills] == [
        ("g", 0, False, True), ("one", 0, False, False), ("s", 0, 1, False)]  # the run's skills are light: no check records
    assert built.selection is not None and built.selection.parse_errors == 1
    replay("s::tier3::a[claude-code-with_skill]", "teardown", "failed", [(TRIAL_PROPERTY, trial)])
    assert session.failures == {"s::tier3::a[claude-code-with_skill]": False}  # its teardown broke: not advisory


def test_the_duration_is_the_session_wall_time_even_seconds_after_boot(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """time.monotonic() counts from boot: on a fresh CI machine pytest may start seconds after it."""
    from pytest_skilleval.config import Settings
    from pytest_skilleval.reports.session import ReportSession

    config = pytester.parseconfigure("-p", "no:cacheprovider", "-p", "no:terminal")
    now = [4.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    session = ReportSession(config, Settings.from_config(config))
    now[0] = 15.12345
    assert session.build(pytest.ExitCode.OK).duration_s == 11.123  # milliseconds


#: A plugin that forgives failing tests at session end, as exit-code plugins do.
FORGIVING = '''
def pytest_sessionfinish(session):
    session.exitstatus = 0
'''


def test_a_lost_report_fails_the_run_after_every_other_plugin_settled_the_exit_status(pytester: pytest.Pytester,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_ONE", "1")
    (pytester.path / "afile").write_text("a file, not a folder")
    result = run(pytester, CHECKS, "--skilleval-report-dir=afile/rep", conftest=FORGIVING)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["skilleval: reports NOT written: *"])


TEARDOWN_INTERRUPTED = PUBLISHERS + '''
@pytest.fixture
def sigterm_on_teardown():
    yield
    os.kill(os.getpid(), signal.SIGTERM)  # CI cancels the run while the item's fixtures tear down

def test_first(record_property, sigterm_on_teardown):
    check(record_property, "a/one", "one", "schema")

def test_never_runs(record_property):
    check(record_property, "two", "two", "schema")
'''


@pytest.mark.usefixtures("default_sigterm")
def test_an_item_interrupted_in_its_teardown_keeps_the_result_of_its_call(pytester: pytest.Pytester) -> None:
    result = run(pytester, TEARDOWN_INTERRUPTED, "--skilleval-report-dir=rep")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    data = results(pytester)
    assert data["complete"] is False and [(s["key"], len(s["checks"])) for s in data["skills"]] == [("a/one", 1)]


#: A check that interrupts the run (SIGTERM to itself, or Ctrl-C) when it reaches one skill, and passes elsewhere.
INTERRUPTING_CHECK = '''
import os, signal
import pytest
from pytest_skilleval.checks import Check

class Interrupting(Check):
    name = "middle"
    def run(self, skill, ctx):
        if skill.name == "cut-skill":
            {interrupt}
        return self.result([])

class Early(Check):
    name = "early"
    def run(self, skill, ctx):
        return self.result([])

@pytest.hookimpl
def pytest_skilleval_checks(config):
    return [Interrupting(), Early()]
'''
SKILL_INTERRUPTS = {"sigterm": "os.kill(os.getpid(), signal.SIGTERM)", "ctrl-c": "raise KeyboardInterrupt"}


@pytest.mark.usefixtures("default_sigterm")
@pytest.mark.parametrize("how", list(SKILL_INTERRUPTS))
def test_a_skill_whose_checks_did_not_all_finish_is_incomplete_not_pass(pytester: pytest.Pytester, how: str) -> None:
    from conftest import manifest, write_skill

    # items run skill by skill, checks by name: early, files, middle, schema
    for name in ("alpha-skill", "cut-skill", "zeta-skill"):
        write_skill(pytester.path / "skills", name, {"SKILL.md": manifest(name)})
    pytester.makeconftest(INTERRUPTING_CHECK.replace("{interrupt}", SKILL_INTERRUPTS[how]))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--skills=skills", "--skilleval-checks=early,files,middle,schema",
                                          "--skilleval-report-dir=rep", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    data = results(pytester)
    skills = {s["key"]: s for s in data["skills"]}
    assert sorted(skills) == ["alpha-skill", "cut-skill"]  # a skill never reached has no card
    assert skills["alpha-skill"]["verdict"] == "PASS"
    cut = skills["cut-skill"]
    statuses = {c["result"]["check"]: (c["result"]["status"], c["result"]["reason"] or "") for c in cut["checks"]}
    assert statuses["early"][0] == statuses["files"][0] == "PASSED"
    for unfinished in ("middle", "schema"):
        assert statuses[unfinished][0] == "INCOMPLETE" and "interrupted" in statuses[unfinished][1], statuses
    assert cut["verdict"] == "INCOMPLETE" and cut["tiers"]["1"]["status"] == "INCOMPLETE"
    assert data["verdict_counts"] == {"INCOMPLETE": 1, "PASS": 1}
    result.stdout.fnmatch_lines(["2 skill(s): 1 pass, 0 fail, 1 incomplete; * — run interrupted, partial report*"])
    card = (pytester.path / "rep/cut-skill/BENCHMARK.md").read_text("utf-8")
    assert "INCOMPLETE" in card and "| middle |" in card
