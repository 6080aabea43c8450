"""The TriggerRecord: what one trigger trial (query × agent × run) publishes for the controller."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field

from pytest_skilleval.published import TRIGGER_PROPERTY as TRIGGER_PROPERTY  # re-exported (published.py: apart from this module)

Status = Literal["TRIGGERED", "NOT_TRIGGERED", "ERROR", "SKIPPED"]


class TriggerRecord(BaseModel):
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    nodeid: str = ""
    skill: str  # report key
    skill_name: str
    skill_path: str
    query_id: str
    query: str
    should_trigger: bool
    agent: str
    agent_version: str | None = None
    run: int = 1  # r1..rR
    retries: int = 0  # infrastructure retries spent on this trial before this record
    mode: str = "agent"  # agent (a real CLI) | model (the model-only probe)
    gateway_mode: str = "scripted"
    model: str | None = None
    set_digest: str | None = None
    rivals: list[str] = Field(default_factory=list)
    rivals_digest: str | None = None
    acceptable_skills: list[str] = Field(default_factory=list)  # the query's: loading one of these instead is no mistake
    # -- outcome ----------------------------------------------------------------------------------
    status: Status
    reason: str | None = None
    triggered: bool | None = None  # None = no decision (ERROR / SKIPPED): never counted as a miss
    how: str | None = None
    loaded: list[str] = Field(default_factory=list)
    rival_loaded: str | None = None  # the rival loaded when this skill was not
    skill_listed: bool | None = None
    ended_by: str | None = None  # the gateway cut-off's reason, or "answer" / "exit"
    ignored: list[str] = Field(default_factory=list)
    # -- metering ---------------------------------------------------------------------------------
    requests: int = 0
    model_turns: int = 0
    tokens_in: int = 0  # as the gateway metered them (scripted mode: the script's fixed numbers)
    tokens_out: int = 0
    prompt_chars: int = 0  # size of the request bodies the CLI sent (JSON text): what a real model would read
    cost_usd: float = 0.0
    seconds: float | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @property
    def correct(self) -> bool | None:
        return None if self.triggered is None else self.triggered == self.should_trigger
