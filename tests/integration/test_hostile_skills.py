"""One hostile skill never costs another skill its result, and no report is lost (issue 11, items 4–8).

Each test puts a minimal reproducer beside a good skill that has Python and shell scripts, so it
shares every scanner batch (lint, secrets, security) with the culprit, runs the real plugin with
the real scanners in a subprocess, and asserts three things: the good skill keeps every result it
has alone, every item of the culprit has a status and a finding (not a raw traceback), and the
run's reports are written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, manifest, write_skill

pytest_plugins = ["pytester"]
#: Tier 1 checks that read files or share a scanner batch; Tier 2 is left out for speed.
CHECKS = "--skilleval-checks=files,schema,evals,lint,secrets,security,unicode,instructions"
GOOD = "good-skill"


def _good_skill(base: Path) -> None:
    root = base / "skills" / GOOD
    shutil.copytree(REPO / "example_skills" / "semver-bump", root)
    (root / "SKILL.md").write_text((root / "SKILL.md").read_text().replace("name: semver-bump", f"name: {GOOD}"))
    (root / "scripts" / "run.sh").write_text('#!/bin/sh\nset -eu\necho "bumping $1"\n')


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess("--skills=skills", CHECKS, "--skilleval-report-dir=rep", "-p", "no:cacheprovider",
                                           "--skilleval-cache-dir=", "-rA", *args)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback (most recent call last)" not in text, text[-3000:]
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-3000:]
    data = json.loads((pytester.path / "rep" / "results.json").read_text("utf-8"))
    return result, data


def _statuses(data: dict, key: str) -> dict[str, str]:
    skill = next(s for s in data["skills"] if s["key"] == key)
    return {c["result"]["check"]: c["result"]["status"] for c in skill["checks"]}


def _rules(data: dict, key: str, check: str) -> set[str]:
    skill = next(s for s in data["skills"] if s["key"] == key)
    return {f["rule"] for c in skill["checks"] if c["result"]["check"] == check for f in c["result"]["findings"]}


def _assert_good_skill_intact(data: dict) -> None:
    statuses = _statuses(data, GOOD)
    assert statuses == dict.fromkeys(statuses, "PASSED") and len(statuses) == 8, statuses


@pytest.fixture
def catalog(pytester: pytest.Pytester) -> Path:
    _good_skill(pytester.path)
    return pytester.path / "skills"


def test_self_referencing_yaml_alias_in_frontmatter(pytester: pytest.Pytester, catalog: Path) -> None:
    """Item 4: ``name: &a [*a]`` recursed in the node counter outside the protected parse."""
    write_skill(catalog, "alias-skill", {"SKILL.md": "---\nname: &a [*a]\ndescription: x\n---\n# Alias\n",
                                         "scripts/x.py": "print(1)\n", "scripts/x.sh": "#!/bin/sh\necho 1\n"})
    _, data = _run(pytester, "-n", "0")
    _assert_good_skill_intact(data)
    statuses = _statuses(data, "alias-skill")
    assert len(statuses) == 8 and "ERROR" not in statuses.values(), statuses
    assert statuses["schema"] == "FAILED" and "frontmatter.recursive" in _rules(data, "alias-skill", "schema")


def test_file_name_that_is_not_utf8(pytester: pytest.Pytester, catalog: Path) -> None:
    """Item 6: ``references/a\\xff\\xfe.md`` crashed ``files`` (the content digest), then lint/secrets for the batch."""
    root = write_skill(catalog, "bad-name-skill", {"SKILL.md": manifest("bad-name-skill"), "scripts/x.py": "print(1)\n"})
    (root / "references").mkdir()
    (root / "references").joinpath(os.fsdecode(b"a\xff\xfe.md")).write_text("hello\n")
    _, data = _run(pytester, "-n", "0")
    _assert_good_skill_intact(data)
    statuses = _statuses(data, "bad-name-skill")
    assert len(statuses) == 8 and "ERROR" not in statuses.values() and "INCOMPLETE" not in statuses.values(), statuses
    assert statuses["files"] == "FAILED" and "files.bad-name" in _rules(data, "bad-name-skill", "files")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_skill_folders_whose_names_are_not_utf8(pytester: pytest.Pytester, catalog: Path, workers: str) -> None:
    """A skill folder named ``victim-\\xff`` (and a skill inside a folder named ``group-\\xfe``): under xdist the
    worker's node ids held a surrogate, execnet refused to send them and the run ended in INTERNALERROR, exit 3,
    no report at all. Their node ids and keys are written escaped; the paths still load the skills."""
    base = os.fsencode(catalog)
    for folder in (b"victim-\xff", b"group-\xfe/nested-skill"):
        os.makedirs(os.path.join(base, folder))
        with open(os.path.join(base, folder, b"SKILL.md"), "w") as fh:
            fh.write(manifest("victim-skill" if folder.startswith(b"victim") else "nested-skill"))
    result, data = _run(pytester, "-n", workers)
    _assert_good_skill_intact(data)
    text = result.stdout.str()
    for key in ("victim-\\udcff", "group-\\udcfe/nested-skill"):
        statuses = _statuses(data, key)
        assert len(statuses) == 8 and "ERROR" not in statuses.values() and "INCOMPLETE" not in statuses.values(), statuses
        assert f"skills/{key}::tier1::files" in text, text[-3000:]  # -rA names every item of it, escaped
    assert _statuses(data, "victim-\\udcff")["schema"] == "FAILED"  # its name is not its folder's
    assert _statuses(data, "group-\\udcfe/nested-skill")["schema"] == "PASSED"
    assert (pytester.path / "rep" / "results.json").read_bytes().decode("utf-8")
    assert (pytester.path / "rep" / GOOD / "BENCHMARK.md").read_text("utf-8")


#: Folder name bytes -> the skill's name in its manifest: a folder literally named ``\udcff`` (six ASCII characters)
#: beside one named by the undecodable byte 0xff, at the top and under an undecodable parent folder.
LOOKALIKES = {b"\\udcff": "backslash-skill", b"\xff": "byte-skill",
              b"group-\xfe/\\udcff": "nested-backslash", b"group-\xfe/\xff": "nested-byte"}
#: Their keys (and node id paths below skills/), as results.json writes them: a backslash doubled, a surrogate escaped.
LOOKALIKE_KEYS = {"\\\\udcff": "backslash-skill", "\\udcff": "byte-skill",
                  "group-\\udcfe/\\\\udcff": "nested-backslash", "group-\\udcfe/\\udcff": "nested-byte"}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_folder_named_like_an_escape_and_the_undecodable_one_are_two_skills(pytester: pytest.Pytester, catalog: Path,
                                                                              workers: str) -> None:
    """A surrogate was written as the text ``\\udcff`` in keys and node ids, so a folder literally named ``\\udcff``
    and the folder named by the byte 0xff had one skill key (one skill's results lost from results.json and the
    cards) and, under an undecodable parent, one node id. Each is its own skill, with its own results and card."""
    base = os.fsencode(catalog)
    for folder, name in LOOKALIKES.items():
        os.makedirs(os.path.join(base, folder))
        with open(os.path.join(base, folder, b"SKILL.md"), "w") as fh:
            fh.write(manifest(name))
    result, data = _run(pytester, "-n", workers)
    _assert_good_skill_intact(data)
    assert sorted(s["key"] for s in data["skills"]) == sorted([GOOD, *LOOKALIKE_KEYS]), [s["key"] for s in data["skills"]]
    passed = {line.split()[1] for line in result.stdout.lines if line.startswith("PASSED skills/")}  # -rA: one line an item
    for key, name in LOOKALIKE_KEYS.items():
        skill = next(s for s in data["skills"] if s["key"] == key)
        assert skill["name"] == name, (key, skill["name"])
        statuses = _statuses(data, key)
        assert len(statuses) == 8 and "ERROR" not in statuses.values() and "INCOMPLETE" not in statuses.values(), statuses
        assert f"skills/{key}::tier1::files" in passed, sorted(passed)
        card = (pytester.path / "rep" / key / "BENCHMARK.md").read_text("utf-8")  # its card folder is its key
        assert f"- Skill: `{name}`" in card and f"- Path: `{key}`" in card, card[:500]
    assert len([p for p in passed if p.endswith("::tier1::files")]) == 5, sorted(passed)  # five skills, five node ids


@pytest.mark.parametrize("how", ["--skills", "argument"])
def test_a_skill_tree_path_that_is_not_utf8_under_xdist(pytester: pytest.Pytester, how: str) -> None:
    """The path of a tree named ``skills-\\xff`` given on the command line: xdist sends the command line to each
    worker, execnet refused the surrogate in it and the run ended at worker start in INTERNALERROR, exit 3. At
    -n 2 it ends at once with a usage error naming the path, escaped; at -n 0 the skill is evaluated, and at -n 2
    too when the path comes in PYTEST_ADDOPTS (xdist does not send the environment: each worker reads it)."""
    tree = os.path.join(os.fsencode(pytester.path), b"skills-\xff")
    os.makedirs(os.path.join(tree, b"one-skill"))
    with open(os.path.join(tree, b"one-skill", b"SKILL.md"), "w") as fh:
        fh.write(manifest("one-skill"))
    named = ["--skills", os.fsdecode(tree)] if how == "--skills" else [os.fsdecode(tree)]
    common = [*named, CHECKS, "--skilleval-report-dir=rep", "-p", "no:cacheprovider", "--skilleval-cache-dir="]
    result = pytester.runpytest_subprocess(*common, "-n", "2")
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-3000:]
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-3000:]
    assert "skills-\\udcff" in result.stderr.str() and "-n 0" in result.stderr.str(), text[-3000:]
    assert "created:" not in text  # no worker was started, nor shown as one
    assert not (pytester.path / "rep").exists()
    # without xdist loaded at all too: the plugin's xdist hook is optional, not an unknown hook
    result = pytester.runpytest_subprocess(*common, *(["-n", "0"] if how == "--skills" else ["-p", "no:xdist"]))
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    data = json.loads((pytester.path / "rep" / "results.json").read_text("utf-8"))
    assert [s["name"] for s in data["skills"]] == ["one-skill"] and len(data["skills"][0]["checks"]) == 8
    if how == "--skills":  # the other way out the message names: PYTEST_ADDOPTS is not sent, each worker reads it
        shutil.rmtree(pytester.path / "rep")
        with pytest.MonkeyPatch.context() as env:
            env.setenv("PYTEST_ADDOPTS", f"--skills={os.fsdecode(tree)}")
            result = pytester.runpytest_subprocess(*common[2:], "-n", "2", "-rA")
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
        data = json.loads((pytester.path / "rep" / "results.json").read_text("utf-8"))
        assert [s["name"] for s in data["skills"]] == ["one-skill"] and len(data["skills"][0]["checks"]) == 8


LONE_SURROGATES = ('{"skill_name": "\\ud800", "evals": [{"id": "one", "prompt": "do \\ud800 it", "expected_output": "x",'
                   ' "files": ["\\ud800.csv"], "assertions": ["has \\udc00"]}]}')


@pytest.mark.parametrize("workers", ["0", "2"])
def test_lone_surrogates_in_an_eval_file(pytester: pytest.Pytester, catalog: Path, workers: str) -> None:
    """Item 7: a lone surrogate lost every report (xdist could not ship it; the atomic writer raised)."""
    write_skill(catalog, "surrogate-skill", {"SKILL.md": manifest("surrogate-skill"), "evals/evals.json": LONE_SURROGATES})
    _, data = _run(pytester, "-n", workers)
    _assert_good_skill_intact(data)
    statuses = _statuses(data, "surrogate-skill")
    assert len(statuses) == 8 and "ERROR" not in statuses.values(), statuses
    assert statuses["evals"] == "FAILED" and "evals.surrogate" in _rules(data, "surrogate-skill", "evals")
    assert (pytester.path / "rep" / "surrogate-skill" / "BENCHMARK.md").read_text("utf-8")


def test_scanner_blow_ups_are_isolated_to_the_culprit(pytester: pytest.Pytester, catalog: Path) -> None:
    """Item 5: ruff died of a stack overflow and shellcheck went past 4 GB on one skill's script, and
    ``lint`` was INCOMPLETE for every skill of the batch; INCOMPLETE of an advisory check failed the run."""
    write_skill(catalog, "deep-python-skill", {"SKILL.md": manifest("deep-python-skill"),
                                               "scripts/deep.py": "x = " + "[" * 20_000 + "]" * 20_000 + "\n"})
    write_skill(catalog, "nested-shell-skill", {"SKILL.md": manifest("nested-shell-skill"),
                                                "scripts/deep.sh": "#!/bin/sh\n" + "(" * 5000 + "true" + ")" * 5000 + "\n"})
    result, data = _run(pytester, "-n", "0")
    _assert_good_skill_intact(data)
    for culprit, tool in (("deep-python-skill", "ruff"), ("nested-shell-skill", "shellcheck")):
        skill = next(s for s in data["skills"] if s["key"] == culprit)
        lint = next(c["result"] for c in skill["checks"] if c["result"]["check"] == "lint")
        assert lint["status"] == "INCOMPLETE" and lint["reason"].startswith(f"{tool}: crashed"), lint
        assert tool != "shellcheck" or "out of memory" in lint["reason"] or "limit" in lint["reason"], lint
    # lint is advisory: its INCOMPLETE is reported and fails nothing (every other item of the run passes)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*passed, 2 advisory*"])
    assert {s["key"]: s["verdict"] for s in data["skills"]}["nested-shell-skill"] == "PASS"


HELD_PROBE = '''
import json, os
import pytest
from pytest_skilleval import state

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    run = item.config.stash[state.RUN_STATE]
    with open(os.path.join(str(item.config.rootpath), "held.jsonl"), "a") as fh:
        fh.write(json.dumps([item.nodeid, len(run.loaded())]) + "\\n")
'''


def _big_table(rows: int = 5000, cols: int = 50) -> str:
    line = "|" + "|".join("x" for _ in range(cols)) + "|\n"
    return "| " + " | ".join(f"c{i}" for i in range(cols)) + " |\n|" + "---|" * cols + "\n" + line * rows


def test_a_huge_table_is_bounded_and_skills_are_released(pytester: pytest.Pytester, catalog: Path) -> None:
    """Item 8: a 520 KB SKILL.md holding a 5,000 × 50 table took 10.6 s and 398 MB alone, and every skill
    kept its parsed Markdown for the whole session. Each item records how many skills its process holds."""
    write_skill(catalog, "big-table-skill", {"SKILL.md": manifest("big-table-skill", body="# Big\n\n" + _big_table())})
    for n in range(3):
        write_skill(catalog, f"plain-{n}-skill", {"SKILL.md": manifest(f"plain-{n}-skill")})
    pytester.makeconftest(HELD_PROBE)
    _, data = _run(pytester, "-n", "0")
    _assert_good_skill_intact(data)
    statuses = _statuses(data, "big-table-skill")
    assert len(statuses) == 8 and set(statuses.values()) <= {"PASSED", "FAILED"}, statuses
    held = [json.loads(line) for line in (pytester.path / "held.jsonl").read_text().splitlines()]
    # at most the skill in flight is held, and none once its last item has run
    assert len(held) == 5 * 8 and max(n for _, n in held) <= 1, held
    last = {nodeid.split("::")[0]: n for nodeid, n in held}
    assert set(last.values()) == {0}, last


def test_a_huge_table_is_parsed_in_bounded_memory(tmp_path: Path) -> None:
    import time
    import tracemalloc

    from pytest_skilleval.skill import Skill

    root = write_skill(tmp_path, "big-table-skill", {"SKILL.md": manifest("big-table-skill", body="# Big\n\n" + _big_table())})
    tracemalloc.start()
    started = time.perf_counter()
    try:
        skill = Skill(root=root, key="big-table-skill")
        assert skill.headings() == [(1, "Big", 5)] and skill.links() == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 60 * 2**20, f"{peak / 2**20:.0f} MB"
    assert time.perf_counter() - started < 60


def test_a_collection_error_beside_skills_is_reported_plainly(pytester: pytest.Pytester) -> None:
    """The ADVISORY status hook read ``user_properties`` of a CollectReport, which has none."""
    pytester.makepyfile(test_broken="import module_that_does_not_exist\n")
    result = pytester.runpytest("test_broken.py", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "AttributeError" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*ModuleNotFoundError*module_that_does_not_exist*"])


def test_markdown_work_is_bounded_per_document(tmp_path: Path) -> None:
    """Item 8, beyond tables: half a megabyte of ``*a`` (one paragraph) cost 180 MB and 81 s on a loaded machine."""
    import tracemalloc

    from pytest_skilleval.skill import MAX_MARKDOWN_CHARS, Skill

    root = write_skill(tmp_path, "stars-skill", {"SKILL.md": manifest("stars-skill", body="# Stars\n\n" + "*a " * 250_000 + "\n")})
    tracemalloc.start()
    try:
        skill = Skill(root=root, key="stars-skill")
        assert skill.headings() == [(1, "Stars", 5)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 120 * 2**20, f"{peak / 2**20:.0f} MB"
    assert [f.rule for f in skill.load_findings] == ["schema.body-too-long"]
    assert str(MAX_MARKDOWN_CHARS) in skill.load_findings[0].message


def test_tier2_similarity_does_not_keep_every_skill_loaded(pytester: pytest.Pytester) -> None:
    """Item 8: the similarity index loaded every collected skill into the run state, where each stayed
    for the whole session (one worker reached 1 GB on a 5,000-skill catalog before this)."""
    for n in range(6):
        write_skill(pytester.path / "skills", f"plain-{n}-skill", {"SKILL.md": manifest(f"plain-{n}-skill", body=f"# Plain {n}\n\nStep {n}.\n")})
    pytester.makeconftest(HELD_PROBE)
    result = pytester.runpytest_subprocess("--skills=skills", "--skilleval-checks=similarity", "-p", "no:cacheprovider",
                                           "--skilleval-cache-dir=", "--skilleval-report-dir=")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    held = [json.loads(line) for line in (pytester.path / "held.jsonl").read_text().splitlines()]
    assert len(held) == 6 and max(n for _, n in held) <= 1, held
