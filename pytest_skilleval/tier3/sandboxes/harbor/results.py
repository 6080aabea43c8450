"""Harbor's result files, read with our own tolerant models (Harbor's Python API has changed shape
often; its JSON has been stable): unknown fields are ignored, everything we do not need is optional.

    jobs/<job>/result.json                 the job: trial counts, per-eval stats
    jobs/<job>/<task>__<id>/result.json    one trial: rewards, exception_info, phase timings, agent info
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Phase(_Tolerant):
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class ExceptionInfo(_Tolerant):
    exception_type: str = "Exception"
    exception_message: str = ""
    exception_traceback: str | None = None


class VerifierResult(_Tolerant):
    rewards: dict[str, float] | None = None


class AgentInfo(_Tolerant):
    name: str | None = None
    version: str | None = None


class AgentResult(_Tolerant):
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class TrialResult(_Tolerant):
    task_name: str = ""
    trial_name: str = ""
    agent_info: AgentInfo | None = None
    agent_result: AgentResult | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    environment_setup: Phase | None = None
    agent_setup: Phase | None = None
    agent_execution: Phase | None = None
    verifier: Phase | None = None
    config: dict[str, Any] = Field(default_factory=dict)

    @property
    def seconds(self) -> float | None:
        return Phase(started_at=self.started_at, finished_at=self.finished_at).seconds

    def phase_seconds(self) -> dict[str, float]:
        phases = {"environment_setup": self.environment_setup, "agent_setup": self.agent_setup,
                  "agent_execution": self.agent_execution, "verifier": self.verifier}
        return {name: round(s, 3) for name, p in phases.items() if p is not None and (s := p.seconds) is not None}


class JobStats(_Tolerant):
    n_completed_trials: int = 0
    n_errored_trials: int = 0
    n_retries: int = 0


class JobResult(_Tolerant):
    id: str | None = None
    n_total_trials: int = 0
    stats: JobStats = Field(default_factory=JobStats)
    started_at: datetime | None = None
    finished_at: datetime | None = None


def read_trials(job_dir: Path) -> list[tuple[Path, TrialResult]]:
    """Every trial folder of a job that holds a result.json, with its parsed result (unreadable ones skipped)."""
    found = []
    for result in sorted(job_dir.glob("*/result.json")):
        try:
            found.append((result.parent, TrialResult.model_validate_json(result.read_bytes())))
        except ValueError:
            continue
    return found
