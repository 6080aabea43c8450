"""``rubric`` (opt-in, ``--skilleval-checks=+rubric``): a chat model rates the skill on nine criteria.

Each criterion is scored 0–10 by one structured judge call through the provider layer (so it is
cached, retried and offline-testable through the gateway). The skill passes when every criterion
scores at least 7 and the importance-weighted overall, scaled to 0–100, reaches
``--skilleval-min-rubric`` (default 70). A criterion under 7 is a HIGH finding naming it, so the
failure says what to fix.

No chat model configured → INCOMPLETE (the evidence this check exists for is missing); a provider
failure or a reply that stays malformed after retries → ERROR. Never a silent zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel, Field

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.providers.base import ChatMessage, ChatRequest, ProviderError
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill

PASS_MARK = 7.0  # per criterion, out of 10
MAX_SKILL_CHARS = 64_000
MAX_EXTRA_CHARS = 30_000  # references and scripts together
MAX_EXTRA_FILE_CHARS = 3_000


@dataclass(frozen=True)
class Criterion:
    id: str
    weight: int  # importance: 3 high, 2 medium, 1 low
    question: str


CRITERIA = (
    Criterion("clarity_of_purpose", 3, "Does the skill say plainly what it does and what it produces?"),
    Criterion("trigger_description", 3, "Would an agent reading only name + description load it exactly when it should "
                                         "(imagine five tasks that should trigger it and three that should not)?"),
    Criterion("instruction_quality", 3, "Are the steps concrete, ordered and actionable, with commands and arguments?"),
    Criterion("examples", 3, "Are there realistic examples of inputs, commands and expected outputs?"),
    Criterion("error_handling", 2, "Does it say what to do when a step fails or input is bad?"),
    Criterion("safety", 3, "Does it avoid dangerous actions, ask before destructive ones and keep secrets out?"),
    Criterion("scope", 2, "Does it state what it is not for and stay within its purpose?"),
    Criterion("structure", 2, "Is it organised with headings, short sections and references split out sensibly?"),
    Criterion("maintainability", 1, "Is it easy to keep correct: versioned, no duplicated or stale content?"),
)


class CriterionScore(BaseModel):
    id: str
    score: float = Field(ge=0, le=10)
    notes: str = ""


class RubricReply(BaseModel):
    criteria: list[CriterionScore]


#: The files beyond SKILL.md whose text the judge is shown (up to MAX_EXTRA_CHARS in all).
SHOWN_SUFFIXES = frozenset({".md", ".py", ".sh"})


def _shown(skill: Skill, rel: str) -> bool:
    return rel != skill.manifest and rel.startswith(("references/", "scripts/"))


def _material(skill: Skill) -> str:
    parts = [f"# SKILL.md\n{(skill.manifest_text or '')[:MAX_SKILL_CHARS]}"]
    files = [e.rel for e in skill.files()]
    parts.append("# Files\n" + "\n".join(files[:200]))
    budget = MAX_EXTRA_CHARS
    for rel, text in skill.text_files(SHOWN_SUFFIXES):
        if not _shown(skill, rel) or budget <= 0:
            continue
        excerpt = text[:min(MAX_EXTRA_FILE_CHARS, budget)]
        budget -= len(excerpt)
        parts.append(f"# {rel}\n{excerpt}")
    return "\n\n".join(parts)


def rubric_request(skill: Skill) -> ChatRequest:
    listing = "\n".join(f"- {c.id}: {c.question}" for c in CRITERIA)
    system = ("You review Agent Skills: folders with a SKILL.md that coding agents load on demand. Score the skill on each "
              "criterion from 0 (absent) to 10 (exemplary); 7 means good enough to publish. Be strict and concrete; "
              "notes say what to change. Reply with JSON only.")
    user = f"Criteria (use exactly these ids):\n{listing}\n\nThe skill:\n\n{_material(skill)}"
    return ChatRequest(messages=(ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)),
                       max_tokens=1500, schema_name="rubric")


class RubricCheck(Check):
    name = "rubric"
    description = "an LLM rates nine criteria 0-10 (opt-in; needs a chat model)"
    default_enabled = False
    # the judge scored what it was shown: a file it was not shown because it could not be read is undecided
    reads = Reads(SHOWN_SUFFIXES, accepts=_shown)

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        if skill.manifest_text is None:
            return CheckResult.skipped(self.name, "SKILL.md cannot be read (see the schema check)")
        try:
            from pytest_skilleval.providers import select  # SDKs and caches only when the opt-in rubric runs

            chat = select.chat_from_settings(ctx.settings)
            if chat is None:
                return CheckResult.incomplete(self.name, "the rubric needs a chat model: set --skilleval-provider "
                                                         "(or one provider API key); see docs/providers.md")
            reply, raw = chat.structured(rubric_request(skill), RubricReply)
        except ProviderError as exc:
            return CheckResult.error(self.name, f"rubric judge failed: {exc}")
        scores = {c.id: c for c in reply.criteria}
        expected = {c.id for c in CRITERIA}
        if set(scores) != expected or len(reply.criteria) != len(expected):
            missing, extra = sorted(expected - set(scores)), sorted(set(scores) - expected)
            return CheckResult.error(self.name, f"rubric judge answered the wrong criteria (missing {missing}, unexpected {extra})")
        total = sum(c.weight for c in CRITERIA)
        overall = round(sum(scores[c.id].score * c.weight for c in CRITERIA) / total * 10, 1)
        findings = [Finding(rule=f"rubric.{c.id}", severity=Severity.HIGH, file=skill.manifest,
                            message=f"{c.id} scored {scores[c.id].score:g}/10 (needs {PASS_MARK:g}): {scores[c.id].notes}".rstrip(": "),
                            suggestion=c.question)
                    for c in CRITERIA if scores[c.id].score < PASS_MARK]
        metrics = {"criteria": {c.id: {"score": scores[c.id].score, "weight": c.weight, "notes": scores[c.id].notes}
                                for c in CRITERIA},
                   "judge": f"{raw.provider}:{raw.model}", "cached": raw.cached}
        return self.result(findings, score=overall, min_score=ctx.settings.min_rubric, metrics=metrics)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [RubricCheck()]
