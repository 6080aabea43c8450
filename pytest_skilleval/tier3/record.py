"""The TrialRecord: what one agent trial publishes on ``user_properties`` for the controller.

JSON-safe and self-describing, so the controller (and ``results.json``) can aggregate any mix of
workers, reruns and attempts: every execution of every item is one record with its own ``run_id``.
"""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field

from pytest_skilleval.tier3.grading.model import Grade

TRIAL_PROPERTY = "skilleval.trial"
Status = Literal["PASSED", "FAILED", "ERROR", "SKIPPED"]


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
    arm: Literal["with_skill", "without_skill"]
    attempt: int = 1  # scheduled attempt (a1..aN)
    execution: int = 1  # 1 + the rerun index under --reruns
    dataset_digest: str | None = None
    # -- how it ran --------------------------------------------------------------------------------
    mode: str = "scripted"  # the gateway mode
    model: str | None = None
    sandbox: str = ""
    isolated: bool = False
    # -- outcome -----------------------------------------------------------------------------------
    status: Status
    reason: str | None = None
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
    cost_usd: float = 0.0
    cli_seconds: float | None = None  # the agent process's own wall time
    total_seconds: float | None = None  # the whole trial: staging, agent, parsing, grading
    artifacts: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @property
    def scripted(self) -> bool:
        return self.mode == "scripted"

    @property
    def passed(self) -> bool | None:
        """The attempt as pass@k sees it: True / False, None when it errored or did not run."""
        return {"PASSED": True, "FAILED": False}.get(self.status)

    @property
    def score(self) -> float | None:
        return self.grade.score if self.grade is not None else None

    @property
    def plugin_seconds(self) -> float | None:
        if self.cli_seconds is None or self.total_seconds is None:
            return None
        return max(0.0, self.total_seconds - self.cli_seconds)
