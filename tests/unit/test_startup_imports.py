"""A Tier 1 run does not import the trial machinery.

Every ``pytest`` run in an environment with the plugin installed pays for what the plugin imports at
start-up, and a catalog's Tier 1 run on every pull request pays for it again. The gateway's server
and protocols, the grader, trial runners, planners and the collectors of trial and trigger items are
imported by the Tier 3, trigger and fixture code that uses them (``benchmarks/tier1_startup.py``
measures what this saves). Checked in a fresh interpreter, by module name: no timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Modules only a Tier 3, trigger or gateway run needs.
TRIAL_MACHINERY = (
    "pytest_skilleval.gateway.server", "pytest_skilleval.gateway.trial", "pytest_skilleval.gateway.metering",
    "pytest_skilleval.gateway.protocols", "pytest_skilleval.gateway.script",
    "pytest_skilleval.tier3.grading.grade", "pytest_skilleval.tier3.grading.judge",
    "pytest_skilleval.tier3.trial", "pytest_skilleval.tier3.items", "pytest_skilleval.tier3.plan",
    "pytest_skilleval.tier3.store", "pytest_skilleval.tier3.staging",
    "pytest_skilleval.tier3.sandboxes.harbor.results",
    "pytest_skilleval.triggers.items", "pytest_skilleval.triggers.trial", "pytest_skilleval.triggers.probe",
    "pytest_skilleval.triggers.rivals",
)
#: Modules a Tier 1 run has no use for, each a measurable part of its start-up floor
#: (``benchmarks/tier1_startup.py``): the transcript parsers and their registry (the report model
#: reads only ``trajectory.model``, for selection records).
NOT_TIER1 = ("pytest_skilleval.trajectory.builder", "pytest_skilleval.trajectory.registry", "pytest_skilleval.trajectory.parsers")
#: The eval-file loader and its formats: only the ``evals`` check reads eval files (when it runs).
EVAL_FORMATS = ("pytest_skilleval.tier3.cases", "pytest_skilleval.tier3.case_formats", "pytest_skilleval.tier3.case_formats.model")

RUN = """
import json, sys
import pytest
code = pytest.main(sys.argv[1:])
print("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith("pytest_skilleval"))))
raise SystemExit(code)
"""


def loaded_modules(tmp_path: Path, *args: str) -> set[str]:
    skill = tmp_path / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Does a demo. Use when a demo is asked for.\n---\n\n# Demo\n\nSteps.\n",
                                    encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", RUN, f"--skills={skill.parent}", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           f"--rootdir={tmp_path}", f"--skilleval-report-dir={tmp_path / 'report'}", "--skilleval-cache-dir=", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode in (0, 1), proc.stdout[-3000:]
    return set(json.loads(line.removeprefix("MODULES ")))


def test_a_tier1_run_imports_no_trial_machinery(tmp_path: Path) -> None:
    loaded = loaded_modules(tmp_path, "-n", "0", "-m", "tier1")
    assert "pytest_skilleval.tier1.schema" in loaded  # the run did load the plugin and its checks
    assert sorted(loaded.intersection(TRIAL_MACHINERY)) == []
    assert sorted(loaded.intersection(NOT_TIER1)) == []


def test_only_the_evals_check_loads_eval_file_formats(tmp_path: Path) -> None:
    """The report documents of a run without ``evals`` do not import the case loader (a Tier 3 card's digest line does, when written)."""
    loaded = loaded_modules(tmp_path, "-n", "0", "-m", "tier1", "--skilleval-checks=version")
    assert "pytest_skilleval.reports.session" in loaded  # the reports were written
    assert sorted(loaded.intersection(EVAL_FORMATS)) == []


def test_a_tier3_run_still_collects_trials(tmp_path: Path) -> None:
    """The collectors of trial items are registered when Tier 3 is on (a dry run: nothing starts)."""
    loaded = loaded_modules(tmp_path, "-n", "0", "--skilleval-tier3", "--skilleval-dry-run")
    assert "pytest_skilleval.tier3.items" in loaded


OPTIONS_MODULES = ("pytest_skilleval.config", "pytest_skilleval.tier2.options", "pytest_skilleval.providers.options",
                   "pytest_skilleval.gateway.options", "pytest_skilleval.tier3.options", "pytest_skilleval.tier3.sandboxes.options",
                   "pytest_skilleval.triggers.options")


def test_the_options_modules_import_no_pydantic() -> None:
    """``pytest_addoption`` of every pytest run imports these: the severities and provider errors they
    read live apart from the pydantic models (levels.py, providers/errors.py)."""
    code = (f"import sys\nfor m in {OPTIONS_MODULES!r}: __import__(m)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"


def test_the_report_session_imports_its_models_and_writers_when_used() -> None:
    """Registered in every pytest run that writes reports: the report models, writers and templates
    (pydantic, jinja2) and the records of Tier 3, triggers and selection come with the first record."""
    code = ("import sys\nimport pytest_skilleval.reports.session\nimport pytest_skilleval.release\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core', 'jinja2', 'markdown_it', 'yaml')"
            " or m.startswith(('pytest_skilleval.reports.model', 'pytest_skilleval.tier3.', 'pytest_skilleval.collect'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"
