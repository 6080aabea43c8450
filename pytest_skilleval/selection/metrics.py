"""Deterministic selection metrics (no judge): expected / forbidden / acceptable skills per case, and
session-level triggering rates over a case set.

The judge rates each skill the agent *did* invoke; it cannot say whether declining was right. That
needs to know what *should* have happened, which a test case states:

* ``expect_skills``: each must be loaded (a refused load, or a request whose outcome the trajectory
  does not show, fails with that said);
* ``forbid_skills``: none may be requested, even unsuccessfully;
* ``acceptable_skills``: when given, every skill the agent loads must be expected or acceptable;
* ``should_trigger``: True for a case where some skill should load (implied by ``expect_skills``),
  False for a negative case where none should.

Rates over the cases that say either way: under-triggering (should load, loaded none of the right
ones), over-triggering (loaded something on a negative case), abstention correctness (of the cases
where the agent loaded nothing, the share where that was right). User-invoked loads (``/x``, ``$x``)
are not the agent's triggering and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from pytest_skilleval.trajectory.model import InvocationStatus, Trajectory, skill_key


class SelectionExpectation(BaseModel):
    expect_skills: list[str] = Field(default_factory=list)
    forbid_skills: list[str] = Field(default_factory=list)
    acceptable_skills: list[str] = Field(default_factory=list)
    should_trigger: bool | None = None

    @property
    def positive(self) -> bool | None:
        """True: a skill should load; False: none should; None: the case does not say."""
        if self.should_trigger is not None:
            return self.should_trigger
        return True if self.expect_skills else None

    def is_empty(self) -> bool:
        return not (self.expect_skills or self.forbid_skills or self.acceptable_skills) and self.should_trigger is None


class ExpectationOutcome(BaseModel):
    check: str  # e.g. "expected:pdf-processing", "forbidden:docx", "only-acceptable", "abstain"
    passed: bool
    message: str


class CaseOutcome(BaseModel):
    """What one case contributes to the session rates: small and JSON-safe, so it travels over xdist."""

    positive: bool | None
    loaded: list[str] = Field(default_factory=list, description="skills the agent loaded (or requested without an outcome)")
    triggered_right: bool = False
    forbidden_hits: list[str] = Field(default_factory=list)


def _agent_loads(traj: Trajectory) -> dict[str, str]:
    """key → name of every skill the agent loaded, or requested with no outcome recorded."""
    return {s.key: s.name for s in traj.selections() if s.status is not InvocationStatus.REFUSED}


def check_expectations(traj: Trajectory, exp: SelectionExpectation) -> list[ExpectationOutcome]:
    out: list[ExpectationOutcome] = []
    by_key = {s.key: s for s in traj.selections()}
    for name in exp.expect_skills:
        sel = by_key.get(skill_key(name))
        if sel is None:
            out.append(ExpectationOutcome(check=f"expected:{name}", passed=False, message=f"{name} was not invoked"))
        elif sel.status is InvocationStatus.REFUSED:
            out.append(ExpectationOutcome(check=f"expected:{name}", passed=False,
                                          message=f"{name} was requested but the harness refused it: {sel.message or '(no message)'}"))
        elif sel.status is InvocationStatus.ATTEMPTED:
            out.append(ExpectationOutcome(check=f"expected:{name}", passed=False,
                                          message=f"{name} was requested, but the trajectory ends before any outcome"))
        else:
            out.append(ExpectationOutcome(check=f"expected:{name}", passed=True, message=f"{name} was loaded ({sel.how.value})"))
    for name in exp.forbid_skills:
        sel = by_key.get(skill_key(name))
        state = "" if sel is None else (" (the harness refused it)" if sel.refused else "")
        out.append(ExpectationOutcome(check=f"forbidden:{name}", passed=sel is None,
                                      message=f"{name} was not invoked" if sel is None else f"{name} was invoked{state}"))
    if exp.acceptable_skills:
        allowed = {skill_key(n) for n in [*exp.expect_skills, *exp.acceptable_skills]}
        extra = sorted(name for key, name in _agent_loads(traj).items() if key not in allowed)
        out.append(ExpectationOutcome(check="only-acceptable", passed=not extra,
                                      message=f"loaded skills outside the expected and acceptable ones: {', '.join(extra)}"
                                      if extra else "every loaded skill was expected or acceptable"))
    if exp.positive is False:
        loaded = sorted(_agent_loads(traj).values())
        out.append(ExpectationOutcome(check="abstain", passed=not loaded,
                                      message=f"a negative case, but the agent loaded: {', '.join(loaded)}" if loaded
                                      else "a negative case, and the agent loaded no skill"))
    return out


def case_outcome(traj: Trajectory, exp: SelectionExpectation) -> CaseOutcome:
    loads = _agent_loads(traj)
    wanted = {skill_key(n) for n in [*exp.expect_skills, *exp.acceptable_skills]}
    requested = {s.key for s in traj.selections()}
    return CaseOutcome(positive=exp.positive, loaded=sorted(loads.values()), triggered_right=bool(wanted & set(loads)),
                       forbidden_hits=sorted(n for n in exp.forbid_skills if skill_key(n) in requested))


class SelectionRates(BaseModel):
    cases: int = 0
    positives: int = 0
    negatives: int = 0
    under_triggered: int = 0
    over_triggered: int = 0
    wrong_skill: int = Field(default=0, description="positive cases where only other skills were loaded")
    abstained: int = 0
    correct_abstentions: int = 0
    forbidden_violations: int = 0
    under_triggering_rate: float | None = None
    over_triggering_rate: float | None = None
    abstention_correctness: float | None = None


def selection_rates(outcomes: Iterable[CaseOutcome]) -> SelectionRates:
    r = SelectionRates()
    for o in outcomes:
        r.cases += 1
        r.forbidden_violations += len(o.forbidden_hits)
        if o.positive is None:
            continue  # the case states no expectation either way: not part of the rates
        if not o.loaded:
            r.abstained += 1
        if o.positive:
            r.positives += 1
            if not o.triggered_right:
                r.under_triggered += 1
                r.wrong_skill += 1 if o.loaded else 0
        else:
            r.negatives += 1
            if o.loaded:
                r.over_triggered += 1
            else:
                r.correct_abstentions += 1
    r.under_triggering_rate = r.under_triggered / r.positives if r.positives else None
    r.over_triggering_rate = r.over_triggered / r.negatives if r.negatives else None
    r.abstention_correctness = r.correct_abstentions / r.abstained if r.abstained else None
    return r
