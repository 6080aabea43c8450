"""The report model: per-skill aggregation of results, tier statuses and the overall verdict.

Built on the controller from the envelopes items publish on ``report.user_properties``, so it is
the same under ``-n 0`` and ``-n 8``. Everything is sorted, so the documents are deterministic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pytest_skilleval.results import CheckResult, Finding, Severity, Status
from pytest_skilleval.selection.report import SelectionSummary
from pytest_skilleval.tier3.report import Tier3Report
from pytest_skilleval.triggers.metrics import SkillTriggers

SCHEMA_VERSION = "1.1"  # 1.1: tool.commit/python/numpy; tier3 judge, interval, timeout, max-turns, A/A, per-trial dimensions
TIER_PURPOSE = {
    1: "Static validation: is the skill well-formed and safe?",
    2: "Deduplication: does it repeat itself or another skill?",
    3: "Agent evaluation: does an agent do better with it than without?",
}
NOT_RUN = "NOT RUN"


class CheckRecord(BaseModel):
    """A check result as reported: the result plus whether it could block."""

    blocking: bool
    result: CheckResult


class TierSummary(BaseModel):
    tier: int
    status: str  # PASSED | PASSED WITH OBSERVATIONS | FAILED | INCOMPLETE | ERROR | SKIPPED | NOT RUN
    checks: int = 0
    findings: int = 0
    failed_checks: list[str] = Field(default_factory=list)
    advisory_failures: list[str] = Field(default_factory=list)


class SkillReport(BaseModel):
    key: str
    name: str
    path: str
    verdict: str  # PASS | FAIL | INCOMPLETE
    recommended_for_publication: bool
    tiers_run: list[int]
    tiers_not_run: list[int]
    tiers: dict[str, TierSummary]
    severity_counts: dict[str, int]
    quality_score: float | None = None
    digest: str | None = None
    checks: list[CheckRecord]
    tier3: Tier3Report | None = Field(default=None, description="agent trials: per agent and arm, lift, pass@k (tier3/report.py)")
    triggers: SkillTriggers | None = Field(default=None, description="trigger trials: recall, precision, confusion matrix per agent "
                                                                     "(triggers/metrics.py)")

    def blocking_findings(self) -> list[tuple[str, Finding]]:
        out = []
        for rec in self.checks:
            if rec.blocking and rec.result.status is Status.FAILED:
                out.extend((rec.result.check, f) for f in rec.result.findings if f.severity.at_least(Severity.HIGH))
        return sorted(out, key=lambda cf: cf[1].sort_key())

    def all_findings(self) -> list[tuple[str, Finding]]:
        out = [(rec.result.check, f) for rec in self.checks for f in rec.result.findings]
        return sorted(out, key=lambda cf: cf[1].sort_key())


class RunReport(BaseModel):
    schema_version: str = SCHEMA_VERSION
    tool: dict[str, str]
    generated_at: str
    complete: bool = Field(description="false when the session was interrupted or errored before all items ran")
    exit_status: int
    settings: dict[str, Any]
    overall_status: str  # passed | failed | incomplete
    skill_count: int
    severity_counts: dict[str, int]
    verdict_counts: dict[str, int]
    skills: list[SkillReport]
    selection: SelectionSummary | None = Field(default=None, description="skill-selection accuracy over recorded trajectories")
    duration_s: float | None = Field(default=None, description="the session's wall time (like generated_at, differs run to run)")
    shard: str | None = Field(default=None, description="K/N when this run was one shard of N (--skilleval-shard); None when whole or merged")


def _tier_summary(tier: int, records: list[CheckRecord]) -> TierSummary:
    if not records:
        return TierSummary(tier=tier, status=NOT_RUN)
    statuses = {r.result.status for r in records}
    failed = sorted(r.result.check for r in records if r.blocking and r.result.status in (Status.FAILED, Status.ERROR))
    # an advisory check never decides a verdict, not even by missing its evidence
    advisory = sorted(r.result.check for r in records if not r.blocking and r.result.status in (Status.FAILED, Status.INCOMPLETE))
    findings = sum(len(r.result.findings) for r in records)
    if any(r.blocking and r.result.status is Status.INCOMPLETE for r in records):
        status = "INCOMPLETE"
    elif any(r.blocking and r.result.status is Status.ERROR for r in records):
        status = "ERROR"
    elif failed:
        status = "FAILED"
    elif statuses == {Status.SKIPPED}:
        status = "SKIPPED"
    elif advisory or findings:
        status = "PASSED WITH OBSERVATIONS"
    else:
        status = "PASSED"
    return TierSummary(tier=tier, status=status, checks=len(records), findings=findings, failed_checks=failed,
                       advisory_failures=advisory)


def build_skill(key: str, name: str, path: str, records: list[CheckRecord], tier3: Tier3Report | None = None) -> SkillReport:
    records = sorted(records, key=lambda r: (r.result.tier, r.result.check))
    tiers = {str(t): _tier_summary(t, [r for r in records if r.result.tier == t]) for t in (1, 2, 3)}
    if tier3 is not None:  # trials, not checks: the status is Tier 3's own (FAIL only when blocking)
        tiers["3"] = TierSummary(tier=3, status=tier3.status(), checks=tier3.trials,
                                 failed_checks=[a.agent for a in tier3.agents if a.verdict == "FAIL" and tier3.blocking])
    run = [int(t) for t, s in tiers.items() if s.status != NOT_RUN]
    not_run = [int(t) for t, s in tiers.items() if s.status == NOT_RUN]
    statuses = {s.status for s in tiers.values()}
    if "INCOMPLETE" in statuses:
        verdict = "INCOMPLETE"
    elif statuses & {"FAILED", "ERROR"} or (tier3 is not None and tier3.fails_run):
        verdict = "FAIL"
    else:
        verdict = "PASS"
    counts = {s.value.lower(): 0 for s in Severity}
    for rec in records:
        for sev, n in rec.result.severity_counts().items():
            counts[sev] += n
    quality = next((r.result.score for r in records if r.result.check == "quality"), None)
    digest = next((r.result.metrics.get("digest") for r in records if r.result.check == "files"), None)
    return SkillReport(key=key, name=name, path=path, verdict=verdict,
                       recommended_for_publication=verdict == "PASS" and not not_run and tier3 is not None and tier3.publication_evidence,
                       tiers_run=run, tiers_not_run=not_run, tiers=tiers, severity_counts=counts,
                       quality_score=quality, digest=digest, checks=records, tier3=tier3)


def build_run(skills: list[SkillReport], *, tool: dict[str, str], generated_at: str, complete: bool,
              exit_status: int, settings: dict[str, Any]) -> RunReport:
    skills = sorted(skills, key=lambda s: s.key)
    counts = {s.value.lower(): 0 for s in Severity}
    verdicts: dict[str, int] = {}
    for sk in skills:
        for sev, n in sk.severity_counts.items():
            counts[sev] += n
        verdicts[sk.verdict] = verdicts.get(sk.verdict, 0) + 1
    if not complete or verdicts.get("INCOMPLETE"):  # interrupted or crashed: not every item ran
        overall = "incomplete"
    elif verdicts.get("FAIL"):
        overall = "failed"
    else:
        overall = "passed"
    return RunReport(tool=tool, generated_at=generated_at, complete=complete, exit_status=exit_status,
                     settings=settings, overall_status=overall, skill_count=len(skills), severity_counts=counts,
                     verdict_counts=dict(sorted(verdicts.items())), skills=skills)
