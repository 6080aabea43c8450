"""Tier 3 on the controller: trial records in, per skill × agent × arm statistics and a verdict out.

Which trials count for what:

- **Dimension means, scores, Lift**: the first execution of every scheduled attempt (reruns happen
  only after a failure, so counting them would bias the means). Per case, the mean over its
  attempts; per arm, the mean over cases — the same numbers feed the card's cells and the verdict.
  A dimension's lift = with − without over the cases scored in both arms, with the t interval of
  :func:`stats.lift` (none below three paired cases). **Overall**: each trial's mean over the
  dimensions *both* arms score (so Discoverability, with_skill only, is reported on its own and never
  biases it), then per case, then per arm; **overall lift** = the mean of the paired cases'
  differences in it, with the interval over those same differences (:func:`overall_lift`).
- **Power**: from the overall lift's n and spread (:func:`stats.power`).
- **A/A noise floor** (``--skilleval-aa``): the overall lift of a second without_skill arm over the
  first, computed exactly like the real lift.
- **pass@k / pass^k** (``--skilleval-attempts n``): the unbiased estimators over those same first
  executions, for k = 1 and k = n.
- **pass@(R+1)** (``--reruns R``): every execution of a scheduled attempt, in order; it passes if
  any did.
- **Tokens, cost, time**: every execution that ran.

Verdict (the anchor's rule): per agent, the worst band of its with-skill dimension means; Tier 3
passes if any agent passes. A scripted run gets a verdict too, but it is a harness check and is
never publication evidence. Trials that errored make the evidence INCOMPLETE; a Tier 3 where no
trial ran is NOT RUN and has no verdict. Publication needs what :meth:`Tier3Report.publication_gaps`
checks: a real model, a sandbox, all five dimensions scored, and every case × arm × attempt run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from pytest_skilleval.gateway.outage import CIRCUIT_OPEN
from pytest_skilleval.tier3 import stats
from pytest_skilleval.tier3.grading.model import DIMENSIONS, AssertionOutcome
from pytest_skilleval.tier3.options import AA_ARM
from pytest_skilleval.tier3.record import TrialRecord, TrialStep

MEASURES = ("overall", *DIMENSIONS)
REAL_ARMS = ("with_skill", "without_skill")
ARM_ORDER = (*REAL_ARMS, AA_ARM)
NOT_RUN = "NOT RUN"
MAX_ATTEMPT_ANSWER = 2000
MAX_ATTEMPT_NOTES = 5


class PassK(BaseModel):
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    cases: int
    excluded: list[str] = Field(default_factory=list)


class RerunCase(BaseModel):
    case: str
    attempts: list[bool | None]
    passed: bool | None
    first_pass_attempt: int | None


class RerunStats(BaseModel):
    k: int  # R + 1
    passed_cases: int
    failed_cases: int
    missing_cases: int
    rate: float | None
    cases: list[RerunCase]


class ArmStats(BaseModel):
    arm: str
    trials: int = 0  # executions that ran (not skipped)
    passed: int = 0
    failed: int = 0
    errors: int = 0
    not_scored: int = 0  # ran, but what would decide them was not checked (outcome.NOT_SCORED): out of every statistic, like errors
    infra_retries: int = 0  # executions re-run after an infrastructure ERROR (--skilleval-infra-retries)
    skipped: int = 0
    measures: dict[str, float | None] = Field(default_factory=dict)  # overall + the five dimensions
    pass_rate: float | None = None  # first executions: passed / (passed + failed)
    pass_at_k: list[PassK] = Field(default_factory=list)
    reruns: RerunStats | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None  # None: nothing was spent (scripted/replayed trials)
    cli_seconds: float | None = None  # mean per trial
    plugin_seconds: float | None = None  # mean per trial: staging, gateway, parsing, grading


class LiftRow(BaseModel):
    measure: str
    with_skill: float | None  # mean over the paired cases (the interval's cases)
    without_skill: float | None
    delta: float | None
    ci_low: float | None  # None: too few paired cases for an interval
    ci_high: float | None
    n: int  # paired cases
    band: str | None  # PASS (a gain) / FAIL (a loss) only when the interval excludes 0; None without an interval
    unpaired: int = 0  # cases scored in one arm only
    spread: float | None = None  # sd of the paired differences
    dimensions: list[str] = Field(default_factory=list)  # overall / A/A: the dimensions averaged


class PowerRow(BaseModel):
    """What this run could detect (stats.power): at its paired cases and spread, and for a 10-point lift."""

    n: int
    spread: float | None
    detectable: float | None  # smallest lift whose interval excludes 0 at 80 % power; None: too few cases
    cases_for_target: int | None  # paired cases a `target` lift needs at this spread and these attempts
    attempts: int
    target: float = stats.TARGET_LIFT


class AttemptRow(BaseModel):
    case: str
    arm: str
    attempt: int
    execution: int
    status: str
    score: float | None
    judge_agreement: float | None = None  # --skilleval-judge-votes > 1: how far its votes agreed
    tokens: int
    cli_seconds: float | None
    skill_listed: bool | None
    invoked: list[str]
    reason: str | None
    # the evidence a reader needs to see why (the HTML report expands a failing attempt with it)
    assertions: list[AssertionOutcome] = Field(default_factory=list)
    answer: str | None = None
    steps: list[TrialStep] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    cost_usd: float | None = None
    dimensions: dict[str, float | None] = Field(default_factory=dict)  # this trial's dimension scores (None: not counted)


#: A judge whose votes agree on fewer items than this (mean over its trials) is flagged on the card.
JUDGE_AGREEMENT_FLAG = 0.8


class JudgeStats(BaseModel):
    """Who graded, with which prompt, how many votes, and how far the votes agreed (grading/judge.py)."""

    models: list[str] = Field(default_factory=list)
    prompt_versions: list[str] = Field(default_factory=list)
    votes: int = 1
    judged_trials: int = 0
    agreement: float | None = None  # mean over judged trials of their votes' agreement; None with one vote
    flagged: bool = False  # agreement below JUDGE_AGREEMENT_FLAG: the judge disagrees with itself


class IntervalSpec(BaseModel):
    """How every lift interval on the card was computed (stats.paired_interval): no resampling, so no seed."""

    method: str = stats.INTERVAL_METHOD
    confidence: float = 0.95
    t_level: float = stats.T_LEVEL[0.95]
    min_cases: int = stats.MIN_CASES_FOR_INTERVAL
    seed: int | None = None
    resamples: int | None = None


class AgentTier3(BaseModel):
    agent: str
    versions: list[str]
    models: list[str]
    arms: dict[str, ArmStats]
    lift: list[LiftRow]
    verdict: str | None  # PASS | NEUTRAL | FAIL over the with-skill dimensions; None: nothing scored
    attempts: list[AttemptRow]
    overall_dimensions: list[str] = Field(default_factory=list)  # what "overall" averages (scored in both arms)
    power: PowerRow | None = None
    noise_floor: LiftRow | None = None  # --skilleval-aa: second baseline − first baseline


class Tier3Report(BaseModel):
    modes: list[str]
    scripted: bool
    sandboxes: list[str]
    isolated: bool
    blocking: bool
    attempts: int
    reruns: int
    dataset_digest: str | None
    cases: int
    labels: dict[str, int]
    agents: list[AgentTier3]
    verdict: str | None
    trials: int
    errors: int
    skipped: int
    skip_reasons: list[str] = Field(default_factory=list)
    #: without_skill records reused from an earlier run (--skilleval-reuse-baseline): "<case> a<n>: <stored when> (run <id>)".
    reused_baselines: list[str] = Field(default_factory=list)
    infra_retries: int = 0  # executions re-run after an infrastructure ERROR, over all arms
    #: Trials the circuit breaker did not start (the upstream was down), with the first refusal's reason.
    breaker_refused: int = 0
    breaker_reason: str | None = None
    # -- to reproduce the numbers --------------------------------------------------------------------
    judge: JudgeStats | None = None  # None: no judge graded any trial
    interval: IntervalSpec = Field(default_factory=IntervalSpec)
    trial_timeout_s: float | None = None
    max_turns: int | None = None
    aa: bool = False  # --skilleval-aa ran the without_skill arm twice

    @property
    def publication_evidence(self) -> bool:
        """Real models, confined, complete and passing: only then may a card recommend publication."""
        return not self.publication_gaps()

    def publication_gaps(self) -> list[str]:
        """What this Tier 3 lacks to back a publication recommendation (the card lists it); empty: nothing."""
        gaps = []
        if self.trials == 0:
            return ["Tier 3 trials (none ran)"]
        if self.scripted:
            gaps.append("a real model (this run was scripted: a harness check)")
        if not self.isolated:
            gaps.append("a sandbox (trials ran unsandboxed)")
        for a in self.agents:
            with_skill = a.arms.get("with_skill")
            missing = [d.capitalize() for d in DIMENSIONS if with_skill is None or with_skill.measures.get(d) is None]
            if missing:
                gaps.append(f"all five dimensions scored ({a.agent}: {', '.join(missing)} not scored)")
            if "without_skill" not in a.arms:
                gaps.append(f"the without_skill baseline ({a.agent}: not run, so no lift)")
        scheduled, counted = self.scheduled_trials()
        if counted < scheduled:
            gaps.append(f"every case × arm × attempt run and scored ({counted} of {scheduled}: "
                        f"{self.skipped} skipped, {self.errors} errored, {self.not_scored_trials()} not scored)")
        if self.verdict != "PASS":
            gaps.append(f"a PASS verdict (this run: {self.verdict or 'none'})")
        return gaps

    def scheduled_trials(self) -> tuple[int, int]:
        """(scheduled case × agent × arm × attempt slots, slots whose first execution was scored)."""
        slots = {(a.agent, r.case, r.arm, r.attempt) for a in self.agents for r in a.attempts if r.arm in REAL_ARMS}
        counted = {(a.agent, r.case, r.arm, r.attempt) for a in self.agents for r in a.attempts
                   if r.arm in REAL_ARMS and r.execution == 1 and r.status in ("PASSED", "FAILED")}
        return len(slots), len(counted)

    def not_scored_trials(self) -> int:
        return sum(1 for a in self.agents for r in a.attempts if r.status == "NOT_SCORED")

    @property
    def fails_run(self) -> bool:
        """A FAIL verdict under --block-on-agent-eval: the skill fails, and so does the run."""
        return self.blocking and self.verdict == "FAIL"

    def status(self) -> str:
        """The Tier Status word: NOT RUN (no trial ran: no verdict), INCOMPLETE (trials errored), else
        the verdict — ``FAIL`` only when blocking; an advisory fail reads ``FAIL (advisory)``."""
        if self.trials == 0:
            return NOT_RUN
        if self.errors:
            return "INCOMPLETE"
        word = self.verdict or "NOT SCORED"
        if word == "FAIL" and not self.blocking:
            word = "FAIL (advisory)"
        return f"{word} (harness check)" if self.scripted else word


def build(records: Iterable[TrialRecord], *, blocking: bool, reruns: int, timeout_s: float | None = None, max_turns: int | None = None,
          judge_votes: int = 1) -> Tier3Report:
    records = sorted(records, key=lambda r: (r.agent, r.case_id, r.arm, r.attempt, r.execution))
    ran = [r for r in records if r.status != "SKIPPED"]
    by_agent: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_agent[r.agent].append(r)
    agents = [_agent(name, rows, reruns) for name, rows in by_agent.items()]
    verdicts = {a.verdict for a in agents} if ran else set()  # a Tier 3 where nothing ran has no verdict
    verdict = "PASS" if "PASS" in verdicts else "NEUTRAL" if "NEUTRAL" in verdicts else "FAIL" if "FAIL" in verdicts else None
    cases = {r.case_id: r.label for r in records}
    labels: dict[str, int] = defaultdict(int)
    for label in cases.values():
        labels[label] += 1
    return Tier3Report(
        modes=sorted({r.mode for r in records}), scripted=any(r.scripted for r in ran) or (not ran and any(r.scripted for r in records)),
        sandboxes=sorted({r.sandbox for r in ran if r.sandbox}), isolated=bool(ran) and all(r.isolated for r in ran), blocking=blocking,
        attempts=max((r.attempt for r in records), default=0), reruns=reruns,
        dataset_digest=next((r.dataset_digest for r in records if r.dataset_digest), None), cases=len(cases), labels=dict(labels),
        agents=agents, verdict=verdict, trials=len(ran), errors=sum(1 for r in ran if r.status == "ERROR"),
        skipped=len(records) - len(ran), skip_reasons=sorted({r.reason for r in records if r.status == "SKIPPED" and r.reason}),
        reused_baselines=[f"{r.case_id} [{r.agent}] a{r.attempt}: {r.reused_from}" for r in records if r.reused_from],
        infra_retries=sum(r.infra_retries for r in records),
        breaker_refused=len(refused := [r for r in records if (r.reason or "").startswith(CIRCUIT_OPEN)]),
        breaker_reason=refused[0].reason if refused else None,

        judge=_judge(ran, judge_votes), trial_timeout_s=timeout_s, max_turns=max_turns, aa=any(r.arm == AA_ARM for r in records))


def _judge(ran: Sequence[TrialRecord], votes: int) -> JudgeStats | None:
    judged = [r.grade for r in ran if r.grade is not None and r.grade.judged]
    if not judged:
        return None
    agreements = [g.judge_agreement for g in judged if g.judge_agreement is not None]
    agreement = stats.mean_scored(agreements)
    return JudgeStats(models=sorted({g.judge_model for g in judged if g.judge_model}),
                      prompt_versions=sorted({g.judge_prompt_version for g in judged if g.judge_prompt_version}),
                      votes=max([votes, *(len(g.judge_votes) for g in judged)]), judged_trials=len(judged), agreement=agreement,
                      flagged=agreement is not None and agreement < JUDGE_AGREEMENT_FLAG)


def _agent(name: str, rows: list[TrialRecord], reruns: int) -> AgentTier3:
    by_arm = {arm: [r for r in rows if r.arm == arm] for arm in ARM_ORDER if any(r.arm == arm for r in rows)}
    comparable = list(DIMENSIONS)
    if all(arm in by_arm for arm in REAL_ARMS):  # "overall" is over the dimensions both arms score
        comparable = [d for d in DIMENSIONS if all(stats.mean_scored(per_case(by_arm[arm], d).values()) is not None for arm in REAL_ARMS)]
    arms = {arm: _arm(arm, arm_rows, reruns, comparable) for arm, arm_rows in by_arm.items()}
    lift: list[LiftRow] = []
    power = noise = None
    if all(arm in by_arm for arm in REAL_ARMS):
        per_dimension = [_lift(d, by_arm["with_skill"], by_arm["without_skill"]) for d in DIMENSIONS]
        overall = overall_lift("overall", by_arm["with_skill"], by_arm["without_skill"], comparable)
        lift = [overall, *per_dimension]
        attempts = max((r.attempt for r in rows), default=1)
        p = stats.power(overall.n, overall.spread)
        power = PowerRow(n=p.n, spread=p.spread, detectable=p.detectable, cases_for_target=p.cases_for_target, attempts=attempts)
    if AA_ARM in by_arm and "without_skill" in by_arm:
        baseline_dims = [d for d in DIMENSIONS
                         if all(stats.mean_scored(per_case(by_arm[arm], d).values()) is not None for arm in ("without_skill", AA_ARM))]
        noise = overall_lift("A/A", by_arm[AA_ARM], by_arm["without_skill"], baseline_dims)
    with_skill = arms.get("with_skill")
    band = stats.verdict({d: with_skill.measures.get(d) for d in DIMENSIONS}) if with_skill else None
    attempts_rows = [AttemptRow(case=r.case_id, arm=r.arm, attempt=r.attempt, execution=r.execution, status=r.status, score=r.score,
                                judge_agreement=r.grade.judge_agreement if r.grade else None,
                                tokens=r.tokens_in + r.tokens_out, cli_seconds=r.cli_seconds, skill_listed=r.skill_listed,
                                invoked=r.invoked_skills, reason=r.reason, assertions=r.grade.assertions if r.grade else [],
                                answer=r.final_answer[:MAX_ATTEMPT_ANSWER] if r.final_answer else None, steps=r.steps,
                                notes=r.notes[:MAX_ATTEMPT_NOTES], cost_usd=r.cost_usd,
                                dimensions={d: _measure(r, d) for d in DIMENSIONS}) for r in rows]
    return AgentTier3(agent=name, versions=sorted({r.agent_version for r in rows if r.agent_version}),
                      models=sorted({r.model for r in rows if r.model and r.status != "SKIPPED"}), arms=arms, lift=lift,
                      verdict=band.value if band else None, attempts=attempts_rows, overall_dimensions=comparable, power=power,
                      noise_floor=noise)


def _first(rows: Sequence[TrialRecord]) -> list[TrialRecord]:
    return [r for r in rows if r.execution == 1 and r.status != "SKIPPED"]


def _measure(record: TrialRecord, measure: str) -> float | None:
    if record.grade is None or not record.counted:  # ERROR, NOT_SCORED: no evidence either way
        return None
    return record.grade.score if measure == "overall" else record.grade.dimensions.get(measure)


def per_case(rows: Sequence[TrialRecord], measure: str, dimensions: Sequence[str] | None = None) -> dict[str, float | None]:
    """Each case's mean over its scored first executions (None when none is scored). With
    ``dimensions``, ``overall`` is each trial's mean over those dimensions only."""
    grouped: dict[str, list[float | None]] = defaultdict(list)
    for r in _first(rows):
        if measure == "overall" and dimensions is not None:
            grouped[r.case_id].append(stats.mean_scored(_measure(r, d) for d in dimensions) if dimensions else None)
        else:
            grouped[r.case_id].append(_measure(r, measure))
    return {case: stats.mean_scored(values) for case, values in grouped.items()}


