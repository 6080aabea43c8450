"""Eval cases: every accepted shape, the normalisation rules, and a located problem for each malformation."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest, run_check

from pytest_skilleval.gate import Policy, decide
from pytest_skilleval.gateway.protocols.base import NeutralRequest
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import evals as evals_module
from pytest_skilleval.tier1.evals import EvalsCheck
from pytest_skilleval.tier3 import cases as cases_module
from pytest_skilleval.tier3.case_formats import model
from pytest_skilleval.tier3.cases import CaseSet, Label, Problem, load_cases

MakeSkill = Callable[..., Skill]
SKILL = "demo-skill"


def load(make_skill: MakeSkill, files: dict[str, str | bytes], name: str = SKILL) -> CaseSet:
    return load_cases(make_skill({"SKILL.md": manifest(name), **files}, name=name))


def as_json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def only(case_set: CaseSet, rule: str) -> Problem:
    hits = [p for p in case_set.problems if p.rule == rule]
    assert len(hits) == 1, case_set.problems
    return hits[0]


def clean(case_set: CaseSet) -> None:
    assert case_set.problems == (), [p.finding().format_line() for p in case_set.problems]


# -- shapes ----------------------------------------------------------------------------------------------
AGENTSKILLS = {
    "skill_name": SKILL,
    "evals": [
        {"id": 1, "prompt": "Summarise data.csv", "expected_output": "3 rows",
         "assertions": ["mentions 3 rows", {"name": "tone", "text": "is concise"},
                        {"type": "contains_pattern", "pattern": "[0-9]+ rows", "text": "counts rows"},
                        {"type": "not_contains_pattern", "pattern": "sk-[A-Za-z0-9]{10,}", "text": "no keys"},
                        {"type": "contains_phrase", "phrase": "rows", "text": "says rows"},
                        {"type": "not_contains", "phrase": "error", "text": "no error"}]},
        {"id": "neg-1", "prompt": "Reverse a string", "expected_output": "s[::-1]", "expected_skill": None, "assertions": []},
    ],
}


def test_agentskills_shape_with_every_assertion_spelling(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json(AGENTSKILLS)})
    clean(case_set)
    first, neg = case_set.cases
    assert first.id == "1" and first.prompt == "Summarise data.csv" and first.expected_output == "3 rows"  # int id -> "1"
    kinds = [(type(a).__name__, a.text) for a in first.assertions]
    assert kinds == [("Judge", "mentions 3 rows"), ("Judge", "is concise"), ("Regex", "counts rows"), ("NotRegex", "no keys"),
                     ("Contains", "says rows"), ("NotContains", "no error")]
    assert first.assertions[1].name == "tone" and first.assertions[4].value == "rows"  # type: ignore[union-attr]
    assert first.label is Label.POSITIVE and first.expected_skill == SKILL and first.shape == "agentskills"
    assert neg.label is Label.NEGATIVE and neg.negative and neg.expected_skill is None
    assert case_set.metrics()["shapes"] == ["agentskills"]


def test_anthropic_expectations_and_skill_root_relative_files(make_skill: MakeSkill) -> None:
    data = {"skill_name": SKILL, "evals": [{"id": 1, "prompt": "Fill the form", "expected_output": "a filled PDF",
                                            "files": ["evals/files/form.txt"], "expectations": ["The output includes X", "Used script Y"]}]}
    case_set = load(make_skill, {"evals/evals.json": as_json(data), "evals/files/form.txt": "x"})
    clean(case_set)
    (case,) = case_set.cases
    assert [a.text for a in case.judge_assertions()] == ["The output includes X", "Used script Y"]
    assert case.files == ("evals/files/form.txt",)


def test_legacy_bare_list_with_routing_fields(make_skill: MakeSkill) -> None:
    data = [
        {"id": "a", "question": "Q1", "ground_truth": "G1", "expected_behavior": ["B1"], "expected_skill": SKILL,
         "expected_script": "scripts/run.py", "files": ["files/in.csv"], "must_not": ["Delete files"]},
        {"id": "b", "question": "Q2", "ground_truth": None, "expected_skill": None, "acceptable_skills": "riva-tts, riva-asr\n/other"},
        {"id": "c", "question": "Q3", "expected_skill": SKILL, "should_trigger": False},
        {"id": "d", "question": "Q4", "expected_skill": None, "should_trigger": True},
        {"id": "e", "question": "Q5", "expected_skill": "sibling-skill"},
        {"id": "f", "question": "Q6", "expected_skill": "sibling-skill", "acceptable_skills": [{"name": "sibling-skill"}]},
        {"id": "g", "question": "Q7", "expected_skill": "/demo-skill"},
    ]
    case_set = load(make_skill, {"evals/evals.json": as_json(data), "evals/files/in.csv": "a\n"})
    clean(case_set)
    a, b, c, d, e, f, g = case_set.cases
    assert (a.prompt, a.expected_output, a.expected_script, a.files) == ("Q1", "G1", "scripts/run.py", ("evals/files/in.csv",))
    assert [x.text for x in a.assertions] == ["B1", "Must not: Delete files"] and a.assertions[1].name == "must_not"
    assert b.label is Label.NEGATIVE and b.acceptable_skills == ("riva-tts", "riva-asr", "other") and b.expected_output is None
    assert c.label is Label.NEGATIVE and c.should_trigger is False  # should_trigger overrides expected_skill
    assert d.label is Label.POSITIVE
    assert e.label is Label.NEGATIVE and e.expected_skill == "sibling-skill"  # routes elsewhere: a negative for this skill
    assert f.label is Label.POSITIVE  # ... unless that skill is acceptable
    assert g.label is Label.POSITIVE and g.expected_skill == SKILL  # the slash-command spelling
    assert {x.shape for x in case_set.cases} == {"list"}
    assert case_set.counts() == {"cases": 7, "positive": 4, "negative": 3, "unlabelled": 0, "invalid": 0}


def test_skill_cases_shape(make_skill: MakeSkill) -> None:
    data = {"skill": SKILL, "version": 1, "cases": [{"id": "x", "question": "Q", "expected_behavior": ["B"]}]}
    case_set = load(make_skill, {"evals/evals.json": as_json(data)})
    clean(case_set)
    assert case_set.cases[0].shape == "skill-cases" and case_set.cases[0].expected_skill == SKILL


def test_single_case_object(make_skill: MakeSkill) -> None:
    data = {"id": "only", "question": "Q", "ground_truth": "G", "expected_skill": SKILL, "expected_behavior": ["B"]}
    case_set = load(make_skill, {"evals/evals.json": as_json(data)})
    clean(case_set)
    assert [c.id for c in case_set] == ["only"] and case_set.cases[0].shape == "single"


def test_deployment_scenarios_beside_evals_json(make_skill: MakeSkill) -> None:
    scenario = {"skills": [SKILL, "helper-skill"], "env": "needs a server on :8000", "resources": {"platforms": {"local": {}}},
                "expects": [{"query": "Check health", "checks": ["Reports healthy", "trajectory_contains:scripts/x.py health",
                                                                 "json_command:python3 scripts/x.py health"]},
                            {"query": "List agents", "checks": ["Lists them", "trajectory_not_contains:scripts/x.py restart"],
                             "_phrasing": "terse"}]}
    case_set = load(make_skill, {"evals/evals.json": as_json([{"id": "base", "question": "Q"}]),
                                 "evals/deploy-smoke.json": as_json(scenario), "evals/config.yml": "schema_version: 1\n"})
    clean(case_set)
    assert [c.id for c in case_set] == ["base", "deploy-smoke.case-1", "deploy-smoke.case-2"]
    first = case_set.cases[1]
    assert first.shape == "expects" and first.prompt == "Check health" and first.label is Label.POSITIVE
    judge, trajectory, command = first.assertions
    assert isinstance(trajectory, model.TrajectoryContains) and trajectory.value == "scripts/x.py health"
    assert isinstance(command, model.Command) and command.json_output and command.run == "python3 scripts/x.py health"
    assert first.environment == {"env": "needs a server on :8000", "resources": {"platforms": {"local": {}}}}
    never = case_set.cases[2].assertions[1]
    assert isinstance(never, model.TrajectoryNotContains) and never.value == "scripts/x.py restart"
    assert first.acceptable_skills == ("helper-skill",) and case_set.cases[2].extra == {"_phrasing": "terse"}
    assert case_set.metrics()["files"] == {"evals/evals.json": "list", "evals/deploy-smoke.json": "expects"}  # config.yml is not a case file


def test_extended_set_may_repeat_base_ids(make_skill: MakeSkill) -> None:
    base = [{"id": "x-1", "question": "Q"}]
    case_set = load(make_skill, {"evals/evals.json": as_json(base), "evals/evals-full.json": as_json(base + [{"id": "x-2", "question": "R"}])})
    clean(case_set)
    assert [c.id for c in case_set] == ["x-1", "evals-full.x-1", "evals-full.x-2"]


def test_scenario_yaml_with_typed_kind_params_assertions(make_skill: MakeSkill) -> None:
    text = """\
