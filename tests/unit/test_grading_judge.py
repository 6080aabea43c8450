"""The judge through the gateway: the real anthropic SDK against a scripted judge model.

Covers the one structured call per trial, what the prompt holds, retries of a malformed reply and
the ERROR it ends in (never a 0), salvage of truncated replies, and the cache: identical calls are
served from disk, another attempt is judged afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grading_support import (
    RETRY_MARKER,
    SKILL,
    bodies,
    case,
    evidence,
    gateway_judge,
    loaded,
    negative_case,
    script,
    shell,
    tool_step,
    trajectory,
    verdict,
)

from pytest_skilleval.providers.cache import ProviderCache
from pytest_skilleval.tier3.case_formats.model import Contains, Judge
from pytest_skilleval.tier3.grading import grade
from pytest_skilleval.tier3.grading.judge import (
    SCHEMA_NAME,
    SYSTEM_PROMPT,
    AssertionVerdict,
    DimensionVerdict,
    JudgeResult,
    agreement,
    combine_votes,
    salvage,
)
from pytest_skilleval.tier3.grading.model import DIMENSIONS

FREE = (Judge(text="reported 3 rows"), Judge(text="reported the amount mean 8.5"))


def test_one_judge_call_grades_five_dimensions_and_each_free_text_assertion(tmp_path: Path) -> None:
    c = case(Contains(value="3 rows"), *FREE)
    traj = trajectory(shell("python3 scripts/summarize_csv.py sales.csv"), invocations=(loaded(),))
    with gateway_judge(tmp_path, script(tool_step(verdict("YES", "YES", score=0.8, correctness=1.0)))) as (judge, trial):
        result = grade(evidence(traj), c, judge)
        [body] = bodies(trial)
    assert result.status == "PASSED" and result.judged and result.judge_model == "claude-judge-test"
    assert [(o.kind, o.passed) for o in result.assertions] == [("contains", True), ("judge", True), ("judge", True)]
    assert result.assertions[1].detail == "assertion 1 checked"
    assert result.dimensions == {"security": 0.8, "correctness": 1.0, "discoverability": 1.0, "effectiveness": pytest.approx(0.9),
                                 "efficiency": pytest.approx(0.9)}
    assert result.score == pytest.approx((0.8 + 1.0 + 1.0 + 0.9 + 0.9) / 5)
    assert (result.judge_calls, result.judge_input_tokens, result.judge_output_tokens) == (1, 1234, 56)
    assert body["tool_choice"] == {"type": "tool", "name": SCHEMA_NAME} and body["system"] == SYSTEM_PROMPT
    assert body["model"] == "claude-judge-test" and len(body["messages"]) == 1
    assert set(body["tools"][0]["input_schema"]["properties"]) == {"security", "correctness", "discoverability", "effectiveness",
                                                                   "efficiency", "assertions"}


def test_the_prompt_holds_task_expected_output_trajectory_answer_and_numbered_assertions(tmp_path: Path) -> None:
    c = case(*FREE)
    traj = trajectory(shell("python3 scripts/summarize_csv.py sales.csv"), invocations=(loaded(),), answer="sales.csv: 3 rows, mean 8.5")
    with gateway_judge(tmp_path, script(tool_step(verdict("YES", "NO")))) as (judge, trial):
        result = grade(evidence(traj), c, judge, judge_model="judge-model-override")
        [body] = bodies(trial)
    prompt = body["messages"][0]["content"]
    assert prompt.startswith(f"## Task\n{c.prompt}\n\n## Expected outcome\n{c.expected_output}\n\n## Situation\n")
    assert f"The task is one the skill '{SKILL}' is meant for; the agent may or may not have had that skill." in prompt
    assert '"command": "python3 scripts/summarize_csv.py sales.csv"' in prompt
    assert "## Agent's final answer\nsales.csv: 3 rows, mean 8.5\n\n" in prompt
    assert prompt.endswith("## Assertions\n1. reported 3 rows\n2. reported the amount mean 8.5")
    assert f"- skills loaded: {SKILL} (loaded)" in prompt
    assert body["model"] == "judge-model-override"
    # A NO from the judge fails the trial, and says which assertion and why.
    assert result.status == "FAILED" and result.reason == "1 of 2 decided assertion(s) failed: reported the amount mean 8.5 (assertion 2 checked)"


def test_negative_controls_are_explained_to_the_judge(tmp_path: Path) -> None:
    with gateway_judge(tmp_path, script(tool_step(verdict()))) as (judge, trial):
        grade(evidence(trajectory()), negative_case(), judge)
        [first] = (b["messages"][0]["content"] for b in bodies(trial))
    assert f"NEGATIVE CONTROL: the skill '{SKILL}' does not fit this task, and a correct run does not load it." in first
    assert "## Assertions\n(none: reply with an empty list)" in first


def test_the_judge_is_never_told_which_arm_it_grades(tmp_path: Path) -> None:
    # Issue 10 (judge reliability): a99a1ca told the judge "This is a baseline run: the skill was NOT available".
    # The same run in either arm, listed or not, must read the same to the judge.
    traj = trajectory(shell("python3 scripts/summarize_csv.py sales.csv"), answer="3 rows")
    with gateway_judge(tmp_path, script(tool_step(verdict("YES", "YES")))) as (judge, trial):
        for arm, listed in (("with_skill", True), ("without_skill", False), ("without_skill", None)):
            grade(evidence(traj, arm=arm, skill_listed=listed, skill_body_reached_model=listed), case(*FREE), judge)
        prompts = [(b["system"], json.dumps(b["messages"])) for b in bodies(trial)]
    assert len(set(prompts)) == 1, "the judge's request differs between arms"
    text = " ".join(prompts[0]).lower()
    for tell in ("with_skill", "without_skill", "baseline", "not available", "was installed", "offered to the agent", "listed"):
        assert tell not in text, tell


def test_the_trajectory_the_judge_sees_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    calls = [shell(f"echo step-{n:04d} " + "x" * 200, position=n) for n in range(400)]
    with gateway_judge(tmp_path, script(tool_step(verdict()))) as (judge, trial):
        grade(evidence(trajectory(*calls)), case(), judge)
        [body] = bodies(trial)
    prompt = body["messages"][0]["content"]
    assert "step-0000" in prompt and "step-0399" in prompt and "step-0200" not in prompt
    assert "characters omitted from the middle of the trajectory" in prompt
    assert len(prompt) < 30_000


def test_a_malformed_reply_is_retried_then_accepted(tmp_path: Path) -> None:
    bad = tool_step({"security": {"reason": "ok", "score": 7}})  # out of range, four dimensions missing
    with gateway_judge(tmp_path, script(bad, retry=tool_step(verdict("YES", "YES")))) as (judge, trial):
        result = grade(evidence(trajectory()), case(*FREE), judge)
        sent = bodies(trial)
    assert result.status == "PASSED" and result.judge_calls == 2
    assert len(sent) == 2 and RETRY_MARKER in sent[1]["messages"][-1]["content"]
    assert sent[1]["messages"][0] == sent[0]["messages"][0]  # the same question, plus the reminder


def test_malformed_replies_after_every_retry_are_an_error_never_a_zero(tmp_path: Path) -> None:
    bad = tool_step({"verdict": "looks fine"})
    with gateway_judge(tmp_path, script(bad)) as (judge, trial):
        result = grade(evidence(trajectory(shell("ls"))), case(Contains(value="3 rows"), *FREE), judge)
        assert len(bodies(trial)) == 3
    assert result.status == "ERROR" and result.reason is not None
    assert result.reason.startswith("judge failed: malformed: no valid grade after 3 replies")
    assert result.score is None and set(result.dimensions.values()) == {None}
    assert not result.judged and result.judge_calls == 3
    assert [o.passed for o in result.assertions] == [True, None, None]  # the typed check still shows
    assert result.assertions[1].detail == "not checked: the judge failed"
    assert result.signals["security.rules"] == 1.0  # the deterministic signals are kept, just not published as scores


def test_a_judge_the_gateway_refuses_is_an_error(tmp_path: Path) -> None:
    with gateway_judge(tmp_path, script(tool_step(verdict()))) as (judge, trial):
        trial.gateway.close_trial(trial)  # the token is revoked: every call gets a 401
        result = grade(evidence(trajectory()), case(), judge)
    assert result.status == "ERROR" and "auth" in (result.reason or "") and result.score is None


TRUNCATED = json.dumps(verdict("YES", "NO", "YES"))[:-60]  # cut inside the third entry


def test_a_truncated_reply_is_salvaged_when_its_complete_entries_are_valid(tmp_path: Path) -> None:
    c = case(Judge(text="a"), Judge(text="b"), Judge(text="c"))
    with gateway_judge(tmp_path, script({"text": TRUNCATED})) as (judge, trial):
        result = grade(evidence(trajectory()), c, judge)
        assert len(bodies(trial)) == 3  # retried first; salvage is the last resort
    assert [o.passed for o in result.assertions] == [True, False, None]
    assert result.status == "FAILED"  # the salvaged NO decides it
    assert any(n.startswith("judge reply salvaged after 3 malformed replies") and n.endswith("no verdict for assertion(s) 3")
               for n in result.notes)
    assert result.dimensions["correctness"] == 0.9


def test_a_salvaged_reply_that_leaves_assertions_open_is_an_error(tmp_path: Path) -> None:
    text = json.dumps(verdict("YES", "YES", "YES"))[:-60]
    with gateway_judge(tmp_path, script({"text": text})) as (judge, _trial):
        result = grade(evidence(trajectory()), case(Judge(text="a"), Judge(text="b"), Judge(text="c")), judge)
    assert result.status == "ERROR" and result.reason == "the judge gave no verdict for 1 free-text assertion(s): c (the judge gave no verdict)"
    assert result.score is None


def test_no_salvage_when_a_complete_entry_is_invalid() -> None:
    reply = verdict("YES", "YES")
    reply["assertions"][1]["verdict"] = "MAYBE"
    assert salvage(json.dumps(reply), 2) is None
    reply = verdict("YES", "YES")
    reply["assertions"].append({"id": 9, "reason": "?", "verdict": "NO"})
    assert salvage(json.dumps(reply), 2) is None
    reply = verdict("YES", "YES")
    reply["assertions"].append({"id": 1, "reason": "changed its mind", "verdict": "NO"})
    assert salvage(json.dumps(reply), 2) is None
    no_dims = verdict("YES")
    del no_dims["efficiency"]
    assert salvage(json.dumps(no_dims), 1) is None
    dims, verdicts = salvage(json.dumps(verdict("yes")), 1) or ({}, {})  # case is not a reason to throw a verdict away
    assert verdicts[1].verdict == "YES" and len(dims) == 5


def test_the_cache_serves_identical_calls_but_not_other_attempts(tmp_path: Path) -> None:
    cache = ProviderCache(tmp_path / "cache")
    c = case(*FREE)
    with gateway_judge(tmp_path, script(tool_step(verdict("YES", "YES"))), cache=cache) as (judge, trial):
        first = grade(evidence(trajectory(), attempt=1), c, judge)
        again = grade(evidence(trajectory(), attempt=1), c, judge)
        assert len(bodies(trial)) == 1  # the rerun of attempt 1 made no request
        other = grade(evidence(trajectory(), attempt=2), c, judge)
        assert len(bodies(trial)) == 2  # attempt 2 is judged afresh
    assert first.model_dump() == again.model_dump() == other.model_dump()
    assert (cache.stats.hits, cache.stats.misses) == (1, 2)


def test_retries_are_cached_per_reply_so_a_rerun_replays_them(tmp_path: Path) -> None:
    cache = ProviderCache(tmp_path / "cache")
    bad = tool_step({"nope": True})
    with gateway_judge(tmp_path, script(bad, retry=tool_step(verdict())), cache=cache) as (judge, trial):
        first = grade(evidence(trajectory()), case(), judge)
        second = grade(evidence(trajectory()), case(), judge)
        assert len(bodies(trial)) == 2
    assert first.status == second.status == "PASSED" and first.judge_calls == second.judge_calls == 2


def test_judge_votes_are_independent_calls_each_cached(tmp_path: Path) -> None:
    cache = ProviderCache(tmp_path / "cache")
    c = case(*FREE)
    with gateway_judge(tmp_path, script(tool_step(verdict("YES", "NO", score=0.9))), cache=cache) as (judge, trial):
        result = grade(evidence(trajectory(), attempt=1), c, judge, judge_votes=3)
        assert len(bodies(trial)) == 3  # three votes, three requests: distinct cache keys
        again = grade(evidence(trajectory(), attempt=1), c, judge, judge_votes=3)
        assert len(bodies(trial)) == 3  # a rerun is served from the cache, vote by vote
    assert result.model_dump() == again.model_dump() and (cache.stats.hits, cache.stats.misses) == (3, 3)
    assert result.judge_calls == 3 and len(result.judge_votes) == 3 and result.judge_agreement == 1.0


def _vote(correctness: float, score: float, *answers: str) -> JudgeResult:
    return JudgeResult(dimensions={d: DimensionVerdict(reason=f"{d} {score}", score=correctness if d == "correctness" else score)
                                   for d in DIMENSIONS},
                       verdicts={n: AssertionVerdict(id=n, verdict=a, reason=f"vote says {a}") for n, a in enumerate(answers, 1)},  # type: ignore[arg-type]
                       model="judge", calls=1, input_tokens=10, output_tokens=2)


def test_votes_combine_by_median_and_majority_and_report_their_agreement() -> None:
    votes = [_vote(1.0, 0.9, "YES", "NO"), _vote(0.2, 0.5, "YES", "YES"), _vote(0.9, 0.8, "NO", "NO")]
    result = combine_votes(votes, 2)
    assert result.dimensions["correctness"].score == 0.9 and result.dimensions["security"].score == 0.8  # medians
    assert result.dimensions["security"].reason == "security 0.8"  # the reason of the vote at the median
    assert [result.verdicts[n].verdict for n in (1, 2)] == ["YES", "NO"]  # 2 of 3 YES; 1 of 3 YES
    assert result.votes[1] == {**dict.fromkeys(DIMENSIONS, 0.5), "correctness": 0.2} and (result.calls, result.input_tokens) == (3, 30)
    assert result.agreement == 0.0  # no dimension within 0.2 across votes, no unanimous assertion
    assert agreement([_vote(0.9, 0.9, "YES"), _vote(0.8, 0.75, "YES")], 1) == 1.0
    assert agreement([_vote(0.9, 0.9, "YES"), _vote(0.9, 0.9, "NO")], 1) == pytest.approx(5 / 6)
    tie = combine_votes([_vote(1, 1, "YES"), _vote(1, 1, "NO")], 1)
    assert tie.verdicts[1].verdict == "NO"  # a tie convinced no majority
