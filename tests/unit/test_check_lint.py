"""``lint`` (advisory): ruff and shellcheck findings with rule ids, one process per tool per batch."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest, rules, run_batched, run_check

from pytest_skilleval import gate, tools
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.lint import RUFF, SHELLCHECK, LintCheck, script_language

BAD_PY = "import os\n\n\ndef main():\n    return undefined_name\n"
CLEAN_PY = "import os\n\n\ndef main() -> str:\n    return os.getcwd()\n"
BAD_SH = '#!/bin/bash\nfor f in $(ls); do\n  rm $f\ndone\nif [ -z $1 ] then echo x; fi\n'
CLEAN_SH = '#!/bin/bash\nset -euo pipefail\nfor f in ./*; do\n  printf "%s\\n" "$f"\ndone\n'




def _lint(make_skill: Callable[..., Skill], files: dict[str, str | bytes]):  # type: ignore[no-untyped-def]
    return run_check(LintCheck(), make_skill({"SKILL.md": manifest(), **files}))


def _by_rule(result, rule):  # type: ignore[no-untyped-def]
    found = [f for f in result.findings if f.rule == rule]
    assert found, f"{rule} not in {rules(result)}"
    return found[0]


def test_ruff_findings_carry_rule_ids_and_mapped_severity(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"scripts/run.py": BAD_PY, "scripts/broken.py": "def f(:\n    pass\n"})
    assert result.status is Status.PASSED, result.reason
    assert _by_rule(result, "lint.ruff.F401").severity is Severity.LOW
    undefined = _by_rule(result, "lint.ruff.F821")
    assert (undefined.file, undefined.line, undefined.severity) == ("scripts/run.py", 5, Severity.MEDIUM)
    syntax = _by_rule(result, "lint.ruff.invalid-syntax")
    assert (syntax.file, syntax.severity) == ("scripts/broken.py", Severity.MEDIUM)
    assert result.metrics == {"python_scripts": 2, "shell_scripts": 0}
    assert set(result.tools) == {"ruff"}


def test_shellcheck_findings_carry_rule_ids_and_mapped_severity(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"scripts/clean.sh": BAD_SH, "scripts/noshebang.sh": "echo $1\n"})
    assert result.status is Status.PASSED, result.reason
    assert _by_rule(result, "lint.shellcheck.SC2086").severity is Severity.INFO  # info -> INFO
    assert _by_rule(result, "lint.shellcheck.SC2045").severity is Severity.MEDIUM  # error -> MEDIUM
    assert _by_rule(result, "lint.shellcheck.SC2148").severity is Severity.LOW  # no shebang: documented override
    assert {f.file for f in result.findings} == {"scripts/clean.sh", "scripts/noshebang.sh"}
    assert set(result.tools) == {"shellcheck"}


def test_clean_scripts_have_no_findings(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"scripts/run.py": CLEAN_PY, "scripts/run.sh": CLEAN_SH})
    assert result.status is Status.PASSED and result.findings == []
    assert result.metrics == {"python_scripts": 1, "shell_scripts": 1}


def test_extensionless_scripts_are_sniffed_by_shebang(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"bin/tool": "#!/usr/bin/env -S python3 -u\n" + BAD_PY, "bin/deploy": "#!/bin/sh\necho $1\n",
                                "bin/README": "plain text\n", "notes.txt": "#!/bin/sh\necho $1\n"})
    assert {f.file for f in result.findings} == {"bin/tool", "bin/deploy"}  # .txt is data, not a script
    assert result.metrics == {"python_scripts": 1, "shell_scripts": 1}


@pytest.mark.parametrize(("rel", "text", "language"), [
    ("a.py", "", "python"), ("a.bash", "", "shell"), ("run", "#!/usr/bin/python3.12\n", "python"),
    ("run", "#!/usr/bin/env bash\n", "shell"), ("run", "#!/usr/bin/env node\n", None), ("a.md", "#!/bin/sh\n", None),
    ("Makefile", "all:\n", None)])
def test_script_language(rel: str, text: str, language: str | None) -> None:
    assert script_language(rel, text) == language


def test_a_skills_own_config_cannot_change_the_rules(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"scripts/run.py": BAD_PY, "scripts/run.sh": "#!/bin/bash\necho $1\n",
                                "pyproject.toml": '[tool.ruff.lint]\nignore = ["F"]\n', "ruff.toml": 'lint.ignore = ["F"]\n',
                                "scripts/.shellcheckrc": "disable=SC2086\n", ".shellcheckrc": "disable=all\n"})
    assert {"lint.ruff.F401", "lint.ruff.F821", "lint.shellcheck.SC2086"} <= rules(result)


def test_eval_folders_are_not_linted(make_skill: Callable[..., Skill]) -> None:
    result = _lint(make_skill, {"evals/files/bad.py": BAD_PY, "evals/files/bad.sh": BAD_SH})
    assert result.findings == [] and result.metrics == {"python_scripts": 0, "shell_scripts": 0}


def test_no_scripts_passes_without_running_any_tool(make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUFF.override_var, "/nonexistent/ruff")
    monkeypatch.setenv(SHELLCHECK.override_var, "/nonexistent/shellcheck")
    result = _lint(make_skill, {"references/guide.md": "```bash\necho $1\n```\n"})
    assert result.status is Status.PASSED and result.findings == [] and result.tools == {}


def test_missing_ruff_is_incomplete_naming_it_and_how_to_install(make_skill: Callable[..., Skill],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUFF.override_var, "/nonexistent/ruff")
    result = _lint(make_skill, {"scripts/run.py": BAD_PY, "scripts/run.sh": BAD_SH})
    assert result.status is Status.INCOMPLETE
    assert result.reason and result.reason.startswith("ruff: missing") and RUFF.install_hint in result.reason
    assert "lint.shellcheck.SC2086" in rules(result)  # what shellcheck found is still shown
    verdict = gate.decide(result, blocking=LintCheck.blocking, policy=gate.Policy())
    # lint is advisory: neither its findings nor its missing evidence fail a run; both are reported
    assert verdict.status is Status.INCOMPLETE and verdict.outcome == "passed"


def test_lint_is_advisory(make_skill: Callable[..., Skill]) -> None:
    assert LintCheck.blocking is False and LintCheck.default_enabled is True
    result = _lint(make_skill, {"scripts/run.py": BAD_PY})
    verdict = gate.decide(result, blocking=False, policy=gate.Policy(fail_on=Severity.LOW))
    assert verdict.status is Status.FAILED and verdict.outcome == "passed"


def _counting_wrapper(tmp_path: Path, spec: tools.ToolSpec, log: Path) -> str:
    real = tools.locate(spec)
    assert real, f"{spec.name} is not installed: {spec.install_hint}"
    script = tmp_path / f"{spec.name}-wrapper"
    script.write_text(f'#!/bin/sh\necho "{spec.name} $*" >> {log}\nexec {real} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_one_process_per_tool_for_a_batch(tmp_path: Path, make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    for spec in (RUFF, SHELLCHECK):
        monkeypatch.setenv(spec.override_var, _counting_wrapper(tmp_path, spec, log))
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), "scripts/run.py": BAD_PY if n % 2 else CLEAN_PY,
                          "scripts/run.sh": BAD_SH if n == 2 else CLEAN_SH}, name=f"skill-{n}") for n in range(5)]
    results, batcher = run_batched(LintCheck(), skills)
    scans = [line.split()[0] for line in log.read_text().splitlines() if "--version" not in line]
    assert sorted(scans) == ["ruff", "shellcheck"]
    assert ["lint.ruff.F821" in rules(r) for r in results] == [False, True, False, True, False]
    assert ["lint.shellcheck.SC2086" in rules(r) for r in results] == [False, False, True, False, False]


def test_a_script_less_skill_is_answered_without_a_batch(make_skill: Callable[..., Skill]) -> None:
    # a catalog of Markdown-only skills must not load every skill of a batch a second time for nothing
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), **({"scripts/run.py": BAD_PY} if n == 1 else {}),
                          "references/guide.md": "```bash\necho $1\n```\n"}, name=f"skill-{n}") for n in range(4)]
    results, batcher = run_batched(LintCheck(), skills)
    assert batcher.scanned == 1  # only the skill with a script was handed to a scanner
    assert ["lint.ruff.F821" in rules(r) for r in results] == [False, True, False, False]
    assert [r.metrics for r in results] == [{"python_scripts": n == 1, "shell_scripts": 0} for n in range(4)]


def test_a_run_without_ruff_reports_lint_incomplete_naming_the_tool(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "skills" / "demo-skill" / "scripts").mkdir(parents=True)
    (pytester.path / "skills" / "demo-skill" / "SKILL.md").write_text(manifest())
    (pytester.path / "skills" / "demo-skill" / "scripts" / "run.py").write_text(CLEAN_PY)
    monkeypatch.setenv(RUFF.override_var, "/nonexistent/ruff")
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=lint", "--skilleval-report-dir=rep", "-p", "no:cacheprovider",
                                "-v")
    assert result.ret == pytest.ExitCode.OK  # an advisory check's INCOMPLETE never fails the run (issue 11)
    result.stdout.fnmatch_lines(["*demo-skill::tier1::lint ADVISORY*"])
    lint = json.loads((pytester.path / "rep" / "results.json").read_text())["skills"][0]["checks"][0]["result"]
    assert lint["status"] == "INCOMPLETE" and "ruff: missing" in lint["reason"] and "install it with: pip install ruff" in lint["reason"]
