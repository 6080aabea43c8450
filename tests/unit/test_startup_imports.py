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


#: What a pytest run that collects no skill and uses no skilleval option has no use for: the results'
#: pydantic models, the Markdown and YAML parsers, the report writers and templates, Tier 2's numeric
#: stack, Tier 3's records and the checks themselves. Every pytest run in an environment with the
#: plugin installed would pay for importing them (``benchmarks/tier1_vs_skillevaluator.py`` prints what
#: a plain run pays next to ``-p no:skilleval``).
NOT_FOR_A_PLAIN_RUN = (
    "pydantic", "pydantic_core", "markdown_it", "markdown_it_pyrs", "yaml", "jinja2", "numpy", "onnxruntime",
    "pytest_skilleval.results", "pytest_skilleval.skill", "pytest_skilleval.batch", "pytest_skilleval.collect",
    "pytest_skilleval.tier1.schema", "pytest_skilleval.tier3.record", "pytest_skilleval.trajectory.model",
    "pytest_skilleval.reports.html", "pytest_skilleval.reports.model", "pytest_skilleval.providers.base",
    "pytest_skilleval.selection.items", "pytest_skilleval.tier3.sandboxes.container", "pytest_skilleval.tier2.checks",
)
#: The fixtures a project's own tests may ask for: registered in every run, whatever it imports.
FIXTURES = ("skilleval_chat", "skilleval_embedder", "skilleval_provider_cache", "skilleval_gateway", "skilleval_gateway_trial",
            "skilleval_selection", "skilleval_sandbox", "skill_trial", "skilleval_trigger_runner")

PLAIN_RUN = """
import json, sys
import pytest
code = pytest.main(sys.argv[1:])
print("MODULES " + json.dumps(sorted(sys.modules)))
raise SystemExit(code)
"""


def plain_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", PLAIN_RUN, "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--rootdir={tmp_path}",
                           "-p", "no:hypothesispytest", *args, "test_plain.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc, set(json.loads(line.removeprefix("MODULES ")))


def test_a_plain_run_without_skills_imports_nothing_heavy(tmp_path: Path) -> None:
    """One ordinary test, the plugin loaded: it registers its options, markers, hooks and fixtures, and imports no more."""
    proc, loaded = plain_run(tmp_path)
    assert "1 passed" in proc.stdout
    assert "pytest_skilleval.plugin" in loaded  # the plugin was loaded
    assert sorted(m for m in loaded if m in NOT_FOR_A_PLAIN_RUN or m.split(".")[0] in NOT_FOR_A_PLAIN_RUN) == []


def test_a_plain_run_offers_every_fixture(tmp_path: Path) -> None:
    proc, _ = plain_run(tmp_path, "--fixtures")
    assert [f for f in FIXTURES if f"{f} " not in proc.stdout and f"{f}\n" not in proc.stdout] == []
