"""Skill nodes use the rootdir's hooks, looked up once and again after each plugin registration (collect.RootHooks).

A conftest pytest loads later in the run (in a folder of the user's tests) must not apply to skill items,
though the skill items' hooks were first looked up before it existed. Real pytest sessions, in-process.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SKILL = "---\nname: {name}\ndescription: Does {name}. Use when {name} is asked for.\n---\n\n# {name}\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    for name in ("alpha", "beta"):
        skill = pytester.path / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(SKILL.format(name=name), encoding="utf-8")
    pytester.makeconftest("""
def pytest_runtest_setup(item):
    item.user_properties.append(("seen-by", "root"))
""")
    sub = pytester.path / "tests" / "sub"
    sub.mkdir(parents=True)
    (sub / "conftest.py").write_text("""
import pytest

def pytest_runtest_setup(item):
    raise RuntimeError("the conftest of tests/sub ran for " + item.nodeid)
""", encoding="utf-8")
    (sub / "test_mine.py").write_text("def test_mine():\n    pass\n", encoding="utf-8")
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_inprocess("-p", "no:cacheprovider", "--skilleval-report-dir=", "--skilleval-cache-dir=",
                                       "--skilleval-checks=version", *args)


@pytest.mark.parametrize("order", [("skills", "tests"), ("tests", "skills")])
def test_a_conftest_loaded_later_does_not_apply_to_skills(project: pytest.Pytester, order: tuple[str, str]) -> None:
    result = run(project, *order)
    result.assert_outcomes(passed=2, errors=1)  # the skills pass; the user's test meets its own conftest
    result.stdout.fnmatch_lines(["*the conftest of tests/sub ran for tests/sub/test_mine.py::test_mine*"])
    result.stdout.no_fnmatch_line("*ran for skills/*")


def test_the_rootdir_conftest_applies_to_skills(project: pytest.Pytester) -> None:
    reports = run(project, "skills").reprec  # type: ignore[attr-defined]
    calls = [r for r in reports.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert len(calls) == 2 and all(("seen-by", "root") in r.user_properties for r in calls)
