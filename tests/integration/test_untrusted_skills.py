"""Untrusted skill trees as an attacker writes them: code beside or inside a skill never runs on the host.

Every payload writes a marker file when it is imported; the tests run pytest in a subprocess (so an
import cannot hide in the test process) and prove no marker exists.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import manifest, write_skill

pytest_plugins = ["pytester"]
BASIC = "--skilleval-checks=files,schema,version"


def payload(marker_dir: Path, name: str) -> str:
    """Python that leaves ``marker_dir/name`` behind when it is imported or executed."""
    return f"open({str(marker_dir / name)!r}, 'w').write('ran')\n"


def markers(marker_dir: Path) -> list[str]:
    return sorted(p.name for p in marker_dir.iterdir())


def evil_skill(base: Path, name: str, marker_dir: Path) -> Path:
    return write_skill(base, name, {
        "SKILL.md": manifest(name), "conftest.py": payload(marker_dir, f"{name}-conftest"),
        "tests/conftest.py": payload(marker_dir, f"{name}-tests-conftest"), "tests/test_x.py": payload(marker_dir, f"{name}-test_x"),
        "test_top.py": payload(marker_dir, f"{name}-test_top"), "__init__.py": payload(marker_dir, f"{name}-init"),
    })


def evil_catalog(pytester: pytest.Pytester, marker_dir: Path) -> Path:
    """A catalog whose files beside the skill folders are code: conftests, test modules, a test package."""
    catalog = pytester.path / "catalog"
    evil_skill(catalog, "evil-skill", marker_dir)
    evil_skill(catalog / "group", "other-skill", marker_dir)
    for rel, name in (("conftest.py", "catalog-conftest"), ("test_catalog.py", "catalog-test_catalog"),
                      ("tests/conftest.py", "catalog-tests-conftest"), ("tests/test_t.py", "catalog-tests-test_t"),
                      ("group/conftest.py", "group-conftest"), ("group/test_group.py", "group-test_group"),
                      ("testing/__init__.py", "testing-init"), ("testing/test_pkg.py", "testing-test_pkg")):
        path = catalog / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(payload(marker_dir, name) + "def test_attacker():\n    pass\n")
    return catalog


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


def test_a_positional_skill_path_never_imports_its_conftests(pytester: pytest.Pytester, marker_dir: Path) -> None:
    """``pytest ./skills/evil``: pytest loads the initial conftests of every path argument, before collection."""
    evil_skill(pytester.path / "skills", "evil-skill", marker_dir)
    result = pytester.runpytest_subprocess("skills/evil-skill", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=3)


def test_a_positional_catalog_never_imports_or_collects_its_code(pytester: pytest.Pytester, marker_dir: Path) -> None:
    evil_catalog(pytester, marker_dir)
    result = pytester.runpytest_subprocess("catalog", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=6)


@pytest.mark.parametrize("how", ["positional", "positional-inside", "--skills"])
def test_a_skill_reached_through_a_symbolic_link_is_refused_and_never_imported(pytester: pytest.Pytester, marker_dir: Path,
                                                                               tmp_path: Path, how: str) -> None:
    """Links are not followed into skills (docs/security.md); a path that reaches one only through a link is a usage
    error that says so, not an ordinary pytest path (whose conftests pytest would import) nor 'no SKILL.md under'."""
    elsewhere = tmp_path / "elsewhere"
    evil_skill(elsewhere / "catalog", "evil-skill", marker_dir)
    target = elsewhere / "catalog" / "evil-skill"
    (pytester.path / "link").symlink_to(target, target_is_directory=True)
    arg = "link/tests" if how == "positional-inside" else "link"
    args = ["--skills", arg] if how.startswith("--skills") else [arg]
    result = pytester.runpytest_subprocess(*args, BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert "symbolic link" in err and "not followed" in err and "docs/security.md" in err and str(target) in err, err
    assert "no SKILL.md under" not in err


def test_a_linked_skill_inside_a_catalog_is_not_followed_and_the_run_says_so(pytester: pytest.Pytester, marker_dir: Path,
                                                                             tmp_path: Path) -> None:
    evil_skill(tmp_path / "elsewhere", "evil-skill", marker_dir)
    write_skill(pytester.path / "catalog", "good-skill", {"SKILL.md": manifest("good-skill")})
    (pytester.path / "catalog" / "linked-skill").symlink_to(tmp_path / "elsewhere" / "evil-skill", target_is_directory=True)
    (pytester.path / "catalog" / "linked-other").symlink_to(tmp_path, target_is_directory=True)  # no skill there: nothing to say
    for args in ([], ["-n", "2"]):
        result = pytester.runpytest_subprocess("--skills", "catalog", BASIC, "-p", "no:cacheprovider", *args)
        assert markers(marker_dir) == []
        result.assert_outcomes(passed=3, warnings=1)  # good-skill only
        out = result.stdout.str()
        assert (f"catalog/linked-skill is a symbolic link to the skill folder {tmp_path / 'elsewhere' / 'evil-skill'}: "
                "not evaluated (links are not followed into skills, docs/security.md)") in " ".join(out.split()), out
        assert "linked-other" not in out


def test_a_path_inside_a_skill_is_never_imported(pytester: pytest.Pytester, marker_dir: Path) -> None:
    evil_skill(pytester.path / "skills", "evil-skill", marker_dir)
    for arg in ("skills/evil-skill/tests", "skills/evil-skill/tests/test_x.py"):
        result = pytester.runpytest_subprocess(arg, BASIC, "-p", "no:cacheprovider")
        assert markers(marker_dir) == [], arg
        result.assert_outcomes(passed=3)  # the enclosing skill is evaluated


def test_skills_root_is_collected_only_by_the_plugin(pytester: pytest.Pytester, marker_dir: Path) -> None:
    """``pytest --skills catalog``: files beside the skill folders are neither imported nor collected."""
    evil_catalog(pytester, marker_dir)
    collected = pytester.runpytest_subprocess("--skills", "catalog", BASIC, "-p", "no:cacheprovider", "--collect-only", "-q")
    assert markers(marker_dir) == []
    ids = [ln for ln in collected.outlines if "::" in ln]
    assert ids and all("::tier1::" in ln for ln in ids), ids
    result = pytester.runpytest_subprocess("--skills", "catalog", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=6)


def test_skills_ini_root_and_nested_root_are_collected_only_by_the_plugin(pytester: pytest.Pytester, marker_dir: Path) -> None:
    evil_catalog(pytester, marker_dir)
    pytester.makeini("[pytest]\nskilleval_paths = catalog\n")
    result = pytester.runpytest_subprocess(BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=6)
    result = pytester.runpytest_subprocess("--skills", "catalog/group", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=6)  # the ini root and the nested root: the same skills, collected once


def test_project_tests_beside_a_skills_option_still_run(pytester: pytest.Pytester, marker_dir: Path) -> None:
    """The user's own test paths keep pytest's normal collection; only the skill trees are taken over."""
    evil_catalog(pytester, marker_dir)
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = pytester.runpytest_subprocess("test_mine.py", "--skills", "catalog", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=7)


def test_folders_on_the_way_to_a_skills_root_are_not_imported(pytester: pytest.Pytester, marker_dir: Path) -> None:
    """``--skills catalog/group``: the catalog's own conftest.py, above the named root, is not the project's either."""
    evil_catalog(pytester, marker_dir)
    result = pytester.runpytest_subprocess("--skills", "catalog/group", BASIC, "-p", "no:cacheprovider")
    assert markers(marker_dir) == []
    result.assert_outcomes(passed=3)


def test_pytest_started_inside_a_skill_imports_none_of_it(pytester: pytest.Pytester, marker_dir: Path) -> None:
    skill = evil_skill(pytester.path / "skills", "evil-skill", marker_dir)
    for args in ([], ["."]):
        done = subprocess.run([sys.executable, "-m", "pytest", BASIC, "-p", "no:cacheprovider", *args], cwd=skill,
                              capture_output=True, text=True, timeout=600)
        assert markers(marker_dir) == [], args
        assert "3 passed" in done.stdout, done.stdout  # the skill pytest stands in is evaluated, nothing of it imported


def test_a_skill_md_that_is_no_regular_file_is_collected_and_fails_files(pytester: pytest.Pytester) -> None:
    """A FIFO, a device or a folder named SKILL.md: the skill is collected (never opened) and ``files`` says why."""
    skills = pytester.path / "skills"
    (skills / "dir-skill" / "SKILL.md").mkdir(parents=True)
    (skills / "fifo-skill").mkdir()
    os.mkfifo(skills / "fifo-skill" / "SKILL.md")
    expected = {"dir-skill": "is a folder, not a file", "fifo-skill": "FIFO inside the skill"}
    if os.geteuid() == 0:  # creating a device node needs root
        (skills / "dev-skill").mkdir()
        os.mknod(skills / "dev-skill" / "SKILL.md", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        expected["dev-skill"] = "device inside the skill"
    write_skill(skills, "good-skill", {"SKILL.md": manifest("good-skill")})
    result = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-checks=files", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=len(expected))
    for name, reason in expected.items():
        result.stdout.fnmatch_lines([f"*{name}::tier1::files*", f"*SKILL.md*{reason}*"])