def _arm(arm: str, rows: list[TrialRecord], reruns: int, comparable: Sequence[str] | None = None) -> ArmStats:
    ran = [r for r in rows if r.status != "SKIPPED"]
    first = _first(rows)
    out = ArmStats(arm=arm, trials=len(ran), passed=sum(r.status == "PASSED" for r in ran), failed=sum(r.status == "FAILED" for r in ran),
                   errors=sum(r.status == "ERROR" for r in ran), not_scored=sum(r.status == "NOT_SCORED" for r in ran),
                   infra_retries=sum(r.infra_retries for r in ran), skipped=len(rows) - len(ran),
                   tokens_in=sum(r.tokens_in for r in ran), tokens_out=sum(r.tokens_out for r in ran),
                   cost_usd=_spent(ran),
                   cli_seconds=stats.mean_scored([r.cli_seconds for r in ran]), plugin_seconds=stats.mean_scored([r.plugin_seconds for r in ran]))
    out.measures = {m: stats.mean_scored(per_case(rows, m, comparable).values()) for m in MEASURES}
    decided = [r.passed for r in first if r.passed is not None]
    out.pass_rate = sum(decided) / len(decided) if decided else None
    by_case: dict[str, list[bool | None]] = defaultdict(list)
    for r in sorted(first, key=lambda r: (r.case_id, r.attempt)):
        by_case[r.case_id].append(r.passed)
    n = max((len(v) for v in by_case.values()), default=0)
    for k in sorted({1, n}) if n else ():
        p = stats.pass_at_k_over_cases(by_case, k)
        out.pass_at_k.append(PassK(k=k, pass_at_k=p.pass_at_k, pass_hat_k=p.pass_hat_k, cases=p.cases, excluded=list(p.excluded)))
    if reruns:
        out.reruns = _reruns(ran, reruns)
    return out


