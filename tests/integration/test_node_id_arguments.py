"""A skill item's node id as a path argument selects that item, as pytest's own failure lines invite
(``pytest skills/alpha-skill::tier1::schema``). pytest 9 refuses ``::`` parts on a directory argument, and a
skill is a folder: the plugin takes the parts off and keeps the items they name."""

from __future__ import annotations

import pytest
from conftest import manifest, write_skill

pytest_plugins = ["pytester"]

CHECKS = "--skilleval-checks=schema,files,version"


@pytest.fixture
def skills(pytester: pytest.Pytester) -> None:
    for name in ("alpha-skill", "beta-skill"):
        write_skill(pytester.path / "skills", name, {"SKILL.md": manifest(name)})


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_check_items_node_id_selects_that_item(pytester: pytest.Pytester, skills: None, workers: str) -> None:
    result = pytester.runpytest("skills/alpha-skill::tier1::schema", CHECKS, "-n", workers, "-p", "no:cacheprovider",
                                "--skilleval-report-dir=", "-v")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.re_match_lines([r".*(skills/alpha-skill::tier1::schema PASSED|PASSED skills/alpha-skill::tier1::schema)"])
    result.assert_outcomes(passed=1)


def test_node_ids_of_several_items_and_a_whole_tier_select_their_union(pytester: pytest.Pytester, skills: None) -> None:
    result = pytester.runpytest("skills/alpha-skill::tier1::schema", "skills/alpha-skill::tier1::version",
                                "skills/beta-skill::tier1", CHECKS, "-p", "no:cacheprovider", "--skilleval-report-dir=", "-v")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    out = result.stdout.str()
    assert "alpha-skill::tier1::schema PASSED" in out and "alpha-skill::tier1::version PASSED" in out
    assert "alpha-skill::tier1::files" not in out
    result.assert_outcomes(passed=5)  # alpha: 2, beta: all 3 of tier1


def test_the_same_skill_named_whole_and_by_an_item_runs_whole(pytester: pytest.Pytester, skills: None) -> None:
    result = pytester.runpytest("skills/alpha-skill::tier1::schema", "skills/alpha-skill", CHECKS, "-p", "no:cacheprovider",
                                "--skilleval-report-dir=")
    result.assert_outcomes(passed=3)


def test_a_node_id_that_names_no_item_is_an_error(pytester: pytest.Pytester, skills: None) -> None:
    result = pytester.runpytest("skills/alpha-skill::tier1::nope", CHECKS, "-p", "no:cacheprovider", "--skilleval-report-dir=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "skills/alpha-skill::tier1::nope" in result.stderr.str() + result.stdout.str()


def test_the_ini_skill_paths_are_what_runs_when_no_path_is_named(pytester: pytest.Pytester, skills: None) -> None:
    """``skilleval_paths`` in the ini file is like pytest's ``testpaths``: what runs when no path argument is given.
    Naming one skill, or one of its items, runs that alone, not the whole catalog beside it."""
    pytester.makeini("[pytest]\nskilleval_paths = skills\n")
    everything = pytester.runpytest(CHECKS, "-p", "no:cacheprovider", "--skilleval-report-dir=")
    everything.assert_outcomes(passed=6)
    one_skill = pytester.runpytest("skills/beta-skill", CHECKS, "-p", "no:cacheprovider", "--skilleval-report-dir=")
    one_skill.assert_outcomes(passed=3)
    one_item = pytester.runpytest("skills/alpha-skill::tier1::schema", CHECKS, "-p", "no:cacheprovider", "--skilleval-report-dir=")
    one_item.assert_outcomes(passed=1)
    with_option = pytester.runpytest("skills/alpha-skill::tier1::schema", "--skills=skills/beta-skill", CHECKS, "-p", "no:cacheprovider",
                                     "--skilleval-report-dir=")
    with_option.assert_outcomes(passed=4)  # a --skills option on the command line adds to the path arguments