# a comment line
schema_version: "0.1.0"
scenario_id: extract-modality
skill: demo-skill
task: >
  Extract the metadata of fixtures/ct.dcm.
assertions:
  - id: modality-is-ct
    kind: json_path_value
    params: {path: modality, expected: CT}
  - id: uid-present
    kind: json_path_value
    params: {path: study.uid, expected: __truthy__}
  - id: tags
    kind: json_path_contains
    params: {path: phi_tags, expected: PatientName}
  - id: caveat
    kind: text_contains
    params: {substring: Private tags}
  - id: no-claim
    kind: text_not_contains
    params: {substring: de-identified}
"""
    case_set = load(make_skill, {"evals/evals.yaml": text})
    clean(case_set)
    (case,) = case_set.cases
    assert case.id == "extract-modality" and case.prompt.startswith("Extract the metadata") and case.shape == "single"
    equals, truthy, contains, caveat, no_claim = case.assertions
    assert isinstance(equals, model.JsonPath)
    assert (equals.op, equals.path, equals.expected, equals.name) == ("equals", "modality", "CT", "modality-is-ct")
    assert isinstance(truthy, model.JsonPath) and truthy.op == "truthy" and truthy.expected is None
    assert isinstance(contains, model.JsonPath) and contains.op == "contains"
    assert isinstance(caveat, model.Contains) and caveat.value == "Private tags"
    assert isinstance(no_claim, model.NotContains) and no_claim.line == 20
    assert case.extra["schema_version"] == "0.1.0" and case.source.line == 2


def test_jsonl_cases_and_a_bad_line(make_skill: MakeSkill) -> None:
    text = '{"id": "a", "prompt": "P1"}\n\n{"id": "b", "prompt": \n{"id": "c", "prompt": "P3"}\n'
    case_set = load(make_skill, {"evals/evals.jsonl": text})
    assert [c.id for c in case_set] == ["a", "c"] and case_set.cases[1].source.line == 4
    bad = only(case_set, "syntax")
    assert (bad.file, bad.line, bad.severity) == ("evals/evals.jsonl", 3, Severity.HIGH)
    assert case_set.files[0].shape == "jsonl"


def test_legacy_eval_dataset_location(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"eval/dataset.yml": "- id: a\n  question: Q\n"})
    clean(case_set)
    assert case_set.files[0].primary and [c.id for c in case_set] == ["a"]


# -- our additions: typed checks and scripts ---------------------------------------------------------------
def test_typed_checks_of_every_kind(make_skill: MakeSkill) -> None:
    checks = [
        {"type": "contains", "value": "1.5.0", "ignore_case": True}, {"type": "not_contains", "value": "2.0.0"},
        {"type": "regex", "pattern": "^1\\.5"}, {"type": "not_regex", "pattern": "error"},
        {"type": "file_exists", "path": "out/report.md"}, {"type": "file_contains", "path": "out/report.md", "value": "Total"},
        {"type": "file_contains", "path": "CHANGELOG.md", "pattern": "## \\[2"}, {"type": "command", "run": "test -f out.md", "exit_code": 0},
        {"type": "skill_invoked"}, {"type": "skill_not_invoked", "skill": "other"}, {"type": "max_turns", "value": 8},
        {"type": "max_tokens", "value": 20000}, {"type": "max_cost", "value": 0.05}, {"type": "trajectory_contains", "value": "bump.py"},
        {"type": "judge", "text": "explains why"}, "max_turns:3", "regex:^ok$",
    ]
    case_set = load(make_skill, {"evals/evals.json": as_json({"skill_name": SKILL, "evals": [
        {"id": "t", "prompt": "P", "expected_output": "1.5.0", "assertions": checks}]})})
    clean(case_set)
    got = case_set.cases[0].assertions
    assert [a.type for a in got] == ["contains", "not_contains", "regex", "not_regex", "file_exists", "file_contains", "file_contains",
                                     "command", "skill_invoked", "skill_not_invoked", "max_turns", "max_tokens", "max_cost",
                                     "trajectory_contains", "judge", "max_turns", "regex"]
    assert got[8].skill == SKILL and got[9].skill == "other"  # type: ignore[union-attr]
    assert got[15].value == 3 and got[0].target == "answer" and got[4].target == "workspace"  # type: ignore[union-attr]
    assert {a.target for a in got} == {"answer", "workspace", "command", "trajectory", "usage", "judge"}
    assert len(case_set.cases[0].typed_assertions()) == 16


SCRIPTED = {"skill_name": SKILL, "evals": [{
    "id": "s1", "prompt": "P", "expected_output": "DONE",
    "script": {
        "claude": [{"text": "Loading.", "tool": "Skill", "args": {"skill": "{skill_name}"}},
                   {"tool": "Read", "args": {"file_path": "{skill_dir}/SKILL.md"}}, {"text": "FINAL: DONE"}],
        "codex": {"steps": [{"text": "FINAL: DONE"}], "side_text": "fine",
                  "variants": [{"if_request_contains": "- {skill_name}:", "steps": [
                      {"tool": "exec_command", "args": {"cmd": "cat {skill_dir}/SKILL.md | head -n 3 # {not_a_placeholder}"}},
                      {"text": "FINAL: DONE"}]}]},
        "*": [{"text": "FINAL: DONE"}],
    }}]}


def test_scripts_per_agent_with_aliases_fallback_and_placeholders(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json(SCRIPTED)})
    clean(case_set)
    case = case_set.cases[0]
    assert sorted(case.scripts) == ["*", "claude-code", "codex"]  # "claude" is an alias
    assert case.script_for("opencode") is case.scripts["*"]
    rendered = case.script_for("claude-code").render({"skill_dir": "/ws/.claude/skills/demo", "skill_name": "demo-skill"})  # type: ignore[union-attr]
    assert rendered == {"side_text": "ok", "steps": [
        {"text": "Loading.", "tool": "Skill", "args": {"skill": "demo-skill"}},
        {"tool": "Read", "args": {"file_path": "/ws/.claude/skills/demo/SKILL.md"}}, {"text": "FINAL: DONE"}]}
    codex = case.scripts["codex"].render({"skill_dir": "/s", "skill_name": "demo-skill", "evil": "x"})
    assert codex["side_text"] == "fine" and codex["variants"][0]["if_request_contains"] == "- demo-skill:"
    assert codex["variants"][0]["steps"][0]["args"]["cmd"] == "cat /s/SKILL.md | head -n 3 # {not_a_placeholder}"
    assert case_set.metrics()["scripted_agents"] == ["*", "claude-code", "codex"]


def test_a_list_script_applies_to_every_agent(make_skill: MakeSkill) -> None:
    data = [{"id": "n", "question": "Q", "expected_skill": None, "script": [{"text": "FINAL: no"}]}]
    case = load(make_skill, {"evals/evals.json": as_json(data)}).cases[0]
    assert list(case.scripts) == ["*"] and case.script_for("gemini") is not None


def test_rendered_scripts_are_accepted_by_the_gateway(make_skill: MakeSkill) -> None:
    case = load(make_skill, {"evals/evals.json": as_json(SCRIPTED)}).cases[0]
    for agent, script in case.scripts.items():
        parsed = Script.from_data(script.render({"skill_dir": "/s", "skill_name": SKILL}))
        assert len(parsed.steps) == len(script.steps), agent


# -- malformations: each one a problem with file, line, case and field ----------------------------------------
BAD_CASES = [
    # (case object, rule, field, message fragment)
    ({"id": "p1"}, "field-missing", "prompt", "prompt is missing"),
    ({"id": "p2", "prompt": ""}, "field-type", "prompt", "non-empty string"),
    ({"id": "p3", "question": ["not", "text"]}, "field-type", "question", "non-empty string"),
    ({"id": "bad id!", "prompt": "P"}, "id-invalid", "id", "letters, digits"),
    ({"id": "x" * 129, "prompt": "P"}, "id-invalid", "id", "at most 128"),
    ({"id": "CON", "prompt": "P"}, "id-invalid", "id", "Windows"),
    ({"id": "nul.case", "prompt": "P"}, "id-invalid", "id", "Windows"),
    ({"id": True, "prompt": "P"}, "id-invalid", "id", "string or an integer"),
    ({"id": 1.5, "prompt": "P"}, "id-invalid", "id", "string or an integer"),
    ({"id": "o1", "prompt": "P", "expected_output": 3}, "field-type", "expected_output", "must be a string"),
    ({"id": "r1", "prompt": "P", "expected_skill": 7}, "field-type", "expected_skill", "skill name or null"),
    ({"id": "r2", "prompt": "P", "should_trigger": "yes"}, "field-type", "should_trigger", "true or false"),
    ({"id": "r3", "prompt": "P", "acceptable_skills": {"a": 1}}, "field-type", "acceptable_skills", "list of skill names"),
    ({"id": "r4", "prompt": "P", "acceptable_skills": [3]}, "field-type", "acceptable_skills", "not a skill name"),
    ({"id": "f1", "prompt": "P", "files": ["/etc/passwd"]}, "file-path", "files", "relative posix path"),
    ({"id": "f2", "prompt": "P", "files": ["../../outside.txt"]}, "file-path", "files", "leaves the skill"),
    ({"id": "f3", "prompt": "P", "files": ["files/missing.csv"]}, "file-missing", "files", "does not exist"),
    ({"id": "f4", "prompt": "P", "files": ["evals.json"]}, "file-path", "files", "control file"),
    ({"id": "f5", "prompt": "P", "files": {"a": 1}}, "field-type", "files", "list of paths"),
    ({"id": "f6", "prompt": "P", "files": [""]}, "file-path", "files", "non-empty path"),
    ({"id": "s1", "prompt": "P", "expected_script": ["a"]}, "field-type", "expected_script", "script path"),
    ({"id": "a1", "prompt": "P", "assertions": [{"type": "regex", "pattern": "("}]}, "assertion", "assertions[0]", "not a valid regular"),
    ({"id": "a2", "prompt": "P", "assertions": [{"type": "telepathy"}]}, "assertion", "assertions[0]", "does not match any of the expected tags"),
    ({"id": "a3", "prompt": "P", "assertions": [{"type": "contains"}]}, "assertion", "assertions[0]", "value: Field required"),
    ({"id": "a4", "prompt": "P", "assertions": [{"type": "contains", "value": "x", "valeu": "y"}]}, "assertion", "assertions[0]", "valeu"),
    ({"id": "a5", "prompt": "P", "assertions": [""]}, "assertion", "assertions[0]", "empty"),
    ({"id": "a6", "prompt": "P", "assertions": [{"type": "file_contains", "path": "a"}]}, "assertion", "assertions[0]", "exactly one"),
    ({"id": "a7", "prompt": "P", "assertions": [{"type": "file_exists", "path": "/abs"}]}, "assertion", "assertions[0]", "relative"),
    ({"id": "a8", "prompt": "P", "assertions": [{"type": "file_exists", "path": "a/../../x"}]}, "assertion", "assertions[0]", "leaves"),
    ({"id": "a9", "prompt": "P", "assertions": [{"type": "max_turns", "value": -1}]}, "assertion", "assertions[0]", "greater than or equal"),
    ({"id": "a10", "prompt": "P", "assertions": [42]}, "assertion", "assertions[0]", "string or an object"),
    ({"id": "a11", "prompt": "P", "assertions": [{"name": "no text"}]}, "assertion", "assertions[0]", "needs 'type'"),
    ({"id": "a12", "prompt": "P", "assertions": {"a": 1}}, "field-type", "assertions", "list of assertions"),
    ({"id": "a13", "prompt": "P", "must_not": [{"type": "regex", "pattern": "[", "text": "t"}]}, "assertion", "must_not[0]", "regular"),
    ({"id": "a14", "prompt": "P", "assertions": [{"type": "command", "run": "  "}]}, "assertion", "assertions[0]", "command is empty"),
    ({"id": "c1", "prompt": "P", "script": [{"tool": "Read", "args": {"file_path": "x"}}]}, "script", "script", "last step calls a tool"),
    ({"id": "c2", "prompt": "P", "script": []}, "script", "script", "must not be empty"),
    ({"id": "c3", "prompt": "P", "script": {"codex": [{"text": "x", "tool": "t", "oops": 1}]}}, "script", "script.codex", "oops"),
    ({"id": "c4", "prompt": "P", "script": {"Bad Agent": [{"text": "x"}]}}, "script", "script.Bad Agent", "not an agent name"),
    ({"id": "c5", "prompt": "P", "script": {"codex": [{}]}}, "script", "script.codex", "needs 'text', 'tool'"),
    ({"id": "c6", "prompt": "P", "script": {"codex": [{"text": "x", "args": {"a": 1}}]}}, "script", "script.codex", "'args' without 'tool'"),
    ({"id": "c7", "prompt": "P", "script": {"claude": [{"text": "x"}], "claude-code": [{"text": "y"}]}}, "script", "script.claude-code", "second"),
    ({"id": "c8", "prompt": "P", "script": "hello"}, "script", "script", "list of steps"),
    ({"id": "c9", "prompt": "P", "script": {"codex": {"steps": [{"text": "x"}], "voice": 1}}}, "script", "script.codex", "voice"),
]


@pytest.mark.parametrize(("case", "rule", "field", "fragment"), BAD_CASES, ids=[f"{n:02d}-{c[1]}" for n, c in enumerate(BAD_CASES)])
def test_each_malformed_case_is_one_located_high_problem_and_is_dropped(make_skill: MakeSkill, case: dict[str, object], rule: str,
                                                                           field: str, fragment: str) -> None:
    good = {"id": "good", "prompt": "fine"}
    case_set = load(make_skill, {"evals/evals.json": as_json({"skill_name": SKILL, "evals": [good, case]}),
                                 "evals/files/in.csv": "a\n"})
    hits = [p for p in case_set.problems if p.severity is Severity.HIGH]
    assert len(hits) == 1, case_set.problems
    problem = hits[0]
    assert (problem.rule, problem.field, problem.file) == (rule, field, "evals/evals.json")
    assert fragment in problem.message, problem.message
    assert problem.line is not None and problem.line >= 8  # inside the second case (it opens on line 8), not the file's top
    raw_id = case["id"]
    assert problem.case == (raw_id if isinstance(raw_id, str) and rule != "id-invalid" else "#2")  # an invalid id is named by position
    finding = problem.finding()
    assert finding.file == "evals/evals.json" and finding.line == problem.line and f"field {field!r}" in finding.message
    assert [c.id for c in case_set] == ["good"]  # the bad case is not run; the good one is
    assert case_set.counts()["invalid"] == 1


def test_lines_point_at_the_offending_value(make_skill: MakeSkill) -> None:
    text = """{
  "skill_name": "demo-skill",
  "evals": [
    {"id": "ok", "prompt": "P"},
    {
      "id": "broken",
      "prompt": "P",
      "assertions": [
        "fine",
        {"type": "regex", "pattern": "(unclosed"}
      ]
    }
  ]
}
"""
    problem = only(load(make_skill, {"evals/evals.json": text}), "assertion")
    assert (problem.line, problem.case, problem.field) == (10, "broken", "assertions[1]")


def test_duplicate_key_in_a_case_is_reported_at_its_second_line(make_skill: MakeSkill) -> None:
    text = '[\n  {"id": "a",\n   "question": "Q1",\n   "question": "Q2"}\n]\n'
    case_set = load(make_skill, {"evals/evals.json": text})
    problem = only(case_set, "duplicate-key")
    assert (problem.line, problem.case, problem.field, problem.severity) == (4, "a", "question", Severity.HIGH)
    assert len(case_set) == 0


def test_duplicate_key_in_yaml_and_at_top_level(make_skill: MakeSkill) -> None:
    text = "skill_name: demo-skill\nevals:\n  - id: a\n    prompt: P\nevals:\n  - id: b\n    prompt: P\n"
    problem = only(load(make_skill, {"evals/evals.yaml": text}), "duplicate-key")
    assert (problem.line, problem.field, problem.case) == (5, "evals", None)


def test_duplicate_ids_keep_the_first_and_name_both_lines(make_skill: MakeSkill) -> None:
    text = '[\n {"id": "same", "question": "Q1"},\n {"id": "same", "question": "Q2"}\n]\n'
    case_set = load(make_skill, {"evals/evals.json": text})
    problem = only(case_set, "id-duplicate")
    assert (problem.line, problem.case, problem.field) == (3, "same", "id") and "evals/evals.json:2" in problem.message
    assert [c.prompt for c in case_set] == ["Q1"]


def test_a_case_that_is_not_an_object(make_skill: MakeSkill) -> None:
    problem = only(load(make_skill, {"evals/evals.json": '[\n  {"id": "a", "question": "Q"},\n  "just text"\n]\n'}), "case-type")
    assert (problem.line, problem.severity) == (3, Severity.HIGH) and "case #2" in problem.message


@pytest.mark.parametrize(("name", "text", "line", "fragment"), [
    pytest.param("evals.json", '{\n  "evals": [\n    {"id": 1,}\n  ]\n}\n', 3, "invalid JSON", id="json"),
    pytest.param("evals.yaml", "evals:\n  - id: a\n   prompt: bad indent\n", 3, "invalid YAML", id="yaml"),
    pytest.param("evals.yml", "a: &x [1, *x]\n", 1, "YAML aliases", id="recursive-alias"),
    pytest.param("evals.yml", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                 "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                 "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n", 1, "YAML aliases",
                 id="alias-bomb"),
    pytest.param("evals.json", "[" * 100_000 + "]" * 100_000, None, "nested too deeply", id="deep-nesting"),
])
def test_syntax_errors_are_located(make_skill: MakeSkill, name: str, text: str, line: int | None, fragment: str) -> None:
    problem = only(load(make_skill, {f"evals/{name}": text}), "syntax")
    assert problem.line == line and fragment in problem.message and problem.severity is Severity.HIGH


def test_unrecognised_primary_file_is_high_and_an_unrecognised_extra_is_ignored(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": '{"tests": []}', "evals/fixture-data.json": '{"rows": [1, 2]}'})
    shape = only(case_set, "shape")
    assert shape.file == "evals/evals.json" and shape.severity is Severity.HIGH
    assert only(case_set, "not-cases").severity is Severity.INFO


def test_unreadable_and_linked_eval_files(make_skill: MakeSkill, tmp_path: Path) -> None:
    case_set = load(make_skill, {"evals/evals.json": b"\xff\xfe\x00bad"})
    assert only(case_set, "unreadable").severity is Severity.HIGH
    outside = tmp_path / "outside.json"
    outside.write_text("[]")
    skill = make_skill({"SKILL.md": manifest(SKILL)}, name="linked")
    (skill.root / "evals").mkdir()
    os.symlink(outside, skill.root / "evals" / "evals.json")
    linked = load_cases(Skill(root=skill.root, key="linked"))
    assert "symlink" in only(linked, "unreadable").message and len(linked) == 0


def test_file_level_problems(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json({"evals": [{"id": "a", "prompt": "P", "expected_output": "x"}], "extras": 1})})
    assert only(case_set, "field-missing").field == "skill_name" and only(case_set, "field-missing").severity is Severity.MEDIUM
    unknown = only(case_set, "unknown-key")
    assert (unknown.field, unknown.severity, unknown.line) == ("extras", Severity.LOW, 9)
    assert [c.id for c in case_set] == ["a"]  # MEDIUM and LOW problems keep the cases


def test_empty_file_and_expected_output_missing(make_skill: MakeSkill) -> None:
    assert only(load(make_skill, {"evals/evals.json": "[]"}), "empty").severity is Severity.MEDIUM
    case_set = load(make_skill, {"evals/evals.json": as_json({"skill_name": SKILL, "evals": [{"id": "a", "prompt": "P"}]})})
    missing = only(case_set, "field-missing")
    assert (missing.field, missing.severity, missing.case) == ("expected_output", Severity.MEDIUM, "a") and len(case_set) == 1


def test_unknown_case_key_is_kept_with_a_suggestion(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json([{"id": "a", "question": "Q", "expected_outptu": "x"}])})
    problem = only(case_set, "unknown-key")
    assert problem.severity is Severity.LOW and problem.suggestion == "did you mean 'expected_output'?"
    assert case_set.cases[0].extra == {"expected_outptu": "x"}


def test_alias_clash_uses_the_canonical_spelling(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json([{"id": "a", "prompt": "P", "question": "Q"}])})
    assert only(case_set, "alias-clash").severity is Severity.MEDIUM and case_set.cases[0].prompt == "P"


def test_a_file_for_another_skill_leaves_unstated_routing_unlabelled(make_skill: MakeSkill) -> None:
    data = {"skill_name": "other-skill", "evals": [{"id": "a", "prompt": "P", "expected_output": "x"},
                                                   {"id": "b", "prompt": "P", "expected_output": "x", "expected_skill": SKILL},
                                                   {"id": "c", "prompt": "P", "expected_output": "x", "should_trigger": False}]}
    case_set = load(make_skill, {"evals/evals.json": as_json(data)})
    assert only(case_set, "skill-mismatch").severity is Severity.MEDIUM
    assert [c.label for c in case_set] == [Label.UNLABELLED, Label.POSITIVE, Label.NEGATIVE]
    assert case_set.cases[0].expected_skill == "other-skill" and case_set.counts()["unlabelled"] == 1


def test_a_former_unprefixed_name_is_this_skill_with_a_low_finding(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json([{"id": "a", "question": "Q", "expected_skill": "skill"},
                                                             {"id": "b", "question": "Q", "expected_skill": "demo"}])})
    stale = only(case_set, "stale-skill-name")
    assert (stale.case, stale.severity) == ("a", Severity.LOW)
    assert [(c.expected_skill, c.label) for c in case_set] == [(SKILL, Label.POSITIVE), ("demo", Label.NEGATIVE)]  # "demo" is a prefix, not a suffix


def test_the_folder_name_also_counts_as_this_skill(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": manifest("short-name"), "evals/evals.json": as_json(
        {"skill_name": "folder-name", "evals": [{"id": "a", "prompt": "P", "expected_output": "x"}]})}, name="folder-name")
    case_set = load_cases(skill)
    clean(case_set)
    assert case_set.cases[0].label is Label.POSITIVE and case_set.cases[0].skill == "short-name"


# -- defaults and ids ---------------------------------------------------------------------------------------
def test_defaults_of_a_minimal_case(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json([{"question": "Q"}, {"question": "R", "files": []},
                                                             {"question": "S", "files": None, "expected_behavior": None}])})
    first, second, third = case_set.cases
    assert [c.id for c in case_set] == ["case-1", "case-2", "case-3"]
    assert [p.rule for p in case_set.problems] == ["id-missing"] * 3 and case_set.problems[0].severity is Severity.LOW
    assert (first.expected_skill, first.label, first.files, first.assertions, first.scripts, first.expected_output) == (
        SKILL, Label.POSITIVE, None, (), {}, None)
    assert second.files == () and third.files == ()


def test_no_eval_files(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/EVAL.md": "# notes\n", "evals/config.yml": "schema_version: 1\n"})
    assert case_set.files == () and case_set.problems == () and len(case_set) == 0
    assert case_set.metrics()["tier3"] == "not evaluable: no eval cases (no evals/evals.json)"


def test_two_dataset_files_are_ambiguous(make_skill: MakeSkill) -> None:
    case_set = load(make_skill, {"evals/evals.json": as_json([{"id": "a", "question": "Q"}]),
                                 "evals/evals.yaml": "- id: b\n  question: R\n"})
    assert only(case_set, "ambiguous").severity is Severity.MEDIUM and [c.id for c in case_set] == ["a", "b"]


def test_an_internal_error_becomes_a_problem_not_an_exception(make_skill: MakeSkill, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(cases_module, "normalise", boom)
    problem = only(load(make_skill, {"evals/evals.json": as_json([{"id": "a", "question": "Q"}])}), "internal")
    assert "RuntimeError" in problem.message and problem.severity is Severity.HIGH


# -- digest --------------------------------------------------------------------------------------------------
def test_digest_ignores_layout_and_follows_content(make_skill: MakeSkill) -> None:
    data = [{"id": "a", "question": "Q", "expected_behavior": ["B"]}]
    compact = load(make_skill, {"evals/evals.json": json.dumps(data)}).digest()
    assert compact.startswith("sha256:")
    assert load(make_skill, {"evals/evals.json": "\n\n" + as_json(data)}).digest() == compact  # lines moved, same cases
    renamed = load_cases(make_skill({"SKILL.md": manifest("other-name"), "evals/evals.json": json.dumps(data)}, name="other-name"))
    assert renamed.digest() != compact  # the evaluated skill is part of each case
    assert load(make_skill, {"evals/evals.json": as_json([{**data[0], "question": "Q2"}])}).digest() != compact
    assert load(make_skill, {"evals/evals.json": as_json([{**data[0], "expected_skill": None}])}).digest() != compact


def test_digest_covers_the_input_files(make_skill: MakeSkill) -> None:
    """Editing evals/files/sales.csv must change the digest (issue 10, item 9): on a99a1ca it did not."""
    evals = {"evals/evals.json": as_json({"skill_name": SKILL, "evals": [{"id": "a", "prompt": "Q", "files": ["evals/files/sales.csv"]},
                                                                       {"id": "b", "prompt": "Q", "files": []}]})}
    before = load(make_skill, {**evals, "evals/files/sales.csv": "region,amount\nnorth,5\n"})
    after = load(make_skill, {**evals, "evals/files/sales.csv": "region,amount\nnorth,6\n"})
    assert before.digest() != after.digest()
    a_before, a_after = (s.case_digest(s.get("a")) for s in (before, after))  # type: ignore[arg-type]
    assert a_before != a_after and before.case_digest(before.get("b")) == after.case_digest(after.get("b"))  # type: ignore[arg-type]
    assert list(before.inputs["a"]) == ["evals/files/sales.csv"] and before.inputs["a"]["evals/files/sales.csv"].startswith("sha256:")


def test_cases_are_frozen(make_skill: MakeSkill) -> None:
    case = load(make_skill, {"evals/evals.json": as_json([{"id": "a", "question": "Q"}])}).cases[0]
    with pytest.raises(Exception, match="frozen"):
        case.prompt = "changed"  # type: ignore[misc]


# -- the Tier 1 check ------------------------------------------------------------------------------------------
CHECK = EvalsCheck()


def test_registered_through_the_hook() -> None:
    assert [c.name for c in evals_module.pytest_skilleval_checks(config=None)] == ["evals"]  # type: ignore[arg-type]


def test_check_without_evals_passes_and_says_tier3_cannot_run(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill())
    assert result.status is Status.PASSED and result.metrics["cases"] == 0
    assert [f.rule for f in result.findings] == ["evals.none"] and result.findings[0].severity is Severity.INFO
    assert decide(result, blocking=True, policy=Policy()).outcome == "passed"


def test_check_fails_a_malformed_file_with_located_findings(make_skill: MakeSkill) -> None:
    skill = make_skill({"SKILL.md": manifest(SKILL), "evals/evals.json": '[\n  {"id": "a"}\n]\n'})
    result = run_check(CHECK, skill)
    verdict = decide(result, blocking=True, policy=Policy())
    assert verdict.outcome == "failed" and verdict.status is Status.FAILED
    (finding,) = result.findings
    assert (finding.rule, finding.file, finding.line) == ("evals.field-missing", "evals/evals.json", 2)
    assert finding.message.startswith("case 'a', field 'prompt':")


def test_check_metrics(make_skill: MakeSkill) -> None:
    result = run_check(CHECK, make_skill({"SKILL.md": manifest(SKILL), "evals/evals.json": as_json(AGENTSKILLS)}))
    metrics = result.metrics
    assert (metrics["cases"], metrics["positive"], metrics["negative"], metrics["unlabelled"], metrics["invalid"]) == (2, 1, 1, 0, 0)
    assert metrics["shapes"] == ["agentskills"] and metrics["dataset_digest"].startswith("sha256:") and metrics["tier3"] == "ready"


# -- the example skills' scripted cases --------------------------------------------------------------------
EXAMPLES = sorted(p for p in (Path(__file__).resolve().parents[2] / "example_skills").iterdir() if (p / "SKILL.md").is_file())
#: How each CLI lists a skill (agent-clis.md): the with-skill variant must key on exactly this.
LISTING = {"claude-code": "\n- {name}: {description}", "codex": "\n- {name}: {description} (file: r0/{name}/SKILL.md)",
           "opencode": "<skill><name>{name}</name><description>{description}</description>",
           "gemini": "<skill><name>{name}</name><description>{description}</description>"}
#: The call that loads a skill in each CLI, and the argument naming it or its SKILL.md.
LOADS = {"claude-code": ("Skill", "skill"), "codex": ("exec_command", "cmd"), "opencode": ("skill", "name"), "gemini": ("activate_skill", "name")}
#: Each CLI's shell tool and its command argument (agent-clis.md §7).
SHELLS = {"claude-code": ("Bash", "command"), "codex": ("exec_command", "cmd"), "opencode": ("bash", "command"),
          "gemini": ("run_shell_command", "command")}


def _answer_passes(answer: str, assertion: model._Assertion) -> bool:
    if isinstance(assertion, model.Contains):
        return assertion.value in answer
    if isinstance(assertion, model.NotContains):
        return assertion.value not in answer
    if isinstance(assertion, model.Regex):
        return re.search(assertion.pattern, answer, re.IGNORECASE if assertion.ignore_case else 0) is not None
    return True  # not an answer check


@pytest.mark.parametrize("root", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_cases_script_every_cli_keylessly(root: Path) -> None:
    skill = Skill(root=root, key=root.name)
    case_set = load_cases(skill)
    clean(case_set)
    values = {"skill_name": skill.name, "skill_dir": f"/trial/skills/{skill.name}"}
    assert any(c.label is Label.POSITIVE for c in case_set) and any(c.negative for c in case_set)
    for case in case_set:
        answer_checks = [a for a in case.assertions if a.target == "answer"]
        assert answer_checks, f"{case.id}: no typed answer check"
        # `make eval` runs these keyless, with no judge: a free-text assertion would leave every trial NOT SCORED.
        assert not case.judge_assertions(), f"{case.id}: free-text assertions need a judge"
        for agent in LOADS:
            script = case.script_for(agent)
            assert script is not None, (case.id, agent)
            rendered = script.render(values)
            if case.negative:  # answer at once, whether or not the skill is offered
                assert rendered["steps"] == [{"text": rendered["steps"][0]["text"]}] and "variants" not in rendered
                final = rendered["steps"][0]["text"]
                assert any(isinstance(a, model.SkillNotInvoked) for a in case.assertions)
            else:  # the loading steps are a variant chosen only when this CLI lists the skill
                *instructed, variant = rendered["variants"]
                listing = LISTING[agent].format(name=skill.name, description=skill.description)
                for first_variant in instructed:  # answers right only once the instructions reached the model
                    marker = first_variant["if_request_contains"]
                    assert marker in (skill.body or "") and marker not in listing + case.prompt, (case.id, agent, marker)
                    assert all(_answer_passes(first_variant["steps"][-1]["text"], a) for a in answer_checks)
                    assert not all(_answer_passes(variant["steps"][-1]["text"], a) for a in answer_checks)  # guessing without them
                    variant = {**variant, "steps": [*variant["steps"][:-1], first_variant["steps"][-1]]}
                assert variant["if_request_contains"] in json.dumps(listing, ensure_ascii=False)
                assert variant["if_request_contains"] not in json.dumps(case.prompt, ensure_ascii=False)
                tool, arg = LOADS[agent]
                first = variant["steps"][0]
                assert first["tool"] == tool and skill.name in first["args"][arg]
                reads = [s for s in variant["steps"] if s.get("tool")]
                assert any(f"{values['skill_dir']}/SKILL.md" in json.dumps(s["args"]) for s in reads), (case.id, agent)
                # … and does what the case asks in this CLI's shell: runs the skill's own script
                shell_tool, shell_arg = SHELLS[agent]
                commands = [s["args"][shell_arg] for s in reads if s["tool"] == shell_tool and "SKILL.md" not in s["args"][shell_arg]]
                assert commands and any(f"{values['skill_dir']}/scripts/" in c or "> CHANGELOG.md" in c for c in commands), (case.id, agent)
                final = variant["steps"][-1]["text"]
                baseline = rendered["steps"][-1]["text"]
                assert not all(_answer_passes(baseline, a) for a in answer_checks)  # the no-skill answer is worse
                assert any(isinstance(a, model.SkillInvoked) and a.skill == skill.name for a in case.assertions)
            assert all(_answer_passes(final, a) for a in answer_checks), (case.id, agent, final)


@pytest.mark.parametrize("root", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_scripts_played_by_the_gateway_differ_by_arm(root: Path) -> None:
    skill = Skill(root=root, key=root.name)
    values = {"skill_name": skill.name, "skill_dir": f"/trial/skills/{skill.name}"}
    for case in load_cases(skill):
        for agent, (tool, _) in LOADS.items():
            script = Script.from_data(case.script_for(agent).render(values))  # type: ignore[union-attr]
            tools = (tool, "Read", "read", "read_file", *(shell for shell, _ in SHELLS.values()))
            for offered in (True, False):
                listing = LISTING[agent].format(name=skill.name, description=skill.description) if offered else ""
                text = json.dumps({"system": listing, "messages": [case.prompt]}, ensure_ascii=False)
                results: list[str] = []
                called: list[str] = []
                for _ in range(10):  # the gateway answers by the number of tool results so far
                    request = NeutralRequest(protocol="test", model="m", stream=False, tools=tools, tool_results=tuple(results))
                    reply, _note = script.reply_for(request, text + json.dumps(results, ensure_ascii=False), "t")
                    if not reply.tool_calls:
                        break
                    called += [c.name for c in reply.tool_calls]
                    results += [skill.manifest_text or "ok"] * len(reply.tool_calls)  # a load or read returns the skill
                loaded = tool in called
                assert loaded is (offered and not case.negative), (case.id, agent, offered, called)
                if offered or case.negative:
                    assert all(_answer_passes(reply.text, a) for a in case.assertions), (case.id, agent, reply.text)