def _spent(ran: Sequence[TrialRecord]) -> float | None:
    spent = [r.cost_usd for r in ran if r.cost_usd is not None]
    return round(math.fsum(spent), 8) if spent else None


def _reruns(ran: list[TrialRecord], reruns: int) -> RerunStats:
    many = max((r.attempt for r in ran), default=1) > 1
    series: dict[str, list[bool | None]] = defaultdict(list)
    for r in sorted(ran, key=lambda r: (r.case_id, r.attempt, r.execution)):
        series[f"{r.case_id}#a{r.attempt}" if many else r.case_id].append(r.passed)
    summary = stats.rerun_pass(series)
    return RerunStats(k=reruns + 1, passed_cases=summary.passed_cases, failed_cases=summary.failed_cases,
                      missing_cases=summary.missing_cases, rate=summary.rate,
                      cases=[RerunCase(case=c.case_id, attempts=list(c.attempts), passed=c.passed, first_pass_attempt=c.first_pass_attempt)
                             for c in summary.cases])


def _lift(measure: str, with_rows: list[TrialRecord], without_rows: list[TrialRecord]) -> LiftRow:
    return _row(measure, stats.lift(per_case(with_rows, measure), per_case(without_rows, measure)))


def _row(measure: str, result: stats.Lift, dimensions: Sequence[str] = ()) -> LiftRow:
    band = result.band
    return LiftRow(measure=measure, with_skill=result.with_skill, without_skill=result.without_skill, delta=result.delta,
                   ci_low=result.ci_low, ci_high=result.ci_high, n=result.n, band=band.value if band else None,
                   unpaired=result.unpaired, spread=result.spread, dimensions=list(dimensions))


