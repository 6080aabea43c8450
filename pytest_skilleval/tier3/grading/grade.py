"""``grade()``: one trial's evidence and its case in, a :class:`Grade` out.

The combination rules, in order (docs/grading.md explains each):

1. Typed assertions are decided first, deterministically (:mod:`.assertions`), plus the implied
   "leave the skill alone" check of a negative control and a timeout.
2. The judge (when configured and the agent produced anything) adds the five dimension scores and a
   YES/NO per free-text assertion (:mod:`.judge`); the deterministic signals (:mod:`.metrics`) are
   computed either way.
3. Status: the rules of :mod:`pytest_skilleval.tier3.outcome` — no output (no answer after
   stripping, no tool call, no workspace change) → FAILED "no output"; a failed judge → ERROR; any
   decided assertion failed → FAILED; an undecidable typed assertion or a free-text one the judge
   left open → ERROR; a free-text one left open for want of a judge → NOT_SCORED, naming it (a
   check that could not be decided is not a pass; a critical Security finding still FAILS); every
   assertion decided and passed → PASSED; no assertion at all → the task dimensions (Correctness,
   Effectiveness) against 0.5, or NOT_SCORED when neither is scored — Security and Efficiency alone
   never pass a trial.
4. Dimensions: Security = min(rules, judge); Correctness = judge, else the share of answer checks
   passed; Discoverability = routing (with_skill only), else judge; Effectiveness = mean(judge,
   free-text share), else the share of workspace/command/trajectory checks passed; Efficiency =
   mean(rules, judge). A dimension with no signal is None. Score = mean of the scored dimensions.
"""

from __future__ import annotations

from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.tier3 import outcome
from pytest_skilleval.tier3.case_formats.model import EvalCase
from pytest_skilleval.tier3.grading.answer import final_answer
from pytest_skilleval.tier3.grading.assertions import check_typed, source
from pytest_skilleval.tier3.grading.judge import PROMPT_VERSION, JudgeFailed, JudgeResult, run_judge
from pytest_skilleval.tier3.grading.metrics import Signals, deterministic
from pytest_skilleval.tier3.grading.model import DIMENSIONS, AssertionOutcome, Grade, TrialEvidence

PASS_THRESHOLD = outcome.PASS_THRESHOLD
ANSWER_KINDS = frozenset({"contains", "not_contains", "regex", "not_regex", "json_path"})
OUTCOME_KINDS = frozenset({"file_exists", "file_contains", "command", "trajectory_contains"})
NO_JUDGE = "judge not configured"
NO_OUTPUT_REASON = f"{outcome.NO_OUTPUT}: the agent gave no answer, made no tool call and changed no file in the workspace"


