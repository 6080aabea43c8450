"""No report is silently lost and no run is falsely green: a killed worker, SIGTERM, Ctrl-C and an
unwritable report folder, each with real processes and real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import manifest, sigint_at_default, write_skill

pytest_plugins = ["pytester"]
BASIC = "--skilleval-checks=files,schema"

#: A check that parks on one skill (writing its pid where the test can see it) and passes elsewhere.
SLOW_CHECK = '''
import os, time
from pathlib import Path
import pytest
from pytest_skilleval.checks import Check

class Slow(Check):
    name = "slow"
    def run(self, skill, ctx):
        if skill.name == "victim-skill":
            Path({started!r}).write_text(str(os.getpid()))
            time.sleep(120)
        return self.result([])

@pytest.hookimpl
def pytest_skilleval_checks(config):
    return [Slow()]
'''


def skills(base: Path) -> None:
    for name in ("alpha-skill", "beta-skill", "victim-skill", "zeta-skill"):
        write_skill(base / "skills", name, {"SKILL.md": manifest(name)})


def start(pytester: pytest.Pytester, *args: str) -> tuple[subprocess.Popen[str], Path]:
    started = pytester.path / "started"
    pytester.makeconftest(SLOW_CHECK.format(started=str(started)))
    skills(pytester.path)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--skills=skills", "--skilleval-checks=files,schema,slow",
                             "--skilleval-report-dir=rep", "-p", "no:cacheprovider", *args],
                            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, preexec_fn=sigint_at_default)
    deadline = time.monotonic() + 300
    while not started.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "the slow check never started"
        time.sleep(0.1)
    time.sleep(0.3)  # the pid is written; let the file close
    return proc, started


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out


def results(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "rep/results.json").read_text())


@pytest.mark.parametrize("workers", ["0", "2"])
def test_sigterm_leaves_a_valid_partial_report_marked_incomplete(pytester: pytest.Pytester, workers: str) -> None:
    """What CI runners send on cancel and `timeout` sends: treated like Ctrl-C."""
    proc, _ = start(pytester, "-n", workers)
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == pytest.ExitCode.INTERRUPTED, out
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete", out
    card = (pytester.path / "rep/alpha-skill/BENCHMARK.md").read_text()
    assert "This run was interrupted" in card
    # the skill cut in half is INCOMPLETE, its unfinished check named; no half-checked skill is a PASS
    victim = next(s for s in data["skills"] if s["name"] == "victim-skill")
    slow = next(c["result"] for c in victim["checks"] if c["result"]["check"] == "slow")
    assert slow["status"] == "INCOMPLETE" and "interrupted" in slow["reason"], slow
    assert victim["verdict"] == "INCOMPLETE"
    assert all(len(s["checks"]) == 3 for s in data["skills"]), [(s["name"], len(s["checks"])) for s in data["skills"]]
    assert data["verdict_counts"].get("INCOMPLETE", 0) >= 1
    assert "— run interrupted, partial report" in out


def test_ctrl_c_says_incomplete_not_failed(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills", "broken-skill", {"SKILL.md": "---\nname: broken-skill\nname: x\n---\n"})
    proc, _ = start(pytester, "-n", "0")
    proc.send_signal(signal.SIGINT)
    code, out = finish(proc)
    assert code == pytest.ExitCode.INTERRUPTED, out
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete", out


def test_a_killed_worker_makes_the_report_incomplete_and_shows_on_the_card(pytester: pytest.Pytester) -> None:
    proc, started = start(pytester, "-n", "2")
    os.kill(int(started.read_text()), signal.SIGKILL)
    code, out = finish(proc)
    assert code == pytest.ExitCode.TESTS_FAILED, out
    data = results(pytester)
    assert data["complete"] is False and data["overall_status"] == "incomplete", out
    victim = next(s for s in data["skills"] if s["name"] == "victim-skill")
    crashed = next(c["result"] for c in victim["checks"] if c["result"]["check"] == "slow")
    assert crashed["status"] == "INCOMPLETE" and "crashed" in crashed["reason"], crashed
    assert victim["verdict"] == "INCOMPLETE"
    card = (pytester.path / "rep/victim-skill/BENCHMARK.md").read_text()
    assert "| slow | 1 | INCOMPLETE |" in card and "crashed" in card
    others = [s for s in data["skills"] if s["name"] != "victim-skill"]
    assert len(others) == 3 and all(len(s["checks"]) == 3 for s in others)  # every other skill kept its results


def test_reports_that_cannot_be_written_fail_the_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    write_skill(pytester.path / "skills", "alpha-skill", {"SKILL.md": manifest("alpha-skill")})
    (pytester.path / "afile").write_text("a file, not a folder")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (pytester.path / "linked").symlink_to(elsewhere)
    for report_dir in ("afile/rep", "linked/rep", "/proc/skilleval-rep"):  # a file as parent, a planted link, read-only
        result = pytester.runpytest("--skills=skills", BASIC, f"--skilleval-report-dir={report_dir}")
        result.assert_outcomes(passed=2)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, report_dir
        result.stdout.fnmatch_lines(["*reports NOT written*"])
    assert list(elsewhere.iterdir()) == []


def test_a_linked_prefix_outside_the_project_is_not_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """macOS's /tmp -> /private/tmp: a link the user cannot change, above the folders the run creates."""
    write_skill(pytester.path / "skills", "alpha-skill", {"SKILL.md": manifest("alpha-skill")})
    real = tmp_path / "private-tmp"
    real.mkdir()
    (tmp_path / "tmp").symlink_to(real)
    result = pytester.runpytest("--skills=skills", BASIC, f"--skilleval-report-dir={tmp_path / 'tmp' / 'x'}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert (real / "x" / "results.json").is_file()
