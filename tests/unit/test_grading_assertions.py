"""Typed assertions, each kind passing and failing, decided without a model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from grading_support import SKILL, case, evidence, loaded, negative_case, shell, trajectory

from pytest_skilleval.tier3.case_formats.model import (
    Command,
    Contains,
    FileContains,
    FileExists,
    JsonPath,
    MaxCost,
    MaxTokens,
    MaxTurns,
    NotContains,
    NotRegex,
    Regex,
    SkillInvoked,
    SkillNotInvoked,
    TrajectoryContains,
    TrajectoryNotContains,
)
from pytest_skilleval.tier3.grading import CommandOutcome
from pytest_skilleval.tier3.grading.answer import first_json, lookup
from pytest_skilleval.tier3.grading.assertions import check, check_typed
from pytest_skilleval.trajectory.model import InvocationMethod, InvocationStatus, Usage


def outcome(assertion, ev=None, c=None):  # type: ignore[no-untyped-def]
    return check(assertion, ev if ev is not None else evidence(trajectory()), c or case(assertion))


def answered(text: str | None):  # type: ignore[no-untyped-def]
    return evidence(trajectory(answer=None), answer=text)


# -- answer -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("assertion", "answer", "passed"), [
    (Contains(value="3 rows"), "It has 3 rows.", True),
    (Contains(value="3 ROWS"), "It has 3 rows.", False),
    (Contains(value="3 ROWS", ignore_case=True), "It has 3 rows.", True),
    (NotContains(value="error"), "It has 3 rows.", True),
    (NotContains(value="rows"), "It has 3 rows.", False),
    (NotContains(value="ROWS", ignore_case=True), "It has 3 rows.", False),
    (Regex(pattern=r"\b\d+ rows\b"), "It has 3 rows.", True),
    (Regex(pattern=r"^\d+ rows"), "It has 3 rows.", False),
    (Regex(pattern=r"IT HAS", ignore_case=True), "It has 3 rows.", True),
    (NotRegex(pattern=r"mean \d"), "It has 3 rows.", True),
    (NotRegex(pattern=r"\d rows"), "It has 3 rows.", False),
])
def test_answer_checks(assertion, answer: str, passed: bool) -> None:  # type: ignore[no-untyped-def]
    result = outcome(assertion, answered(answer))
    assert result.passed is passed and result.kind == assertion.type and result.applicable
    assert result.detail


def test_the_answer_falls_back_to_the_trajectory_final_answer() -> None:
    assert outcome(Contains(value="mean 8.5"), evidence(trajectory(answer="3 rows; mean 8.5"))).passed is True
    # The runner's answer wins over the trajectory's.
    assert outcome(Contains(value="mean 8.5"), evidence(trajectory(answer="3 rows; mean 8.5"), answer="nothing")).passed is False


@pytest.mark.parametrize("assertion", [Contains(value="x"), NotContains(value="x"), Regex(pattern="x"), NotRegex(pattern="x"),
                                       JsonPath(path="a", op="truthy")])
def test_no_answer_fails_positive_and_negative_answer_checks_alike(assertion) -> None:  # type: ignore[no-untyped-def]
    result = outcome(assertion, answered(None))
    assert result.passed is False and result.detail == "the agent gave no final answer"


REPORT = 'Here is the result:\n```json\n{"modality": "CT", "phi_present": true, "count": 1, "tags": ["PatientName", "PatientID"],' \
         ' "study": {"uid": "1.2.3", "series": [{"n": 4}]}, "empty": ""}\n```\nDone.'


@pytest.mark.parametrize(("assertion", "passed"), [
    (JsonPath(path="modality", expected="CT"), True),
    (JsonPath(path="$.modality", expected="MR"), False),
    (JsonPath(path="phi_present", expected=True), True),
    (JsonPath(path="count", expected=True), False),  # JSON 1 is not true, whatever Python thinks
    (JsonPath(path="phi_present", expected=1), False),
    (JsonPath(path="study.uid", op="truthy"), True),
    (JsonPath(path="empty", op="truthy"), False),
    (JsonPath(path="study.series[0].n", expected=4), True),
    (JsonPath(path="study.series.0.n", expected=4), True),
    (JsonPath(path="study.series[3].n", expected=4), False),
    (JsonPath(path="tags", op="contains", expected="PatientID"), True),
    (JsonPath(path="tags", op="contains", expected="PatientAge"), False),
    (JsonPath(path="study.uid", op="contains", expected="2.3"), True),
    (JsonPath(path="missing.key", op="truthy"), False),
])
def test_json_path(assertion: JsonPath, passed: bool) -> None:
    assert outcome(assertion, answered(REPORT)).passed is passed


def test_json_path_details_and_an_answer_without_json() -> None:
    assert outcome(JsonPath(path="missing.key", op="truthy"), answered(REPORT)).detail == "path 'missing.key' not found (missing at $.missing)"
    assert outcome(JsonPath(path="a"), answered("no json here {oops")).detail == "the answer holds no JSON"


def test_first_json_takes_whole_text_then_fence_then_first_decodable_block() -> None:
    assert first_json('[1, 2]') == (True, [1, 2])
    assert first_json('see {"a": 1} and {"b": 2}') == (True, {"a": 1})
    assert first_json('broken {"a": and then {"b": 2}') == (True, {"b": 2})
    assert first_json("nothing") == (False, None)
    with pytest.raises(KeyError):
        lookup({"a": [1]}, "a.b")


# -- workspace ---------------------------------------------------------------------------------------

@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "out").mkdir(parents=True)
    (root / "out" / "summary.md").write_text("# Summary\n3 rows, mean 8.5\n")
    return root


def test_file_exists_and_file_contains_pass_and_fail(ws: Path) -> None:
    ev = evidence(trajectory(), workspace=ws)
    assert outcome(FileExists(path="out/summary.md"), ev).passed is True
    assert outcome(FileExists(path="out"), ev).passed is True  # a directory the agent made counts
    missing = outcome(FileExists(path="out/report.pdf"), ev)
    assert missing.passed is False and missing.detail == "out/report.pdf does not exist"
    assert outcome(FileContains(path="out/summary.md", value="mean 8.5"), ev).passed is True
    assert outcome(FileContains(path="out/summary.md", value="mean 9"), ev).passed is False
    assert outcome(FileContains(path="out/summary.md", pattern=r"^# Summ"), ev).passed is True
    assert outcome(FileContains(path="out/summary.md", pattern=r"median"), ev).passed is False
    assert outcome(FileContains(path="out", value="x"), ev).detail == "out is a directory, not a regular file"


def test_a_symlink_out_of_the_workspace_is_not_followed(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET mean 8.5")
    os.symlink(secret, ws / "out" / "leak.md")
    os.symlink(tmp_path, ws / "up")
    ev = evidence(trajectory(), workspace=ws)
    for assertion in (FileExists(path="out/leak.md"), FileContains(path="out/leak.md", value="mean 8.5"),
                      FileContains(path="up/host-secret.txt", value="TOP-SECRET")):
        result = outcome(assertion, ev)
        assert result.passed is False, assertion
        assert "outside the workspace; not followed" in (result.detail or "")
        assert "TOP-SECRET" not in (result.detail or "")


def test_a_symlink_that_stays_inside_the_workspace_is_followed(ws: Path) -> None:
    os.symlink("out", ws / "latest")
    os.symlink("summary.md", ws / "out" / "current.md")
    ev = evidence(trajectory(), workspace=ws)
    assert outcome(FileContains(path="latest/current.md", value="3 rows"), ev).passed is True
    os.symlink("../..", ws / "out" / "sneaky")
    assert outcome(FileExists(path="out/sneaky/workspace/out/summary.md"), ev).passed is False


def test_a_fifo_is_never_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    ev = evidence(trajectory(), workspace=ws)
    assert outcome(FileContains(path="pipe", value="x"), ev).detail == "pipe is a fifo, not a regular file"
    assert outcome(FileExists(path="pipe"), ev).passed is False


def test_workspace_checks_without_a_workspace_are_undecided_not_passed() -> None:
    result = outcome(FileExists(path="out/summary.md"), evidence(trajectory()))
    assert result.passed is None and result.detail == "no workspace was recorded for this trial"


# -- command (the sandbox is the runner's; a fake stands in) ------------------------------------------

def test_command_passes_on_the_expected_exit_code_and_json_output() -> None:
    ran: list[str] = []

    def sandbox(command: str) -> CommandOutcome:
        ran.append(command)
        if command.startswith("python3 scripts/check.py"):
            return CommandOutcome(exit_code=0, output='{"ok": true}')
        if command == "false":
            return CommandOutcome(exit_code=1, output="boom")
        return CommandOutcome(exit_code=0, output="plain text")

    ev = evidence(trajectory(), run_in_sandbox=sandbox)
    assert outcome(Command(run="python3 scripts/check.py --json", json_output=True), ev).passed is True
    not_json = outcome(Command(run="echo hi", json_output=True), ev)
    assert not_json.passed is False and not_json.detail == "exit code 0 (expected 0); output ends 'plain text'; the output is not JSON"
    failed = outcome(Command(run="false"), ev)
    assert failed.passed is False and failed.detail == "exit code 1 (expected 0); output ends 'boom'"
    assert outcome(Command(run="false", exit_code=1), ev).passed is True
    assert ran == ["python3 scripts/check.py --json", "echo hi", "false", "false"]


def test_command_without_a_sandbox_or_with_a_broken_one_is_undecided() -> None:
    none = outcome(Command(run="true"), evidence(trajectory()))
    assert none.passed is None and "no sandbox" in (none.detail or "")

    def broken(command: str) -> CommandOutcome:
        raise TimeoutError("sandbox gone")

    result = outcome(Command(run="true"), evidence(trajectory(), run_in_sandbox=broken))
    assert result.passed is None and result.detail == "the sandbox could not run it: TimeoutError: sandbox gone"


# -- trajectory ---------------------------------------------------------------------------------------

def test_trajectory_contains() -> None:
    ev = evidence(trajectory(shell("python3 scripts/summarize_csv.py sales.csv"),
                             shell('printf "a\\nb"', position=2)))
    assert outcome(TrajectoryContains(value="scripts/summarize_csv.py sales.csv"), ev).passed is True
    assert outcome(TrajectoryContains(value='"command": "printf'), ev).passed is True  # the JSON form matches too
    assert outcome(TrajectoryContains(value="scripts/plot.py"), ev).passed is False
    window = evidence(trajectory(shell("ls"), omitted_tool_calls=40))
    assert outcome(TrajectoryContains(value="scripts/plot.py"), window).passed is None  # it may be in the part not kept


def test_trajectory_not_contains() -> None:
    """A negative case's "did not run scripts/bump.py": decided on the calls, undecided when calls
    were left out of the parsed window or the output could not be parsed."""
    ev = evidence(trajectory(shell("python3 scripts/summarize_csv.py sales.csv"), shell("ls", position=2)))
    ran = outcome(TrajectoryNotContains(value="summarize_csv.py"), ev)
    assert ran.passed is False and "step 1" in (ran.detail or "")
    assert outcome(TrajectoryNotContains(value="scripts/plot.py"), ev).passed is True
    assert outcome(TrajectoryNotContains(value='"command": "ls"'), ev).passed is False  # the JSON form counts too
    assert outcome(TrajectoryNotContains(value="scripts/plot.py"), evidence(trajectory())).passed is True  # no calls at all
    window = evidence(trajectory(shell("ls"), omitted_tool_calls=40))
    assert outcome(TrajectoryNotContains(value="scripts/plot.py"), window).passed is None  # it may be in the part not kept
    assert outcome(TrajectoryNotContains(value="ls"), window).passed is False  # found in the part kept: decided
    assert outcome(TrajectoryNotContains(value="x"), evidence(None)).passed is None


def test_skill_invoked_and_not_invoked() -> None:
    with_it = evidence(trajectory(invocations=(loaded(),)))
    without = evidence(trajectory())
    refused = evidence(trajectory(invocations=(loaded(status=InvocationStatus.REFUSED, message="Unknown skill"),)))
    assert outcome(SkillInvoked(skill=SKILL), with_it).passed is True
    assert outcome(SkillInvoked(skill="CSV_Summary"), with_it).passed is True  # one skill, two spellings
    assert outcome(SkillInvoked(skill=SKILL), without).passed is False
    assert outcome(SkillInvoked(skill=SKILL), refused).detail == "the load was refused: Unknown skill"
    assert outcome(SkillNotInvoked(skill=SKILL), without).passed is True
    assert outcome(SkillNotInvoked(skill=SKILL), with_it).passed is False
    assert outcome(SkillNotInvoked(skill=SKILL), refused).passed is False  # asking for it was the mistake
    assert outcome(SkillInvoked(skill=SKILL), evidence(None, answer="x")).passed is None


def test_skill_checks_of_the_evaluated_skill_do_not_apply_without_the_skill() -> None:
    ev = evidence(trajectory(), arm="without_skill")
    for assertion in (SkillInvoked(skill=SKILL), SkillNotInvoked(skill=SKILL)):
        result = outcome(assertion, ev)
        assert (result.passed, result.applicable) == (None, False)
        assert result.detail == f"not applicable: {SKILL} is not installed in the without_skill arm"
    assert outcome(SkillInvoked(skill="other-skill"), ev).applicable is True


def test_a_negative_case_passes_when_the_skill_was_not_loaded() -> None:
    c = negative_case()
    [implied] = check_typed(evidence(trajectory()), c)
    assert (implied.kind, implied.passed) == ("skill_not_invoked", True)
    assert implied.source == "evals/evals.json (implied: expected_skill is null)"
    [implied] = check_typed(evidence(trajectory(invocations=(loaded(how=InvocationMethod.SHELL_READ),))), c)
    assert implied.passed is False and implied.detail == f"the agent loaded {SKILL} via shell_read"
    [implied] = check_typed(evidence(trajectory(), arm="without_skill"), c)
    assert implied.applicable is False
    # Said explicitly, it is not added twice.
    assert len(check_typed(evidence(trajectory()), negative_case(SkillNotInvoked(skill=SKILL)))) == 1
    assert check_typed(evidence(trajectory()), case()) == []


# -- usage --------------------------------------------------------------------------------------------

def test_max_turns_tokens_and_cost() -> None:
    ev = evidence(trajectory(turns=4, usage=Usage(input_tokens=900, output_tokens=100), cost_usd=0.012))
    assert outcome(MaxTurns(value=4), ev).passed is True
    assert outcome(MaxTurns(value=3), ev).detail == "4 turns (limit 3)"
    assert outcome(MaxTurns(value=3), ev).passed is False
    assert outcome(MaxTokens(value=1000), ev).passed is True
    assert outcome(MaxTokens(value=999), ev).passed is False
    assert outcome(MaxCost(value=0.02), ev).passed is True
    assert outcome(MaxCost(value=0.01), ev).passed is False


def test_gateway_metering_wins_over_the_harness_figures() -> None:
    ev = evidence(trajectory(usage=Usage(input_tokens=10, output_tokens=10), cost_usd=0.0), metered_tokens=5000, metered_cost_usd=0.5)
    tokens, cost = outcome(MaxTokens(value=1000), ev), outcome(MaxCost(value=0.1), ev)
    assert (tokens.passed, tokens.detail) == (False, "5000 tokens metered at the gateway (limit 1000)")
    assert (cost.passed, cost.detail) == (False, "$0.5000 metered at the gateway (limit $0.1000)")
    # Metered, a cost check needs no trajectory (harnesses that report no cost at all).
    assert outcome(MaxCost(value=1.0), evidence(None, metered_cost_usd=0.5)).passed is True


def test_unrecorded_usage_is_undecided() -> None:
    ev = evidence(trajectory(turns=None, usage=Usage(), cost_usd=None))
    assert [outcome(a, ev).passed for a in (MaxTurns(value=3), MaxTokens(value=10), MaxCost(value=1.0))] == [None, None, None]


def test_descriptions_and_sources() -> None:
    result = outcome(Contains(value="3 rows", line=9), answered("3 rows"))
    assert (result.description, result.source) == ("contains(value='3 rows')", "evals/evals.json:9")
    assert outcome(Contains(value="3 rows", text="reports the row count"), answered("3 rows")).description == "reports the row count"
