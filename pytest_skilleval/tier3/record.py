"""The TrialRecord: what one agent trial publishes on ``user_properties`` for the controller.

JSON-safe and self-describing, so the controller (and ``results.json``) can aggregate any mix of
workers, reruns and attempts: every execution of every item is one record with its own ``run_id``.
"""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field

from pytest_skilleval.published import TRIAL_PROPERTY as TRIAL_PROPERTY  # re-exported (published.py: apart from this module)
from pytest_skilleval.tier3 import outcome
from pytest_skilleval.tier3.grading.model import Grade
from pytest_skilleval.tier3.outcome import ErrorCause, Status

__all__ = ["TRIAL_PROPERTY", "ErrorCause", "Status", "TrialRecord"]


MAX_STEPS = 40  # a trial's trajectory as the HTML report shows it: head and tail, the middle counted
MAX_STEP_TEXT = 600


class TrialStep(BaseModel):
    """One step of a trial as a reader sees it: a message, a tool call with its result, or a skill load."""

    kind: Literal["message", "tool", "skill", "gap"]
    role: str | None = None  # message: user | assistant | system | error
    name: str | None = None  # tool name, or the loaded skill's name
    text: str = ""  # the message, the call's arguments, or how the skill was loaded
    result: str | None = None  # the tool result (capped)
    is_error: bool = False


class TrialRecord(BaseModel):
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex, description="one per execution (reruns get new ones)")
    nodeid: str = ""
    # -- identity --------------------------------------------------------------------------------
    skill: str  # the report key (path below --skills)
    skill_name: str
    skill_path: str
    case_id: str
    label: str = "positive"  # positive | negative | unlabelled
    agent: str
    agent_version: str | None = None
    arm: Literal["with_skill", "without_skill", "without_skill_aa"]  # _aa: --skilleval-aa, a second without_skill arm
    attempt: int = 1  # scheduled attempt (a1..aN)
    execution: int = 1  # 1 + the rerun index under --reruns
    dataset_digest: str | None = None
    # -- how it ran --------------------------------------------------------------------------------
    mode: str = "scripted"  # the gateway mode
    model: str | None = None
    sandbox: str = ""
    isolated: bool = False
    # -- outcome -----------------------------------------------------------------------------------
    status: Status  # the rules: pytest_skilleval.tier3.outcome
    reason: str | None = None
    error_cause: ErrorCause | None = None  # an ERROR's cause: infra | harness | judge
    #: Earlier executions of this same attempt that ERRORed for an infrastructure cause and were run
    #: again (--skilleval-infra-retries): never an attempt, never a rerun; their reasons are in `notes`.
    infra_retries: int = 0
    #: Set when this without_skill record was not run but reused (--skilleval-reuse-baseline):
    #: "<when it was stored> (run <run_id>)" of the stored record.
    reused_from: str | None = None
    grade: Grade | None = None
    skill_installed: bool = False
    skill_listed: bool | None = None
    skill_body_reached_model: bool | None = None
    invoked_skills: list[str] = Field(default_factory=list)
    final_answer: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    # -- metering ----------------------------------------------------------------------------------
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    #: Dollars spent at the upstream, metered by the gateway; None when nothing was spent (scripted and
    #: replayed trials: their tokens are metered, but no dollar figure is invented for them).
    cost_usd: float | None = None
    cli_seconds: float | None = None  # the agent process's own wall time
    total_seconds: float | None = None  # the whole trial: staging, agent, parsing, grading
    artifacts: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    steps: list[TrialStep] = Field(default_factory=list, description="the trajectory, bounded: messages, tool calls, skill loads")

    @property
    def scripted(self) -> bool:
        return self.mode == "scripted"

    @property
    def passed(self) -> bool | None:
        """The attempt as pass@k sees it: True / False, None when it is not counted (ERROR, NOT_SCORED, SKIPPED)."""
        return outcome.passed(self.status)

    @property
    def counted(self) -> bool:
        """Whether this trial enters pass rates, pass@k, means and lift (PASSED or FAILED only)."""
        return outcome.counted(self.status)

    @property
    def infra_error(self) -> bool:
        return self.status == outcome.ERROR and self.error_cause == "infra"

    @property
    def score(self) -> float | None:
        return self.grade.score if self.grade is not None else None

    @property
    def plugin_seconds(self) -> float | None:
        if self.cli_seconds is None or self.total_seconds is None:
            return None
        return max(0.0, self.total_seconds - self.cli_seconds)