def grade(evidence: TrialEvidence, case: EvalCase, judge: ChatProvider | None, *, judge_model: str | None = None,
          judge_votes: int = 1) -> Grade:
    """Grade one trial. Never raises for a judge problem (that is an ERROR grade); the runner should
    not call this for infrastructure failures (use :func:`infrastructure_error`), because a trial
    with no trajectory and no answer is graded as the agent's failure."""
    answer = final_answer(evidence)
    typed = check_typed(evidence, case)
    if evidence.timed_out:
        typed.append(AssertionOutcome(kind="timeout", description="the agent finished within its time limit", passed=False,
                                      detail="the sandbox stopped the agent at its time limit"))
    signals = deterministic(evidence, case)
    tool_calls = evidence.trajectory.total_tool_calls if evidence.trajectory is not None else 0
    no_output = outcome.no_output(answer, tool_calls, evidence.workspace_changed)
    notes: list[str] = []
    result: JudgeResult | None = None
    failure: JudgeFailed | None = None
    free = case.judge_assertions()
    if no_output:
        notes.append(f"{NO_OUTPUT_REASON}; the judge was not called")
    elif judge is None:
        notes.append(f"{NO_JUDGE}: {len(free)} free-text assertion(s) not checked; Correctness and Effectiveness come only "
                     "from typed assertions, when there are any")
    else:
        try:
            result = run_judge(judge, evidence, case, answer, model=judge_model, votes=judge_votes)
            notes += result.notes
        except JudgeFailed as exc:
            failure = exc
    if result is not None:
        why_open = "the judge gave no verdict"
    else:
        why_open = "not checked: " + ("the agent produced no output" if no_output else NO_JUDGE if judge is None else "the judge failed")
    free_outcomes = _free_text(case, result, why_open)
    outcomes = typed + free_outcomes
    if evidence.arm == "with_skill" and evidence.skill_listed is False:
        notes.append(f"{case.skill} was not offered to the model in the with_skill arm (the gateway saw no listing): check the staging")
    if evidence.exit_code not in (None, 0):
        notes.append(f"the agent exited with code {evidence.exit_code}")
    if signals.findings:
        notes.append(f"{len(signals.findings)} security finding(s): " + "; ".join(str(f) for f in signals.findings[:5]))

    dims, reasons, raw = _dimensions(evidence, signals, result, typed, free_outcomes, no_output)
    if no_output:  # the judge was not called, so it cannot have failed
        decision = outcome.Decision(outcome.FAILED, NO_OUTPUT_REASON)
    else:
        decision = _status(outcomes, typed, free_outcomes, failure, result is not None, dims)
    status = decision.status
    if status == "ERROR":  # fail closed: an ERROR trial publishes no scores (raw signals stay in `signals`)
        dims = dict.fromkeys(DIMENSIONS)
    usage: dict[str, int] = {}
    if result is not None:
        usage = {"judge_calls": result.calls, "judge_input_tokens": result.input_tokens, "judge_output_tokens": result.output_tokens}
    elif failure is not None:
        usage = {"judge_calls": failure.calls}
    model = result.model if result else (judge_model or judge.model or None) if judge is not None else None
    return Grade(status=status, reason=decision.reason, cause=decision.cause, assertions=outcomes, dimensions=dims,
                 score=_mean(*dims.values()), judged=result is not None, judge_model=model, notes=notes, reasons=reasons, signals=raw,
                 judge_votes=result.votes if result else [], judge_agreement=result.agreement if result else None,
                 judge_prompt_version=PROMPT_VERSION if result else None, **usage)


def infrastructure_error(reason: str, cause: outcome.ErrorCause = "harness") -> Grade:
    """The grade of a trial that gave no evidence about the skill: ERROR with its cause, nothing scored.
    ``infra``: the model API, the upstream or the sandbox failed (retried); ``harness``: our side did."""
    return Grade(status="ERROR", reason=reason, cause=cause, notes=["not graded: the trial gave no evidence"])


def _free_text(case: EvalCase, result: JudgeResult | None, why_open: str) -> list[AssertionOutcome]:
    """One outcome per free-text assertion: the judge's YES/NO, or open (``passed=None``) saying why."""
    outcomes = []
    for number, a in enumerate(case.judge_assertions(), 1):
        verdict = result.verdicts.get(number) if result else None
        outcomes.append(AssertionOutcome(kind="judge", description=a.text, passed=None if verdict is None else verdict.verdict == "YES",
                                         detail=verdict.reason if verdict else why_open, source=source(case, a)))
    return outcomes


def _share(outcomes: list[AssertionOutcome]) -> float | None:
    decided = [o.passed for o in outcomes if o.applicable and o.passed is not None]
    return sum(decided) / len(decided) if decided else None


