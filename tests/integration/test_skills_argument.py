"""``--skills PATH`` written with a space: pytest chooses its rootdir and ini file before it loads plugins, so
it takes PATH for a test path then. When that changes the configuration, the run ends with a usage error
that names the ini file not read; when it changes nothing, the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import manifest, write_skill

pytest_plugins = ["pytester"]

CHECKS = "--skilleval-checks=schema"


def _project_and_skills(base: Path) -> tuple[Path, Path]:
    """``base/proj`` with a pyproject.toml setting the strict profile, and ``base/ns`` holding one skill beside it."""
    project, skills = base / "proj", base / "ns"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nskilleval_profile = "strict"\n', encoding="utf-8")
    write_skill(skills, "alpha-skill", {"SKILL.md": manifest("alpha-skill")})
    return project, skills


def test_skills_outside_the_project_written_with_a_space_is_a_usage_error_naming_the_ini_file(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project, skills = _project_and_skills(pytester.path)
    monkeypatch.chdir(project)
    spaced = pytester.runpytest("--skills", str(skills), CHECKS, "--skilleval-report-dir=", "-p", "no:cacheprovider")
    assert spaced.ret == pytest.ExitCode.USAGE_ERROR
    err = spaced.stderr.str()
    assert str(project / "pyproject.toml") in err and f"--skills={skills}" in err
    assert not (skills / ".skilleval-cache").exists() and not (pytester.path / ".skilleval-cache").exists()

    joined = pytester.runpytest(f"--skills={skills}", CHECKS, "--skilleval-report-dir=", "-p", "no:cacheprovider")
    joined.stdout.fnmatch_lines(["skilleval: profile=strict*", f"rootdir: {project}", "configfile: pyproject.toml"])
    assert joined.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)


def test_other_path_options_written_with_a_space_are_checked_too(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project, skills = _project_and_skills(pytester.path)
    outside = pytester.path / "reports"
    outside.mkdir()
    monkeypatch.chdir(project)
    result = pytester.runpytest(f"--skills={skills}", "--skilleval-report-dir", str(outside), CHECKS, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--skilleval-report-dir={outside}" in result.stderr.str()


def test_a_space_that_changes_nothing_is_no_error(pytester: pytest.Pytester) -> None:
    """The README's own ``pytest --skills ./skills`` inside the project: the same rootdir and ini either way."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nskilleval_profile = "strict"\n')
    write_skill(pytester.path / "skills", "alpha-skill", {"SKILL.md": manifest("alpha-skill")})
    result = pytester.runpytest("--skills", "skills", CHECKS, "--skilleval-report-dir=", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["skilleval: profile=strict*", "configfile: pyproject.toml"])
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)


def test_a_skill_tree_with_its_own_ini_file_named_with_a_space_is_a_usage_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A skill tree is untrusted: its pytest.ini must not configure the run in place of the project's."""
    project, skills = _project_and_skills(pytester.path)
    (skills / "pytest.ini").write_text("[pytest]\nskilleval_profile = spec\n", encoding="utf-8")
    monkeypatch.chdir(project)
    result = pytester.runpytest("--skills", str(skills), CHECKS, "--skilleval-report-dir=", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert str(skills / "pytest.ini") in err and str(project / "pyproject.toml") in err
