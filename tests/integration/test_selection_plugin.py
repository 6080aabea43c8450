"""``pytest --skilleval-trajectories DIR`` as a user runs it, with the judge going through the gateway.

The judge is the provider layer's ``AnthropicChat`` (the real ``anthropic`` SDK) pointed at the
plugin's model gateway in scripted mode; the conftest overrides ``skilleval_chat``, so the default
wiring (``skilleval_selection_judge`` → ``skilleval_chat``) is what is exercised.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401 - imported here, once: an in-process inner run must not re-import the SDK (its metadata lookup fails then)
import pytest

from pytest_skilleval.trajectory import load_trajectory

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "trajectories"
NO_FOR = ("code-review", "docx")  # the scripted judge says No for these; Yes for every other skill

GATEWAY_CONFTEST = f"NO_FOR = {NO_FOR!r}\n" + '''
import json
import pytest
from pytest_skilleval.gateway import Gateway, GatewayConfig, Script
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.retry import RetryPolicy


def step(score, why):
    return {"tool": "skill_selection_rating", "args": {"reasoning": why, "score": score}}

SCRIPT = Script.from_data({"steps": [step("Yes", "the description fits the task")],
                           "variants": [{"if_request_contains": "The agent invoked the skill: %s\\\\n" % n,
                                         "steps": [step("No", "%s does not fit" % n)]} for n in NO_FOR]})

@pytest.fixture(scope="session")
def skilleval_chat(tmp_path_factory):
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path_factory.mktemp("gw"))) as gateway:
        trial = gateway.open_trial("judge", script=SCRIPT)
        yield AnthropicChat("claude-judge", api_key=trial.token.secret, base_url=trial.url, retry=RetryPolicy(retries=0))
'''


def transcripts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")
                  and not p.name.endswith((".requests.jsonl", ".case.json")))


def expected_rows(root: Path) -> tuple[int, int, int]:
    """(yes, no, n/a) the scripted judge must produce, computed by parsing each transcript here."""
    yes = no = na = 0
    for path in transcripts(root):
        log = path.with_name(path.name.replace(".events.jsonl", ".jsonl").removesuffix(".jsonl").removesuffix(".json")
                             + ".requests.jsonl")
        skills = load_trajectory(path, request_log=log if log.is_file() else None).selections()
        na += not skills
        no += sum(1 for s in skills if s.name in NO_FOR)
        yes += sum(1 for s in skills if s.name not in NO_FOR)
    return yes, no, na


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(FIXTURES, pytester.path / "trajectories")
    pytester.makeconftest(GATEWAY_CONFTEST)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_PROVIDER", "SKILLEVAL_API_KEY"):
        pytester._monkeypatch.delenv(key, raising=False)
    return pytester


def results(pytester: pytest.Pytester, folder: str = "rep") -> dict[str, Any]:
    return json.loads((pytester.path / folder / "results.json").read_text())  # type: ignore[no-any-return]


def test_one_row_per_invoked_skill_na_rows_out_of_the_mean(project: pytest.Pytester) -> None:
    yes, no, na = expected_rows(project.path / "trajectories")
    assert yes > 20 and no == 2 and na >= 5
    result = project.runpytest("--skilleval-trajectories", "trajectories", "--skilleval-report-dir=rep", "-p", "no:cacheprovider",
                               "--junitxml=junit.xml", "-rs")
    result.assert_outcomes(passed=yes, failed=no, skipped=na)
    sel = results(project)["selection"]
    per_trajectory: dict[str, list[float]] = {}
    for r in sel["rows"]:
        if r["row"]["label"] in ("Yes", "No"):
            per_trajectory.setdefault(r["trajectory"], []).append(r["row"]["score"])
    mean = sum(sum(v) / len(v) for v in per_trajectory.values()) / len(per_trajectory)  # Strands: per trajectory, then over them
    result.stdout.fnmatch_lines([f"skill selection: mean accuracy {mean:.1%} over {len(per_trajectory)} trajectory(ies) (each the mean of "
                                 f"its rows; {yes / (yes + no):.1%} over {yes + no} judged row(s): {yes} yes, {no} no, "
                                 f"0 missing trajectory); {na} N/A excluded; 0 judge error(s); 0 unparseable*",
                                 "*SKIPPED*N/A: no skill invoked*"])
    assert (sel["judged"], sel["yes"], sel["no"], sel["not_applicable"], sel["errors"]) == (yes + no, yes, no, na, 0)
    assert sel["mean_accuracy"] == pytest.approx(mean) and sel["row_mean_accuracy"] == pytest.approx(yes / (yes + no))
    rows = {r["nodeid"]: r["row"] for r in sel["rows"]}
    assert len(rows) == yes + no + na
    refused = rows["trajectories/claude-code/transcript_refused_retry.jsonl::selection::docx[3]"]
    assert (refused["label"], refused["score"], refused["refused"], refused["reason"]) == ("No", 0.0, True, "docx: docx does not fit")
    na_row = rows["trajectories/codex/exec_not_loads.jsonl::selection::none"]
    assert (na_row["label"], na_row["score"], na_row["passed"]) == ("not_applicable", None, True)
    # JUnit carries the record and the score of every row.
    cases = {f"{c.get('classname')}.{c.get('name')}": c for c in ET.parse(project.path / "junit.xml").getroot().iter("testcase")}
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases.values()]
    assert sum(1 for p in props if "skilleval.selection" in p) == yes + no + na
    assert sorted(p.get("skilleval.score") for p in props if p.get("skilleval.status") == "FAILED") == ["0", "0"]


def test_node_ids_and_the_selection_marker(project: pytest.Pytester) -> None:
    result = project.runpytest("--skilleval-trajectories", "trajectories", "--collect-only", "-q", "-m", "selection", "-p", "no:cacheprovider")
    ids = [ln for ln in result.outlines if "::" in ln]
    assert "trajectories/claude-code/transcript_refused_retry.jsonl::selection::pdf-procesing[1]" in ids
    assert "trajectories/strands/agent_skills_run.json::selection::csv-summary[3]" in ids
    assert "trajectories/claude-code/transcript_slash_command.jsonl::selection::none" in ids
    assert not any(".requests." in i for i in ids)
    assert project.runpytest("--markers").stdout.str().count("@pytest.mark.selection:") == 1


def test_reports_agree_with_and_without_xdist(project: pytest.Pytester) -> None:
    serial = project.runpytest_subprocess("--skilleval-trajectories=trajectories", "-n", "0", "--skilleval-report-dir=rep0", "-p", "no:cacheprovider")
    parallel = project.runpytest_subprocess("--skilleval-trajectories=trajectories", "-n", "2", "--skilleval-report-dir=rep2", "-p",
                                            "no:cacheprovider")
    assert serial.parseoutcomes() == parallel.parseoutcomes()
    a, b = results(project, "rep0")["selection"], results(project, "rep2")["selection"]
    assert a == b and a["judged"] > 20


def test_parse_errors_are_failing_items_with_file_and_line(project: pytest.Pytester) -> None:
    bad = project.path / "trajectories" / "broken"
    bad.mkdir()
    (bad / "cut.jsonl").write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "cut')
    result = project.runpytest("--skilleval-trajectories", "trajectories/broken", "--skilleval-report-dir=rep", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot parse the trajectory: *trajectories/broken/cut.jsonl:2: truncated*"])
    assert results(project)["selection"]["parse_errors"] == 1


def test_case_sidecars_add_expectations_and_triggering_rates(project: pytest.Pytester) -> None:
    root = project.path / "trajectories"
    (root / "claude-code" / "transcript_refused_retry.case.yaml").write_text(
        "task: Convert the invoice\nexpect_skills: [pdf-processing]\nforbid_skills: [docx]\n")
    (root / "codex" / "exec_not_loads.case.yaml").write_text("should_trigger: false\n")
    (root / "codex" / "exec_shell_read.case.yaml").write_text("expect_skills: [csv-summary]\nacceptable_skills: [semver-bump]\n")
    result = project.runpytest("--skilleval-trajectories", "trajectories/claude-code", "--skilleval-trajectories", "trajectories/codex",
                               "--skilleval-report-dir=rep", "-p", "no:cacheprovider", "-k", "expectations")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*forbidden:docx: docx was invoked (the harness refused it)*",
                                 "*expected:csv-summary: csv-summary was not invoked*",
                                 "*only-acceptable: loaded skills outside the expected and acceptable ones: greet, pdf-processing*",
                                 "triggering over 3 labelled case(s): under-triggering 50.0% (1/2), over-triggering 0.0% (0/1), "
                                 "abstention correctness 100.0% (1/1), forbidden loads 1"])
    rates = results(project)["selection"]["rates"]
    assert (rates["positives"], rates["negatives"], rates["wrong_skill"]) == (2, 1, 1)


def test_a_case_task_and_catalog_reach_the_judge(project: pytest.Pytester) -> None:
    (project.path / "trajectories" / "openhands" / "flat_invoke.case.json").write_text(json.dumps({
        "task": "Extract the tables from q3.pdf", "catalog": [{"name": "pdf-processing", "description": "PDFs."}]}))
    # This judge says Yes only when the prompt holds the case's task and catalog (JSON-escaped newlines).
    project.makeconftest(GATEWAY_CONFTEST.replace("SCRIPT = Script.from_data(", "_UNUSED = (") + """