def overall_lift(measure: str, a_rows: list[TrialRecord], b_rows: list[TrialRecord], dimensions: Sequence[str]) -> LiftRow:
    """Overall lift of arm a over arm b: the mean of the paired cases' differences in "overall" (each
    trial's mean over ``dimensions``, those both arms score; then per case), with the t interval over
    those same differences. So the point is with − without of the arm means shown beside it, and the
    interval is around its own point: a case that lacks a dimension (a negative case has no
    Effectiveness) weighs like every other case instead of skewing a mean of per-dimension lifts."""
    if not dimensions:
        return _row(measure, stats.lift({}, {}))
    combined = stats.lift(per_case(a_rows, "overall", dimensions), per_case(b_rows, "overall", dimensions))
    return _row(measure, combined, dimensions)


def exit_status(current: int, failures: Iterable[bool], reports: Iterable[Tier3Report], *, block: bool) -> int:
    """The session's exit status once Tier 3 is accounted for.

    ``failures``: one flag per failed final report, True when it was only a trial that FAILED its
    case (advisory by nature; ERROR trials and everything else are real failures). Without
    ``--block-on-agent-eval`` those alone never fail the run; with it, a FAIL verdict does.
    """
    failed, ok = 1, 0  # pytest.ExitCode.TESTS_FAILED / OK, as ints: this module stays free of pytest
    flags = list(failures)
    if current == failed and flags and all(flags):
        current = ok
    if block and current == ok and any(r.fails_run for r in reports):
        current = failed
    return current
