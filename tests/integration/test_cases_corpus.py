"""Every eval file of the NVIDIA catalog in ../shared/corpus loads, or gives a clear located problem.

The counts below were computed once from the corpus (NVIDIA/skills @ 20bb6aa) and pinned: a
change in how any shape is read shows up here as a changed number, not as silence.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest
from conftest import CORPUS, manifest, require, run_check, write_skill

from pytest_skilleval.gate import Policy, decide
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.evals import EvalsCheck
from pytest_skilleval.tier3.cases import CaseSet, EvalFile, Problem, load_cases, load_file

pytest_plugins = ["pytester"]
NVIDIA = CORPUS / "nvidia-skills"


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    require(NVIDIA.is_dir(), f"corpus not found at {NVIDIA}")

# (eval folder, primary or extra file, shape) -> files
SHAPES = {
    ("evals", "primary", "list"): 247,
    ("evals", "primary", "agentskills"): 83,
    ("evals", "primary", "skill-cases"): 6,
    ("evals", "primary", "single"): 1,
    ("evals", "extra", "expects"): 30,  # deployment scenarios: deploy.json, routing.json, ...
    ("evals", "extra", "list"): 4,  # extended-evals.json x3, evals-full.json
    ("evals", "extra", "agentskills"): 1,  # evals-full.json
    ("evals", "extra", "single"): 1,  # dicom-metadata-extract/evals/baseline.yaml (task + typed assertions)
    ("eval", "extra", "expects"): 6,  # rag-*/eval/{h100,nvidia_hosted}.json
    ("benchmark", "primary", "list"): 2,  # cuopt-*/benchmark/evals.json, read with load_file
}
CASES = {"cases": 1335, "positive": 1077, "negative": 258, "unlabelled": 0, "invalid": 61}
ASSERTION_KINDS = {"judge": 5751, "regex": 43, "not_regex": 23, "contains": 16, "not_contains": 2, "json_path": 5,
                   "trajectory_contains": 2, "command": 2}
#: Missing files are code fixtures the corpus left out; 7 tilegym cases still name their skill's pre-rename name.
PROBLEMS = {("file-missing", "HIGH"): 103, ("empty", "MEDIUM"): 5, ("stale-skill-name", "LOW"): 7}


@pytest.fixture(scope="module")
def corpus() -> dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]:
    """Per skill: its case set, plus files and problems of ``benchmark/*.json`` read one by one."""
    out = {}
    for folder in sorted(p for p in NVIDIA.iterdir() if p.is_dir()):
        skill = Skill(root=folder, key=folder.name)
        files: list[EvalFile] = []
        problems: list[Problem] = []
        for extra in sorted((folder / "benchmark").glob("*.json")):
            eval_file, _, file_problems = load_file(skill, f"benchmark/{extra.name}")
            files.append(eval_file)
            problems.extend(file_problems)
        out[folder.name] = (load_cases(skill), files, problems)
    return out


def test_every_evals_json_is_found_and_read(corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    on_disk = sorted(str(p.relative_to(NVIDIA)) for p in NVIDIA.glob("*/evals/evals.json"))
    read = sorted(f"{name}/{f.path}" for name, (case_set, _, _) in corpus.items() for f in case_set.files if f.path == "evals/evals.json")
    assert len(on_disk) == 337 and read == on_disk


