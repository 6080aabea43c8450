"""Tier 3 statistics on the controller: what counts for means, lift, pass@k and pass@(R+1), the verdict,
the exit status, and how it reaches the card and results.json."""

from __future__ import annotations

import json
import math

import numpy  # noqa: F401 - see below
import pytest

from pytest_skilleval.reports import benchmark_md
from pytest_skilleval.reports import tier3 as tier3_md
from pytest_skilleval.reports.model import CheckRecord, build_run, build_skill
from pytest_skilleval.results import CheckResult
from pytest_skilleval.tier3 import stats
from pytest_skilleval.tier3.grading.model import DIMENSIONS, Grade
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.report import build, exit_status, per_case

pytest_plugins = ["pytester"]
# pytester's in-process runs drop the modules they imported; numpy's C extension cannot be loaded twice in
# one process, so it is loaded here, outside them (the statistics import it lazily)


def rec(case: str, arm: str, score: float | None, status: str = "PASSED", *, attempt: int = 1, execution: int = 1,
        agent: str = "claude-code", mode: str = "proxy", isolated: bool = True, dims: dict[str, float | None] | None = None) -> TrialRecord:
    dimensions = dims if dims is not None else dict.fromkeys(DIMENSIONS, score)
    grade = Grade(status=status, dimensions=dimensions, score=score) if status != "SKIPPED" else None  # type: ignore[arg-type]
    return TrialRecord(skill="s", skill_name="s", skill_path="/s", case_id=case, agent=agent, arm=arm, attempt=attempt,  # type: ignore[arg-type]
                       execution=execution, status=status, grade=grade, mode=mode, isolated=isolated, sandbox="local: test",  # type: ignore[arg-type]
                       tokens_in=100, tokens_out=10, cost_usd=0.01, cli_seconds=1.0, total_seconds=1.25, dataset_digest="sha256:abc")


def test_means_are_per_case_then_per_arm_and_reruns_do_not_count() -> None:
    rows = [rec("a", "with_skill", 1.0, attempt=1), rec("a", "with_skill", 0.0, "FAILED", attempt=2),
            rec("a", "with_skill", 1.0, attempt=2, execution=2),  # a rerun: pass@(R+1) only
            rec("b", "with_skill", 1.0), rec("a", "without_skill", 0.0, "FAILED"), rec("b", "without_skill", 0.5, "FAILED")]
    report = build(rows, blocking=False, reruns=1)
    arm = report.agents[0].arms["with_skill"]
    assert per_case(rows[:4], "overall") == {"a": 0.5, "b": 1.0}
    assert arm.measures["overall"] == pytest.approx(0.75)  # not 0.667 (per trial) nor 0.75+rerun
    assert arm.trials == 4 and arm.passed == 3 and arm.failed == 1
    assert arm.tokens_in == 400 and arm.cost_usd == pytest.approx(0.04)
    assert arm.cli_seconds == pytest.approx(1.0) and arm.plugin_seconds == pytest.approx(0.25)
    # pass@(R+1): case a's attempt 2 failed, then its rerun passed
    assert arm.reruns is not None and arm.reruns.k == 2
    assert {c.case: (c.attempts, c.passed) for c in arm.reruns.cases} == {
        "a#a1": ([True], True), "a#a2": ([False, True], True), "b#a1": ([True], True)}


