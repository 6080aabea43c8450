"""What grading a trial produces, and what it needs. The trial runner and the graders meet here.

The runner builds a :class:`TrialEvidence` after the agent ran; :func:`pytest_skilleval.tier3.grading.grade`
(in ``grade.py``) turns it into a :class:`Grade`. Every score is 0–1 or ``None`` ("not scored"):
an unscored dimension is never a zero, and a judge that failed makes the grade ERROR.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_skilleval.tier3.outcome import ErrorCause, GradeStatus
from pytest_skilleval.trajectory.model import Trajectory

Arm = Literal["with_skill", "without_skill"]
DIMENSIONS = ("security", "correctness", "discoverability", "effectiveness", "efficiency")


class CommandOutcome(BaseModel):
    exit_code: int
    output: str = ""


#: Runs a shell command in the trial's sandbox/workspace *after* the agent finished (for `command`
#: assertions); returns its exit code and (capped) output. Provided by the sandbox.
RunInSandbox = Callable[[str], CommandOutcome]


class TrialEvidence(BaseModel):
    """Everything a grader may look at. Built by the runner; graders never touch the agent."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    skill_name: str
    case_id: str
    agent: str
    arm: Arm
    attempt: int
    trajectory: Trajectory | None = Field(default=None, description="None: the agent produced no parseable output")
    answer: str | None = None
    workspace: Path | None = None
    run_in_sandbox: RunInSandbox | None = Field(default=None, exclude=True)
    gateway_requests: list[str] = Field(default_factory=list, description="request bodies the model saw (text)")
    skill_listed: bool | None = Field(default=None, description="the gateway saw this skill offered to the model")
    skill_body_reached_model: bool | None = None
    timed_out: bool = False
    exit_code: int | None = None
    #: A file in the workspace was added, removed or rewritten by the agent; None: not observed.
    workspace_changed: bool | None = None
    #: Metered by the gateway over every model request of the trial (side calls included); when given,
    #: `max_tokens` / `max_cost` use these rather than what the harness reported in the trajectory.
    metered_tokens: int | None = Field(default=None, description="input + output tokens, all requests")
    metered_cost_usd: float | None = None


class AssertionOutcome(BaseModel):
    kind: str  # contains | regex | file_exists | command | skill_invoked | judge | …
    description: str
    passed: bool | None  # None: could not be decided (e.g. judge unavailable) — not a failure
    detail: str | None = None
    source: str | None = Field(default=None, description="file:line of the assertion in the eval file")
    #: False: the check does not apply to this trial (e.g. ``skill_invoked`` of the evaluated skill in
    #: the without_skill arm, where the skill is not installed); then ``passed`` is None and it counts neither way.
    applicable: bool = True


class Grade(BaseModel):
    status: GradeStatus  # the rules: pytest_skilleval.tier3.outcome
    reason: str | None = None
    cause: ErrorCause | None = Field(default=None, description="whose fault an ERROR is: infra | harness | judge")
    assertions: list[AssertionOutcome] = Field(default_factory=list)
    dimensions: dict[str, float | None] = Field(default_factory=lambda: dict.fromkeys(DIMENSIONS))
    score: float | None = Field(default=None, description="overall 0–1: mean of the scored dimensions")
    judged: bool = False  # an LLM judge contributed
    judge_model: str | None = None
    notes: list[str] = Field(default_factory=list)
    #: Why each dimension has its score (or none), one short line per dimension.
    reasons: dict[str, str] = Field(default_factory=dict)
    #: The raw signals the dimensions were combined from (docs/grading.md), e.g. ``security.rules``,
    #: ``security.judge``, ``routing``, ``tool_efficiency``; None = that signal could not be computed.
    signals: dict[str, float | None] = Field(default_factory=dict)
    judge_calls: int = 0  # model calls the judge made for this trial (retries included; cache hits too)
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    #: --skilleval-judge-votes N > 1: every vote's dimension scores (the dimensions above are their
    #: medians) and the share of items the votes agreed on (grading/judge.py: agreement).
    judge_votes: list[dict[str, float]] = Field(default_factory=list)
    judge_prompt_version: str | None = None  # grading/judge.py PROMPT_VERSION, when the judge graded
    judge_agreement: float | None = None