SCRIPT = Script.from_data({"steps": [step("No", "the case was not in the prompt")], "variants": [{
    "if_request_contains": "## Task\\\\nExtract the tables from q3.pdf\\\\n\\\\n## Available skills\\\\n- pdf-processing: PDFs.",
    "steps": [step("Yes", "task and catalog seen")]}]})
""")
    result = project.runpytest("--skilleval-trajectories", "trajectories/openhands/flat_invoke.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_without_a_judge_invoked_skills_fail_and_nothing_skips_but_na(project: pytest.Pytester) -> None:
    (project.path / "conftest.py").unlink()
    result = project.runpytest("--skilleval-trajectories", "trajectories/codex", "-p", "no:cacheprovider")
    _, _, na = expected_rows(project.path / "trajectories" / "codex")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == na and outcomes["failed"] >= 3 and "passed" not in outcomes
    result.stdout.fnmatch_lines(["*no judge: no chat provider configured*"])


def test_a_third_party_parser_through_the_hook(project: pytest.Pytester) -> None:
    project.makeconftest(GATEWAY_CONFTEST + '''
from pytest_skilleval.trajectory import TrajectoryParser

class ToyParser(TrajectoryParser):
    name = "toy"
    def sniff(self, first_lines):
        return any('"toy_event"' in line for line in first_lines)
    def parse(self, records, builder):
        for rec in records:
            if rec["toy_event"] == "load":
                builder.tool_call(rec["id"], "load_skill", {"skill_name": rec["skill"]})
                builder.tool_result(rec["id"], rec["body"])

@pytest.hookimpl
def pytest_skilleval_trajectory_parsers(config):
    return [ToyParser()]
''')
    (project.path / "toy.jsonl").write_text('{"toy_event": "load", "id": "1", "skill": "docx", "body": "# docx"}\n'
                                            '{"toy_event": "load", "id": "2", "skill": "greet", "body": "# greet"}\n')
    result = project.runpytest("--skilleval-trajectories", "toy.jsonl", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*toy.jsonl::selection::docx[[]1[]] FAILED*", "*toy.jsonl::selection::greet[[]2[]] PASSED*"])


def test_unknown_format_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--skilleval-trajectories", "trajectories", "--skilleval-trajectory-format", "nope", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown trajectory format 'nope' (known: *"])
    missing = project.runpytest("--skilleval-trajectories", "nowhere", "-p", "no:cacheprovider")
    missing.stderr.fnmatch_lines(["*--skilleval-trajectories: *nowhere does not exist*"])


def test_the_fixture_api_in_a_hand_written_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_mine=f'''
from pytest_skilleval.selection.judge import evaluate_selection

def test_agent_picked_well(skilleval_selection):
    result = skilleval_selection.evaluate({str(FIXTURES / "gemini" / "stream_activate_skill.jsonl")!r})
    assert [r.label for r in result.rows] == ["Yes", "Yes", "Yes"] and result.score == 1.0

def test_function_api(skilleval_selection_judge, skilleval_selection):
    traj = skilleval_selection.load({str(FIXTURES / "claude-code" / "transcript_refused_retry.jsonl")!r})
    result = evaluate_selection(traj, skilleval_selection_judge)
    assert [r.label for r in result.rows] == ["Yes", "Yes", "No"] and not result.passed
''')
    project.runpytest("test_mine.py", "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_misconfigured_provider_errors_judged_items_and_leaves_na_alone(project: pytest.Pytester) -> None:
    (project.path / "conftest.py").unlink()
    project._monkeypatch.setenv("OPENAI_API_KEY", "sk-test-one")
    project._monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-two")
    result = project.runpytest("--skilleval-trajectories", "trajectories/codex", "-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    _, _, na = expected_rows(project.path / "trajectories" / "codex")
    assert outcomes.get("skipped") == na and outcomes.get("errors", 0) >= 3 and "passed" not in outcomes
    result.stdout.fnmatch_lines(["*the chat provider is ambiguous*"])