def test_lift_is_over_the_paired_per_case_means() -> None:
    rows = [rec(c, "with_skill", w) for c, w in (("a", 1.0), ("b", 0.8), ("c", 0.6))]
    rows += [rec(c, "without_skill", w, "FAILED") for c, w in (("a", 0.2), ("b", 0.8), ("c", 0.1))]
    rows.append(rec("d", "with_skill", 1.0))  # unpaired: left out of the lift
    overall = next(r for r in build(rows, blocking=False, reruns=0).agents[0].lift if r.measure == "overall")
    expected = stats.lift({"a": 1.0, "b": 0.8, "c": 0.6, "d": 1.0}, {"a": 0.2, "b": 0.8, "c": 0.1})
    assert overall.delta == pytest.approx(expected.delta) and (overall.ci_low, overall.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    assert overall.n == 3 and overall.unpaired == 1
    assert overall.band == "NEUTRAL" and overall.without_skill == pytest.approx(1.1 / 3)  # +43 points, but the interval spans 0


def test_pass_at_k_uses_first_executions_of_every_attempt() -> None:
    outcomes = {"a": [True, False, False], "b": [False, False, False], "c": [True, True, True]}
    rows = [rec(case, "with_skill", 1.0 if ok else 0.0, "PASSED" if ok else "FAILED", attempt=n + 1)
            for case, seq in outcomes.items() for n, ok in enumerate(seq)]
    arm = build(rows, blocking=False, reruns=0).agents[0].arms["with_skill"]
    assert [p.k for p in arm.pass_at_k] == [1, 3] and arm.reruns is None
    at1, at3 = arm.pass_at_k
    assert at1.pass_at_k == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert at3.pass_at_k == pytest.approx((1 + 0 + 1) / 3) and at3.pass_hat_k == pytest.approx(1 / 3)
    assert at3.pass_at_k == pytest.approx(math.fsum(stats.pass_at_k(3, sum(s), 3) or 0 for s in outcomes.values()) / 3)


def test_errors_are_missing_not_zero_and_make_the_evidence_incomplete() -> None:
    rows = [rec("a", "with_skill", 1.0), rec("b", "with_skill", None, "ERROR", dims=dict.fromkeys(DIMENSIONS)),
            rec("a", "without_skill", 0.0, "FAILED"), rec("c", "with_skill", None, "SKIPPED")]
    report = build(rows, blocking=True, reruns=0)
    arm = report.agents[0].arms["with_skill"]
    assert arm.measures["overall"] == 1.0 and arm.errors == 1 and arm.skipped == 1
    assert report.status() == "INCOMPLETE" and not report.publication_evidence
    assert report.trials == 3 and report.skipped == 1


@pytest.mark.parametrize(("with_score", "blocking", "mode", "word"), [
    (0.9, False, "proxy", "PASS"), (0.45, False, "proxy", "NEUTRAL"), (0.2, True, "proxy", "FAIL"),
    (0.2, False, "proxy", "FAIL (advisory)"), (0.9, False, "scripted", "PASS (harness check)")])
def test_verdict_and_tier_status(with_score: float, blocking: bool, mode: str, word: str) -> None:
    rows = [rec("a", "with_skill", with_score, mode=mode), rec("a", "without_skill", 0.1, "FAILED", mode=mode)]
    report = build(rows, blocking=blocking, reruns=0)
    assert report.status() == word
    assert report.publication_evidence == (word == "PASS")


def test_scripted_or_unsandboxed_runs_are_never_publication_evidence() -> None:
    for kw in ({"mode": "scripted"}, {"isolated": False}):
        rows = [rec("a", "with_skill", 1.0, **kw), rec("a", "without_skill", 0.0, "FAILED", **kw)]  # type: ignore[arg-type]
        report = build(rows, blocking=False, reruns=0)
        assert report.verdict == "PASS" and not report.publication_evidence


def test_exit_status_rules() -> None:
    passing = build([rec("a", "with_skill", 1.0)], blocking=True, reruns=0)
    failing = build([rec("a", "with_skill", 0.1, "FAILED")], blocking=True, reruns=0)
    assert exit_status(1, [True, True], [failing], block=False) == 0  # only trials that failed their case: advisory
    assert exit_status(1, [True, False], [passing], block=False) == 1  # something else failed too
    assert exit_status(0, [], [failing], block=True) == 1  # blocking: a FAIL verdict fails the run
    assert exit_status(1, [True], [passing], block=True) == 0  # blocking looks at the verdict, not single trials
    assert exit_status(2, [True], [failing], block=True) == 2  # an interrupted run stays interrupted


def _checks() -> list[CheckRecord]:
    return [CheckRecord(blocking=True, result=CheckResult(check="schema", tier=1)),
            CheckRecord(blocking=True, result=CheckResult(check="dedup", tier=2))]


def test_card_sections_and_publication() -> None:
    rows = [rec("a", "with_skill", 1.0), rec("a", "without_skill", 0.0, "FAILED"), rec("a", "without_skill", 0.0, "FAILED", execution=2),
            rec("a", "without_skill", 0.0, "FAILED", execution=3)]
    real = build_skill("s", "s", "/s", _checks(), build(rows, blocking=False, reruns=2))
    assert real.recommended_for_publication and real.tiers["3"].status == "PASS", real.tier3.publication_gaps()  # type: ignore[union-attr]
    scripted = build_skill("s", "s", "/s", _checks(), build([r.model_copy(update={"mode": "scripted"}) for r in rows], blocking=False, reruns=2))
    assert not scripted.recommended_for_publication and scripted.verdict == "PASS"
    run = build_run([scripted], tool={"name": "pytest-skilleval", "version": "0"}, generated_at="2026-01-01T00:00:00", complete=True,
                    exit_status=0, settings={})
    card = benchmark_md.render(scripted, run)
    assert "harness check — not a model measurement" in card and "Recommended for publication" not in card
    assert "| Overall | 0% → 100% (+100 points, too few cases for an interval, n=1) |" in card  # baseline → skill (lift)
    assert "pass@3 (reruns) 0% (0/1 cases)" in card and "pass@1 100%" in card  # pass@(R+1) and pass@k per arm
    assert card.count("| a | without_skill | a1 |") == 3  # every attempt, reruns included
    assert "Dataset digest: `sha256:abc`" in card and "Sandbox: local: test" in card
    assert json.loads(run.model_dump_json())["skills"][0]["tier3"]["agents"][0]["agent"] == "claude-code"
    blocked = build_skill("s", "s", "/s", _checks(), build([rec("a", "with_skill", 0.1, "FAILED")], blocking=True, reruns=0))
    assert blocked.verdict == "FAIL" and blocked.tiers["3"].failed_checks == ["claude-code"]
    advisory = build_skill("s", "s", "/s", _checks(), build([rec("a", "with_skill", 0.1, "FAILED")], blocking=False, reruns=0))
    assert advisory.verdict == "PASS" and advisory.tiers["3"].status == "FAIL (advisory)"


CONTROLLER_TESTS = '''
import pytest
from pytest_skilleval.tier3.grading.model import DIMENSIONS, Grade
from pytest_skilleval.tier3.record import TRIAL_PROPERTY, TrialRecord

def publish(record_property, case, arm, score, status):
    grade = Grade(status=status, dimensions=dict.fromkeys(DIMENSIONS, score), score=score)
    record = TrialRecord(skill="demo", skill_name="demo", skill_path="/demo", case_id=case, agent="claude-code", arm=arm,
                         status=status, grade=grade, mode="proxy", isolated=True)
    record_property(TRIAL_PROPERTY, record.model_dump_json())
    if status == "FAILED":
        pytest.fail("the trial failed its case")

@pytest.mark.parametrize("case", ["a", "b"])
def test_with(record_property, case):
    publish(record_property, case, "with_skill", SCORE, "PASSED" if SCORE >= 0.5 else "FAILED")

@pytest.mark.parametrize("case", ["a", "b"])
def test_without(record_property, case):
    publish(record_property, case, "without_skill", 0.0, "FAILED")
'''


@pytest.mark.parametrize(("score", "flags", "code"), [(0.9, [], 0), (0.1, [], 0), (0.9, ["--block-on-agent-eval"], 0),
                                                      (0.1, ["--block-on-agent-eval"], 1),
                                                      (0.1, ["--block-on-agent-eval", "-n", "2"], 1)])
def test_controller_aggregates_across_workers_and_settles_the_exit_status(pytester: pytest.Pytester, score: float, flags: list[str],
                                                                          code: int) -> None:
    pytester.makepyfile(test_trials=CONTROLLER_TESTS.replace("SCORE", repr(score)))
    run = pytester.runpytest_subprocess if "-n" in flags else pytester.runpytest  # xdist once: the records cross workers
    result = run("-p", "no:cacheprovider", *flags)
    assert result.ret == code, result.stdout.str()[-3000:]
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    tier3 = data["skills"][0]["tier3"]
    arms = tier3["agents"][0]["arms"]
    assert arms["with_skill"]["trials"] == 2 and arms["without_skill"]["failed"] == 2
    assert tier3["verdict"] == ("PASS" if score > 0.5 else "FAIL") and data["exit_status"] == code
    assert "tier3 demo · claude-code: overall" in result.stdout.str()


def _grade_rec(case: str, arm: str, dims: dict[str, float | None], status: str = "PASSED", **kw: object) -> TrialRecord:
    scored = [v for v in dims.values() if v is not None]
    return rec(case, arm, sum(scored) / len(scored) if scored else None, status, dims={d: dims.get(d) for d in DIMENSIONS}, **kw)  # type: ignore[arg-type]


def test_identical_behaviour_in_both_arms_is_zero_overall_lift() -> None:
    # Regression (issue 10, item 3): a99a1ca subtracted a 4-dimension baseline mean from a 5-dimension
    # with-skill mean, so identical behaviour read −12 points; Discoverability is now apart.
    same = {"security": 1.0, "correctness": 0.8, "effectiveness": 0.8, "efficiency": 0.8}
    rows = [_grade_rec(c, "with_skill", {**same, "discoverability": 0.2}) for c in "abc"]
    rows += [_grade_rec(c, "without_skill", same) for c in "abc"]
    agent = build(rows, blocking=False, reruns=0).agents[0]
    overall = next(r for r in agent.lift if r.measure == "overall")
    assert overall.delta == pytest.approx(0.0) and overall.dimensions == ["security", "correctness", "effectiveness", "efficiency"]
    assert agent.arms["with_skill"].measures["overall"] == pytest.approx(agent.arms["without_skill"].measures["overall"])
    discoverability = next(r for r in agent.lift if r.measure == "discoverability")
    assert discoverability.delta is None and agent.arms["with_skill"].measures["discoverability"] == pytest.approx(0.2)


def _card(tier3_rows: list[TrialRecord], **build_kw: object) -> tuple[object, str]:
    skill = build_skill("s", "s", "/s", _checks(), build(tier3_rows, blocking=False, reruns=0, **build_kw))  # type: ignore[arg-type]
    run = build_run([skill], tool={"name": "pytest-skilleval", "version": "0"}, generated_at="2026-01-01T00:00:00", complete=True,
                    exit_status=0, settings={})
    return skill, benchmark_md.render(skill, run)


def test_cells_show_the_numbers_the_verdict_reads_and_the_unpaired_count() -> None:
    # Regression (issue 10, item 5): the with-skill Security over all four cases is 25 % (a FAIL verdict),
    # but a99a1ca's cell showed the one paired case: "100% → 100%". Unpaired cases were counted nowhere.
    good = dict.fromkeys(DIMENSIONS, 1.0)
    rows = [_grade_rec("a", "with_skill", good), _grade_rec("a", "without_skill", {**good, "discoverability": None}, "FAILED")]
    rows += [_grade_rec(c, "with_skill", {**good, "security": 0.0}) for c in "bcd"]
    skill, card = _card(rows)
    assert skill.tier3.agents[0].verdict == "FAIL"  # type: ignore[attr-defined]
    line = next(ln for ln in card.splitlines() if ln.startswith("| Security |"))
    assert "100% → 25%" in line and "3 unpaired" in line, line
    trials = next(ln for ln in card.splitlines() if ln.startswith("| Trials |"))
    assert "with_skill: 4 passed, 0 failed" in trials and "1 paired case(s), 3 unpaired" in trials, trials


def test_a_tier3_where_nothing_ran_is_not_run_and_has_no_verdict() -> None:
    # Regression (issue 10, item 5): every trial skipped read "PASS (Tier 1, Tier 2, Tier 3)", "not run: none".
    rows = [rec(c, arm, None, "SKIPPED") for c in "ab" for arm in ("with_skill", "without_skill")]
    skill, card = _card(rows)
    assert skill.tier3.status() == "NOT RUN" and skill.tier3.verdict is None  # type: ignore[attr-defined]
    assert skill.tiers_not_run == [3] and not skill.recommended_for_publication  # type: ignore[attr-defined]
    assert "PASS (Tier 1, Tier 2, Tier 3)" not in card and "not run: none" not in card
    assert "PASS (Tier 1, Tier 2)" in card and "No trial ran (4 skipped)" in card
    assert tier3_md.terminal_lines("s", skill.tier3) == ["tier3 s: NOT RUN — no trial ran (4 skipped); no verdict"]  # type: ignore[arg-type]


def test_publication_needs_five_dimensions_a_real_model_a_sandbox_and_every_trial() -> None:
    # Regression (issue 10, item 6): a99a1ca recommended publication with two dimensions never scored (no
    # judge) and with most trials skipped by the budget.
    no_judge = {"security": 1.0, "discoverability": 1.0, "efficiency": 1.0}
    rows = [_grade_rec("a", "with_skill", no_judge), _grade_rec("a", "without_skill", {"security": 1.0, "efficiency": 0.5}, "FAILED")]
    skill, card = _card(rows)
    assert not skill.recommended_for_publication  # type: ignore[attr-defined]
    assert "all five dimensions scored (claude-code: Correctness, Effectiveness not scored)" in card
    good = dict.fromkeys(DIMENSIONS, 1.0)
    rows = [_grade_rec("a", "with_skill", good), _grade_rec("a", "without_skill", {**good, "discoverability": None}, "FAILED")]
    rows += [rec(c, arm, None, "SKIPPED") for c in "bcde" for arm in ("with_skill", "without_skill")]
    skill, card = _card(rows)
    assert not skill.recommended_for_publication  # type: ignore[attr-defined]
    assert "every case × arm × attempt run and scored (2 of 10: 8 skipped" in card
    skill, card = _card([r.model_copy(update={"isolated": False, "mode": "scripted"}) for r in rows[:2]])
    assert "a real model (this run was scripted" in card and "a sandbox (trials ran unsandboxed)" in card


def test_the_card_states_the_power_of_the_run() -> None:
    rows = [_grade_rec(c, "with_skill", dict.fromkeys(DIMENSIONS, w)) for c, w in zip("abcde", (0.9, 0.8, 1.0, 0.7, 0.9), strict=True)]
    rows += [_grade_rec(c, "without_skill", {**dict.fromkeys(DIMENSIONS, w), "discoverability": None}, "FAILED")
             for c, w in zip("abcde", (0.5, 0.6, 0.4, 0.8, 0.3), strict=True)]
    skill, card = _card(rows)
    power = skill.tier3.agents[0].power  # type: ignore[attr-defined]
    assert power is not None and power.n == 5 and power.detectable is not None and power.cases_for_target is not None
    assert f"is {power.detectable * 100:.0f} points (80% power); a 10-point lift needs ≈ {power.cases_for_target} cases × 1 attempt" in card
    _, small = _card(rows[:1] + rows[5:6])
    assert "Power (Claude Code): too few cases for an interval (n=1 paired" in small

def _report(nodeid: str, when: str, outcome: str, trials: list[TrialRecord]) -> pytest.TestReport:
    from pytest_skilleval.tier3.record import TRIAL_PROPERTY

    return pytest.TestReport(nodeid=nodeid, location=("x", 0, nodeid), keywords={}, outcome=outcome, longrepr=None, when=when,  # type: ignore[arg-type]
                             user_properties=[(TRIAL_PROPERTY, t.model_dump_json()) for t in trials])


def _exit_after(reports: list[pytest.TestReport]) -> int:
    from pytest_skilleval.reports.session import ReportSession

    session = ReportSession(config=None, settings=None)  # type: ignore[arg-type]  # logreport reads neither
    for report in reports:
        session.pytest_runtest_logreport(report)
    built = build([rec("a", "with_skill", 0.1, "FAILED")], blocking=False, reruns=0)
    return exit_status(1, session.failures.values(), [built], block=False)


def test_advisory_trial_failures_never_hide_a_real_failure_in_the_same_run() -> None:
    trial_fail = _report("s::tier3::a[claude-code-with_skill]", "call", "failed", [rec("a", "with_skill", 0.1, "FAILED")])
    real_fail = _report("s::tier1::schema", "call", "failed", [])
    assert _exit_after([trial_fail]) == 0  # only a trial that failed its case: advisory
    assert _exit_after([trial_fail, real_fail]) == 1
    assert _exit_after([real_fail, trial_fail]) == 1


def test_a_trial_teardown_error_or_error_trial_fails_the_run() -> None:
    failed_trial = rec("a", "with_skill", 0.1, "FAILED")
    call = _report("s::tier3::a[claude-code-with_skill]", "call", "failed", [failed_trial])
    teardown = _report("s::tier3::a[claude-code-with_skill]", "teardown", "failed", [failed_trial])
    assert _exit_after([call, teardown]) == 1  # the sandbox broke on the way out: not the skill's advisory failure
    errored = _report("s::tier3::b[claude-code-with_skill]", "call", "failed", [rec("b", "with_skill", None, "ERROR")])
    assert _exit_after([call, errored]) == 1


@pytest.mark.parametrize("status", ["PASSED", "NOT_SCORED", "SKIPPED", "ERROR"])
def test_a_failed_trial_item_whose_record_is_not_a_failed_case_fails_the_run(status: str) -> None:
    # the item failed after publishing a record that did not fail its case (a guard that ran after the trial): a real failure
    report = _report("s::tier3::a[claude-code-with_skill]", "call", "failed", [rec("a", "with_skill", 1.0 if status == "PASSED" else None, status)])
    assert _exit_after([report]) == 1


def test_the_aa_noise_floor_is_reported_beside_the_real_lift() -> None:
    base = {"security": 1.0, "correctness": 0.5, "effectiveness": 0.5, "efficiency": 1.0}
    rows = [_grade_rec(c, "with_skill", {**base, "correctness": 0.9, "effectiveness": 0.9, "discoverability": 1.0}) for c in "abc"]
    rows += [_grade_rec(c, "without_skill", base, "FAILED") for c in "abc"]
    rows += [_grade_rec(c, "without_skill_aa", {**base, "correctness": 0.6 if c == "a" else 0.5}, "FAILED") for c in "abc"]
    skill, card = _card(rows)
    agent = skill.tier3.agents[0]  # type: ignore[attr-defined]
    floor = agent.noise_floor
    assert floor is not None and floor.n == 3 and floor.delta == pytest.approx(0.1 / 3 / 4)  # one case, one dimension, +0.1
    assert floor.dimensions == ["security", "correctness", "effectiveness", "efficiency"]
    real = next(r for r in agent.lift if r.measure == "overall")
    assert real.delta == pytest.approx(0.2) and "without_skill_aa" in agent.arms
    assert "- A/A noise floor (Claude Code): the without_skill arm run twice differs by +1 points (95% CI" in card
    assert "; the real overall lift: +20 points." in card and "A/A: the without_skill arm ran twice" in card
    plain, _ = _card(rows[:6])
    assert plain.tier3.agents[0].noise_floor is None  # type: ignore[attr-defined]


def test_results_json_and_the_card_carry_what_reproduces_the_numbers() -> None:
    # Regression (issue 10, item 9): a99a1ca recorded neither the judge and its prompt version, nor the
    # interval method, the trial timeout and max turns, per-trial dimensions, the plugin's commit, Python
    # or NumPy.
    from pytest_skilleval.reports.provenance import tool_info

    dims = dict.fromkeys(DIMENSIONS, 0.9)
    judged = Grade(status="PASSED", dimensions=dims, score=0.9, judged=True, judge_model="judge-x", judge_prompt_version="trial-grade/2",
                   judge_votes=[dims, dims, dims], judge_agreement=1.0)
    rows = [rec("a", "with_skill", 0.9).model_copy(update={"grade": judged}), rec("a", "without_skill", 0.1, "FAILED")]
    skill = build_skill("s", "s", "/s", _checks(), build(rows, blocking=False, reruns=0, timeout_s=300.0, max_turns=25, judge_votes=3))
    run = build_run([skill], tool=tool_info(), generated_at="2026-01-01T00:00:00", complete=True, exit_status=0, settings={})
    data = json.loads(run.model_dump_json())
    assert data["schema_version"] == "1.1" and {"commit", "python", "numpy", "version"} <= set(data["tool"])
    t3 = data["skills"][0]["tier3"]
    assert t3["judge"]["models"] == ["judge-x"] and t3["judge"]["prompt_versions"] == ["trial-grade/2"] and t3["judge"]["votes"] == 3
    assert t3["interval"]["method"].startswith("student-t") and t3["interval"]["seed"] is None and t3["interval"]["resamples"] is None
    assert (t3["trial_timeout_s"], t3["max_turns"]) == (300.0, 25)
    assert t3["agents"][0]["attempts"][0]["dimensions"] == dims
    card = benchmark_md.render(skill, run)
    assert "- Judge: `judge-x`, prompt trial-grade/2; 3 vote(s) per trial, which agreed on 100% of items; 1 trial(s) judged" in card
    assert "- Trial limits: timeout 300 s, max turns 25" in card and "- Lift interval: student-t on paired case differences" in card
    assert f"(commit `{data['tool']['commit']}`; Python {data['tool']['python']}, NumPy {data['tool']['numpy']})" in card
    assert "| 0.90 | 0.90/0.90/0.90/0.90/0.90 |" in card  # per-trial dimensions in the attempts table


def test_a_judge_that_disagrees_with_itself_is_flagged() -> None:
    dims = dict.fromkeys(DIMENSIONS, 0.9)
    shaky = Grade(status="PASSED", dimensions=dims, score=0.9, judged=True, judge_model="judge-x", judge_votes=[dims, dims, dims],
                  judge_agreement=0.4)
    rows = [rec("a", "with_skill", 0.9).model_copy(update={"grade": shaky}), rec("a", "without_skill", 0.1, "FAILED")]
    skill, card = _card(rows, judge_votes=3)
    assert skill.tier3.judge.flagged  # type: ignore[attr-defined]
    assert "**The judge disagrees with itself**: its 3 votes per trial agreed on only 40% of items" in card


def test_overall_lift_is_with_minus_without_and_its_interval_is_over_the_same_case_differences() -> None:
    # Regression (make eval, csv-summary): a negative case scores no Effectiveness, so the mean of the
    # per-dimension lifts (+42) was not the difference of the arm means shown beside it (67% → 100%, +33),
    # and the interval came from the per-case differences (centred on +33), not from its own point.
    shared = ("security", "correctness", "effectiveness", "efficiency")
    rows = [_grade_rec(c, "with_skill", {**dict.fromkeys(shared, 1.0), "discoverability": 1.0}) for c in "ab"]
    rows.append(_grade_rec("neg", "with_skill", {"security": 1.0, "correctness": 1.0, "efficiency": 1.0, "discoverability": 1.0}))
    rows += [_grade_rec(c, "without_skill", {"security": 1.0, "correctness": 0.0, "effectiveness": 0.0, "efficiency": 1.0}, "FAILED")
             for c in "ab"]
    rows.append(_grade_rec("neg", "without_skill", {"security": 1.0, "correctness": 1.0, "efficiency": 1.0}))
    skill, card = _card(rows)
    agent = skill.tier3.agents[0]  # type: ignore[attr-defined]
    overall = next(r for r in agent.lift if r.measure == "overall")
    with_arm, without_arm = (agent.arms[arm].measures["overall"] for arm in ("with_skill", "without_skill"))
    assert (overall.with_skill, overall.without_skill) == pytest.approx((with_arm, without_arm))
    assert overall.delta == pytest.approx(overall.with_skill - overall.without_skill)
    with_case = per_case(rows[:3], "overall", agent.overall_dimensions)
    without_case = per_case(rows[3:], "overall", agent.overall_dimensions)
    differences = [with_case[c] - without_case[c] for c in sorted(with_case)]  # type: ignore[operator]
    assert overall.delta == pytest.approx(sum(differences) / len(differences))
    assert (overall.ci_low, overall.ci_high) == pytest.approx(stats.paired_interval(differences))
    line = next(ln for ln in card.splitlines() if ln.startswith("| Overall |"))
    assert "67% → 100% (+33 points" in line, line