def _mean(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _dimensions(evidence: TrialEvidence, signals: Signals, result: JudgeResult | None, typed: list[AssertionOutcome],
                free: list[AssertionOutcome], no_output: bool) -> tuple[dict[str, float | None], dict[str, str], dict[str, float | None]]:
    judged = {d: v.score for d, v in result.dimensions.items()} if result else dict.fromkeys(DIMENSIONS)
    why = {d: v.reason for d, v in result.dimensions.items()} if result else {}
    answer_share = _share([o for o in typed if o.kind in ANSWER_KINDS])
    outcome_share = _share([o for o in typed if o.kind in OUTCOME_KINDS])
    free_share = _share(free)
    raw: dict[str, float | None] = {**signals.components, **{f"judge.{d}": v for d, v in judged.items()},
                                    "correctness.assertions": answer_share, "effectiveness.assertions": outcome_share,
                                    "effectiveness.free_text": free_share}
    dims: dict[str, float | None] = {}
    reasons: dict[str, str] = {}

    def put(dimension: str, value: float | None, reason: str) -> None:
        dims[dimension] = value
        reasons[dimension] = reason

    # The minimum: a critical finding by the rules is not averaged away by a lenient judge, nor the reverse.
    security = [v for v in (signals.security.score, judged["security"]) if v is not None]
    put("security", min(security) if security else None,
        "; ".join(p for p in (f"rules: {signals.security.reason}", f"judge: {why['security']}" if "security" in why else "") if p))
    if no_output:
        put("correctness", 0.0, "the agent produced no answer")
        put("effectiveness", 0.0, "the agent produced no output")
    elif result is not None:
        put("correctness", judged["correctness"], f"judge: {why['correctness']}")
        put("effectiveness", _mean(judged["effectiveness"], free_share),
            f"judge: {why['effectiveness']}" + (f"; free-text assertions passed: {free_share:.2f}" if free_share is not None else ""))
    else:
        put("correctness", answer_share, f"{NO_JUDGE}; " + (f"share of answer checks passed: {answer_share:.2f}"
                                                         if answer_share is not None else "no answer checks: NO SCORE"))
        put("effectiveness", outcome_share, f"{NO_JUDGE}; " + (f"share of workspace/command/trajectory checks passed: {outcome_share:.2f}"
                                                             if outcome_share is not None else "no workspace/command checks: NO SCORE"))
    if evidence.arm == "without_skill":
        put("discoverability", None, signals.routing.reason)
    elif signals.routing.score is not None or result is None:
        put("discoverability", signals.routing.score, f"routing: {signals.routing.reason}")
    else:
        put("discoverability", judged["discoverability"], f"routing: {signals.routing.reason}; judge: {why['discoverability']}")
    put("efficiency", _mean(signals.efficiency.score, judged["efficiency"]),
        "; ".join(p for p in (f"rules: {signals.efficiency.reason}", f"judge: {why['efficiency']}" if "efficiency" in why else "") if p))
    return {d: dims[d] for d in DIMENSIONS}, {d: reasons[d] for d in DIMENSIONS}, raw


def _names(outcomes: list[AssertionOutcome], limit: int = 3) -> str:
    shown = "; ".join(f"{o.description} ({o.detail})" if o.detail else o.description for o in outcomes[:limit])
    return shown + (f"; +{len(outcomes) - limit} more" if len(outcomes) > limit else "")


def _status(outcomes: list[AssertionOutcome], typed: list[AssertionOutcome], free: list[AssertionOutcome], failure: JudgeFailed | None,
            judged: bool, dims: dict[str, float | None]) -> outcome.Decision:
    """Rules 4–7 of :mod:`pytest_skilleval.tier3.outcome`."""
    if failure is not None:
        failed_typed = [o for o in typed if o.passed is False]
        return outcome.Decision(outcome.ERROR, failure.reason + (f" (typed assertions failed too: {_names(failed_typed)})" if failed_typed else ""),
                                "judge")
    applicable = [o for o in outcomes if o.applicable]
    decided = [o for o in applicable if o.passed is not None]
    failed = [o for o in decided if o.passed is False]
    if failed:
        return outcome.Decision(outcome.FAILED, f"{len(failed)} of {len(decided)} decided assertion(s) failed: {_names(failed)}")
    open_typed = [o for o in typed if o.applicable and o.passed is None]
    if open_typed:
        return outcome.Decision(outcome.ERROR, f"{len(open_typed)} typed assertion(s) could not be decided: {_names(open_typed)}", "harness")
    open_free = [o for o in free if o.passed is None]
    if judged and open_free:
        return outcome.Decision(outcome.ERROR, f"the judge gave no verdict for {len(open_free)} free-text assertion(s): {_names(open_free)}",
                                "judge")
    if open_free:  # no judge: a check that could not be decided is not a pass
        return outcome.decide_unchecked(len(decided), [o.description for o in open_free], NO_JUDGE, dims)
    if decided:
        return outcome.Decision(outcome.PASSED, f"all {len(decided)} decided assertion(s) passed")
    return outcome.decide_unasserted(dims)