def test_counts_by_shape(corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    counts: collections.Counter[tuple[str, str, str | None]] = collections.Counter()
    for case_set, extra_files, _ in corpus.values():
        for f in [*case_set.files, *extra_files]:
            counts[(f.path.split("/")[0], "primary" if f.primary else "extra", f.shape)] += 1
    assert dict(counts) == SHAPES


def test_case_and_assertion_counts(corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    totals: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    for case_set, _, _ in corpus.values():
        totals.update(case_set.counts())
        kinds.update(a.type for case in case_set for a in case.assertions)
    assert dict(totals) == CASES
    assert dict(kinds) == ASSERTION_KINDS


def test_every_problem_is_located_and_the_only_failures_are_files_the_corpus_omitted(
        corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    omitted = {line.split("\t", 1)[0] for line in (NVIDIA / "_omitted.tsv").read_text(encoding="utf-8").splitlines()[1:]}
    rules: collections.Counter[tuple[str, str]] = collections.Counter()
    for name, (case_set, _, extra_problems) in corpus.items():
        for problem in [*case_set.problems, *extra_problems]:
            rules[(problem.rule, problem.severity.value)] += 1
            assert problem.file and problem.line, problem
            if problem.severity.at_least(Severity.HIGH):
                # Code fixtures under evals/files/ were left out of the corpus (MANIFEST.md): the
                # reference is fine upstream, and the finding names the file it could not find.
                assert problem.rule == "file-missing" and problem.case and problem.field == "files"
                looked_for = re.search(r"looked for (\S+)\)$", problem.message)
                assert looked_for and f"{name}/{looked_for.group(1)}" in omitted, problem
    assert dict(rules) == PROBLEMS


def test_ids_are_unique_per_skill_and_sources_point_into_the_files(
        corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    for name, (case_set, _, _) in corpus.items():
        ids = [c.id for c in case_set]
        assert len(ids) == len(set(ids)), name
        for case in case_set:
            lines = (NVIDIA / name / case.source.file).read_text(encoding="utf-8").splitlines()
            assert case.source.line is not None and 1 <= case.source.line <= len(lines)


def test_known_cases_normalise_as_expected(corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    router = corpus["dynamo-router-starter"][0].get("neg-deploy-recipe")
    assert router is not None and router.negative and router.expected_skill == "dynamo-recipe-runner"  # routes to a sibling
    asr = corpus["digital-health-clinical-asr-build"][0].get("digital-health-clinical-asr-build-neg-001")
    assert asr is not None and asr.negative and asr.acceptable_skills == ("riva-tts", "riva-asr")
    smoke = corpus["aiq-research"][0].get("basic-product.case-1")
    assert smoke is not None and [a.type for a in smoke.assertions] == ["trajectory_contains", "command"] and "env" in smoke.environment
    tilegym = corpus["tilegym-cutile-python"][0].cases[0]
    # The case says "cutile-python", the skill's name before the "tilegym-" prefix: this skill, not a sibling.
    assert tilegym.expected_skill == "tilegym-cutile-python" and not tilegym.negative


def test_the_evals_check_over_the_corpus(corpus: dict[str, tuple[CaseSet, list[EvalFile], list[Problem]]]) -> None:
    check, outcomes = EvalsCheck(), collections.Counter()
    for name in corpus:
        result = run_check(check, Skill(root=NVIDIA / name, key=name))
        outcomes[decide(result, blocking=True, policy=Policy()).status] += 1
        assert result.metrics["dataset_digest"].startswith("sha256:")
    assert outcomes == {Status.PASSED: 335, Status.FAILED: 5}
    anthropic = CORPUS / "anthropic-skills" / "skill-creator"
    result = run_check(check, Skill(root=anthropic, key="skill-creator"))
    assert result.status is Status.PASSED and result.metrics["cases"] == 0 and result.metrics["tier3"].startswith("not evaluable")


def test_a_malformed_eval_file_is_one_failing_tier1_item_not_a_collection_error(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills", "broken-skill", {"SKILL.md": manifest("broken-skill"), "evals/evals.json": '[{"id": "x",}]'})
    write_skill(pytester.path / "skills", "fine-skill", {"SKILL.md": manifest("fine-skill"),
                                                        "evals/evals.json": '[{"id": "x", "question": "Q"}]'})
    result = pytester.runpytest("--skills", "skills", "-m", "tier1", "--skilleval-checks=evals", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED skills/broken-skill::tier1::evals*"])
    result.stdout.fnmatch_lines(["*evals/evals.json:1 invalid JSON*"])


def test_loading_the_whole_catalog_is_quick(tmp_path: Path) -> None:
    import time

    start = time.perf_counter()
    for folder in sorted(p for p in NVIDIA.iterdir() if p.is_dir()):
        load_cases(Skill(root=folder, key=folder.name))
    assert time.perf_counter() - start < 15  # about 0.5 s on the project machine; generous for CI
