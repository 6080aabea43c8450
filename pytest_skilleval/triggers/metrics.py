"""Trigger statistics on the controller: records in, per skill × agent recall/precision/F1/accuracy out.

Per query, its decided runs vote: triggered when at least half of them triggered. ERROR and SKIPPED
runs have no decision and are left out of the vote; a query with no decided run is left out of
the confusion matrix and counted under ``errors`` (an error is never a miss). Intervals are
Wilson score intervals (95 %) over queries; F1 has none (it is not a proportion).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from pytest_skilleval.triggers.record import TriggerRecord

Z95 = 1.959963984540054
CHARS_PER_TOKEN = 4  # the usual rough ratio for English and JSON: "≈ prompt tokens" of a request body


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """The Wilson score interval of ``successes`` out of ``n``; (None, None) when n = 0."""
    if n <= 0:
        return None, None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class Rate(BaseModel):
    value: float | None
    successes: int
    n: int
    low: float | None
    high: float | None

    @classmethod
    def of(cls, successes: int, n: int) -> Rate:
        low, high = wilson(successes, n)
        return cls(value=successes / n if n else None, successes=successes, n=n, low=low, high=high)


class QueryOutcome(BaseModel):
    query_id: str
    query: str
    should_trigger: bool
    runs: list[bool | None]  # per run: triggered / not / no decision (ERROR, SKIPPED)
    triggered: bool | None  # the majority of decided runs; None when none decided
    flipped: bool  # decided runs disagreed
    rivals: list[str] = Field(default_factory=list)  # rivals loaded in its runs
    errors: int = 0
    # A positive query most of whose misses loaded one of its acceptable_skills: no mistake, so it is
    # neither a hit nor a miss of this skill's description (left out of recall) and no rival is blamed.
    acceptable: bool = False


class Confusion(BaseModel):
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0


class AgentTriggers(BaseModel):
    agent: str
    versions: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    mode: str = "agent"  # agent | model (the probe)
    gateway_modes: list[str] = Field(default_factory=list)
    runs_per_query: int = 0
    queries: int = 0
    decided: int = 0
    errors: int = 0  # queries without a decided run
    error_runs: int = 0
    retries: int = 0
    confusion: Confusion = Field(default_factory=Confusion)
    recall: Rate
    precision: Rate
    accuracy: Rate
    f1: float | None = None
    stealing_rivals: dict[str, int] = Field(default_factory=dict)  # rival → positive runs it took
    acceptable_loads: dict[str, int] = Field(default_factory=dict)  # acceptable skill → positive runs it took
    acceptable_queries: list[str] = Field(default_factory=list)  # positives handed to an acceptable skill
    false_trigger_queries: list[str] = Field(default_factory=list)
    missed_queries: list[str] = Field(default_factory=list)
    flipped_queries: list[str] = Field(default_factory=list)
    outcomes: list[QueryOutcome] = Field(default_factory=list)
    requests: int = 0
    model_turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    prompt_chars: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    trials: int = 0

    def per_query(self, what: str) -> float | None:
        """Requests / tokens / seconds per query (one run of it), for the cost table."""
        if not self.trials:
            return None
        total = {"requests": self.requests, "tokens": self.tokens_in + self.tokens_out, "seconds": self.seconds,
                 "cost_usd": self.cost_usd, "model_turns": self.model_turns,
                 "prompt_tokens": self.prompt_chars / CHARS_PER_TOKEN}[what]
        return total / self.trials


class SkillTriggers(BaseModel):
    skill: str
    skill_name: str
    set_digest: str | None = None
    rivals: list[str] = Field(default_factory=list)
    rivals_digest: str | None = None
    harness_check: bool = False  # scripted: the gateway played the model
    probe: bool = False  # the model-only probe, not real agents
    blocking: bool = False
    thresholds: dict[str, float] = Field(default_factory=dict)
    agents: list[AgentTriggers] = Field(default_factory=list)

    @property
    def failing_agents(self) -> list[str]:
        """Agents below a --block-on-triggers threshold (empty when advisory)."""
        if not self.blocking:
            return []
        out = []
        for a in self.agents:
            recall, precision = a.recall.value, a.precision.value
            if (recall is not None and recall < self.thresholds["recall"]) or (precision is not None and precision < self.thresholds["precision"]) \
                    or a.errors:
                out.append(a.agent)
        return out


def summarize_agent(agent: str, records: list[TriggerRecord]) -> AgentTriggers:
    by_query: dict[str, list[TriggerRecord]] = defaultdict(list)
    for r in records:
        by_query[r.query_id].append(r)
    outcomes, confusion = [], Confusion()
    stealing: Counter[str] = Counter()
    handed: Counter[str] = Counter()
    for qid, rows in by_query.items():
        rows.sort(key=lambda r: r.run)
        decided = [r.triggered for r in rows if r.triggered is not None]
        majority = None if not decided else sum(decided) * 2 >= len(decided)
        rivals = sorted({r.rival_loaded for r in rows if r.rival_loaded})
        acceptable = {r.run for r in rows if r.rival_loaded and r.rival_loaded in r.acceptable_skills}
        misses = [r for r in rows if r.triggered is False]
        outcome = QueryOutcome(query_id=qid, query=rows[0].query, should_trigger=rows[0].should_trigger, runs=[r.triggered for r in rows],
                               triggered=majority, flipped=len(set(decided)) > 1, rivals=rivals,
                               errors=sum(1 for r in rows if r.status == "ERROR"),
                               acceptable=bool(rows[0].should_trigger and majority is False and len(acceptable) * 2 > len(misses)))
        outcomes.append(outcome)
        if rows[0].should_trigger:
            stealing.update(r.rival_loaded for r in rows if r.rival_loaded and r.run not in acceptable)
            handed.update(r.rival_loaded for r in rows if r.rival_loaded and r.run in acceptable)
        if majority is None or outcome.acceptable:
            continue
        if outcome.should_trigger:
            confusion.tp += majority
            confusion.fn += not majority
        else:
            confusion.fp += majority
            confusion.tn += not majority
    tp, fn, fp, tn = confusion.tp, confusion.fn, confusion.fp, confusion.tn
    f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None
    ran = [r for r in records if r.status != "SKIPPED"]
    return AgentTriggers(
        agent=agent, versions=sorted({r.agent_version for r in records if r.agent_version}),
        models=sorted({r.model for r in records if r.model}), mode=records[0].mode if records else "agent",
        gateway_modes=sorted({r.gateway_mode for r in records}), runs_per_query=max((r.run for r in records), default=0),
        queries=len(outcomes), decided=tp + fn + fp + tn, errors=sum(1 for o in outcomes if o.triggered is None),
        error_runs=sum(1 for r in records if r.status == "ERROR"), retries=sum(r.retries for r in records), confusion=confusion,
        recall=Rate.of(tp, tp + fn), precision=Rate.of(tp, tp + fp), accuracy=Rate.of(tp + tn, tp + fn + fp + tn), f1=f1,
        stealing_rivals=dict(stealing.most_common()), acceptable_loads=dict(handed.most_common()),
        acceptable_queries=sorted(o.query_id for o in outcomes if o.acceptable),
        false_trigger_queries=[o.query_id for o in outcomes if o.triggered is True and not o.should_trigger],
        missed_queries=[o.query_id for o in outcomes if o.triggered is False and o.should_trigger and not o.acceptable],
        flipped_queries=[o.query_id for o in outcomes if o.flipped], outcomes=sorted(outcomes, key=lambda o: o.query_id),
        requests=sum(r.requests for r in ran), model_turns=sum(r.model_turns for r in ran), tokens_in=sum(r.tokens_in for r in ran),
        tokens_out=sum(r.tokens_out for r in ran), prompt_chars=sum(r.prompt_chars for r in ran), cost_usd=round(sum(r.cost_usd for r in ran), 8),
        seconds=round(sum(r.seconds or 0 for r in ran), 3), trials=len(ran))


def summarize(records: Iterable[TriggerRecord], *, thresholds: tuple[float, float] | None = None) -> dict[str, SkillTriggers]:
    """Records of any mix of skills and agents → one :class:`SkillTriggers` per skill key."""
    by_skill: dict[str, list[TriggerRecord]] = defaultdict(list)
    for r in records:
        by_skill[r.skill].append(r)
    out = {}
    for key, rows in sorted(by_skill.items()):
        agents: dict[str, list[TriggerRecord]] = defaultdict(list)
        for r in rows:
            agents[r.agent].append(r)
        first = rows[0]
        out[key] = SkillTriggers(
            skill=key, skill_name=first.skill_name, set_digest=first.set_digest, rivals=first.rivals, rivals_digest=first.rivals_digest,
            harness_check=any(r.gateway_mode == "scripted" for r in rows), probe=any(r.mode == "model" for r in rows),
            blocking=thresholds is not None,
            thresholds={"recall": thresholds[0], "precision": thresholds[1]} if thresholds else {},
            agents=[summarize_agent(a, agents[a]) for a in sorted(agents)])
    return out
