"""Skill-selection accuracy: did each skill the agent invoked make sense for the task?

Matches the Strands ``SkillSelectionAccuracyEvaluator`` semantics (reference §1):

* one judge call **per invoked skill**, each a fresh request (no shared history, so one verdict
  cannot leak into the next), through :meth:`ChatProvider.structured`;
* the judge sees the task, the offered catalog ("not recorded" is not "empty"), the one skill under
  evaluation, the harness's refusal text when the load was refused, the trajectory (capped, head and
  tail kept) and the final answer — and rates the *choice*, not the outcome;
* rows: score 1.0 / 0.0, label ``Yes`` / ``No``, reason ``"<skill>: <reasoning>"``;
* no invocation, or nothing offered → one ``not_applicable`` row that passes and is dropped from the
  mean; a missing trajectory is a failure (score 0.0, counted), not N/A;
* a judge that fails after its retries gives an ``error`` row — never a silent 0.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatRequest
from pytest_skilleval.results import Status
from pytest_skilleval.trajectory.model import CatalogSkill, SkillCatalog, SkillSelection, Trajectory

NOT_APPLICABLE = "not_applicable"
PROMPT_VERSION = "v0"
MAX_TRAJECTORY_CHARS = 600_000

SYSTEM_PROMPT = """You are an impartial judge of one decision an AI agent made: which skill to load.

A skill is a packaged instruction file (SKILL.md) that an agent may load while it works. The agent \
is shown a list of available skills, each with a name and a short description, and decides which \
of them, if any, to load for its task.

You receive the task, the skills the agent was offered, the single skill whose loading you must \
judge, and a record of the agent's run.

Judge only the named skill. Answer "Yes" if its description fits the task, so that loading it was a \
reasonable choice. Answer "No" if it does not fit the task. When a task needs several skills, any \
skill that genuinely fits is a reasonable choice on its own merits, whatever else was or was not loaded.

Judge the choice, not its execution: do not reward or penalise how well the agent used the skill or \
whether the task succeeded. Base the verdict on the task and the skill descriptions. If the list of \
offered skills was not recorded, do not conclude that the skill did not exist; judge from its name, \
the task and what the run shows.

Give brief step-by-step reasoning, then a score of exactly "Yes" or "No"."""


class SkillSelectionRating(BaseModel):
    reasoning: str = Field(description="Step by step reasoning to derive the final score")
    score: Literal["Yes", "No"] = Field(description="Score should be one of 'Yes' or 'No'")


class SelectionRow(BaseModel):
    skill: str | None = None
    label: str  # Yes | No | not_applicable | error | missing
    score: float | None = None  # 1.0 / 0.0 for a verdict; None when there is none
    passed: bool
    reason: str
    refused: bool = False
    how: str | None = None
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def not_applicable(self) -> bool:
        return self.label == NOT_APPLICABLE

    @property
    def status(self) -> Status:
        if self.label == "error":
            return Status.ERROR
        if self.not_applicable:
            return Status.SKIPPED
        return Status.PASSED if self.passed else Status.FAILED


class SelectionEvaluation(BaseModel):
    """The rows of one trajectory and their per-case aggregate (N/A rows dropped from the mean)."""

    rows: list[SelectionRow]
    score: float | None = Field(default=None, description="mean over judged rows; None when nothing was judged")
    passed: bool
    reason: str

    @property
    def status(self) -> Status:
        if any(r.label == "error" for r in self.rows):
            return Status.ERROR
        if all(r.not_applicable for r in self.rows):
            return Status.SKIPPED
        return Status.PASSED if self.passed else Status.FAILED


def aggregate(rows: list[SelectionRow]) -> SelectionEvaluation:
    counted = [r for r in rows if not r.not_applicable and r.label != "error"]
    if not counted:
        reasons = " | ".join(r.reason for r in rows) or NOT_APPLICABLE
        return SelectionEvaluation(rows=rows, score=None, passed=all(r.passed for r in rows), reason=reasons)
    score = sum(r.score or 0.0 for r in counted) / len(counted)
    return SelectionEvaluation(rows=rows, score=score, passed=all(r.passed for r in rows if not r.not_applicable),
                               reason=" | ".join(r.reason for r in rows if not r.not_applicable))


# -- prompt -------------------------------------------------------------------------------------

def render_catalog(catalog: SkillCatalog) -> str:
    if not catalog.recorded:
        return "(not recorded by this harness)"
    if not catalog.skills:
        return "(none: this harness advertised no skills)"
    return "\n".join(f"- {s.name}: {s.description or ''}".rstrip() for s in catalog.skills)


def _steps(traj: Trajectory) -> list[dict[str, Any]]:
    steps: list[tuple[int, dict[str, Any]]] = []
    for m in traj.messages:
        steps.append((m.position, {"step": m.position, "role": m.role, "text": m.text, **({"agent": m.agent} if m.agent else {})}))
    for c in traj.tool_calls:
        item: dict[str, Any] = {"step": c.position, "tool": c.name, "arguments": c.arguments}
        if c.completed:
            item.update({"result": c.result, "error": c.is_error} if not c.error else {"result": c.result, "error": c.error})
        else:
            item["result"] = "(no result recorded)"
        steps.append((c.position, item))
    steps.sort(key=lambda s: s[0])
    out = [s[1] for s in steps]
    if traj.omitted_messages or traj.omitted_tool_calls:
        gap = {"note": f"{traj.omitted_messages} message(s) and {traj.omitted_tool_calls} tool call(s) from the middle of "
                       "the run were not kept when it was parsed"}
        cut = traj.gap_after or 0
        index = next((n for n, s in enumerate(out) if s["step"] > cut), len(out))
        out.insert(index, gap)
    return out


def render_trajectory(traj: Trajectory, max_chars: int = MAX_TRAJECTORY_CHARS) -> str:
    """One JSON object per step; over ``max_chars`` the head and tail halves are kept around a note."""
    text = "\n".join(json.dumps(s, ensure_ascii=False, sort_keys=True) for s in _steps(traj))
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return (f"{text[:half]}\n[… {len(text) - 2 * half} characters omitted from the middle of the trajectory; "
            f"the omitted part may hold evidence …]\n{text[-half:]}")


def selection_prompt(task: str | None, catalog: SkillCatalog, skill: SkillSelection, trajectory_text: str,
                     final_answer: str | None) -> str:
    decision = [f"The agent invoked the skill: {skill.name}"]
    if skill.refused:
        decision.append("The harness refused this load, so the agent never received the skill's instructions. "
                        "Rate whether asking for this skill was a reasonable choice, not whether the load worked.")
        if skill.message:
            decision.append(f"The harness said: {skill.message}")
    return "\n\n".join([
        f"## Task\n{task or '(not recorded)'}",
        f"## Available skills\n{render_catalog(catalog)}",
        "## Decision under evaluation\n" + "\n".join(decision),
        f"## Agent trajectory\n{trajectory_text}",
        f"## Agent's final response\n{final_answer or '(none recorded)'}",
    ])


# -- evaluation ---------------------------------------------------------------------------------

def offered_catalog(traj: Trajectory, catalog: SkillCatalog | list[CatalogSkill] | None) -> SkillCatalog:
    if catalog is None:
        return traj.catalog
    if isinstance(catalog, SkillCatalog):
        return catalog
    return SkillCatalog(recorded=True, skills=list(catalog), source="case")


def judge_skill(judge: ChatProvider, prompt: str, skill: SkillSelection, *, model: str | None = None) -> SelectionRow:
    request = ChatRequest(messages=(ChatMessage(role="system", content=SYSTEM_PROMPT), ChatMessage(role="user", content=prompt)),
                          model=model, max_tokens=1024, schema_name="skill_selection_rating")
    try:
        rating, reply = judge.structured(request, SkillSelectionRating)
    except Exception as exc:  # ProviderError after retries, or a broken provider: an ERROR row, never a 0
        return SelectionRow(skill=skill.name, refused=skill.refused, how=skill.how.value, label="error", passed=False,
                            reason=f"{skill.name}: judge failed: {type(exc).__name__}: {exc}")
    score = 1.0 if rating.score == "Yes" else 0.0
    return SelectionRow(skill=skill.name, refused=skill.refused, how=skill.how.value, label=rating.score, score=score,
                        passed=score == 1.0, reason=f"{skill.name}: {rating.reasoning}", judge_model=reply.model,
                        input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)


def not_applicable_row(traj: Trajectory, catalog: SkillCatalog) -> SelectionRow:
    users = [s.name for s in traj.selections(include_user=True) if s.by_user]
    if catalog.recorded and catalog.skills:
        reason = "no skill invoked; whether declining was correct is not judged here"
    elif catalog.recorded:
        reason = "no skills were available to select from"
    else:
        reason = "no skill invoked (the offered catalog was not recorded); declining is not judged here"
    if users:
        reason += f" (user-invoked, not the agent's choice: {', '.join(users)})"
    return SelectionRow(label=NOT_APPLICABLE, passed=True, reason=reason)


def missing_row() -> SelectionRow:
    return SelectionRow(label="missing", score=0.0, passed=False, reason="no trajectory provided")


def rows_for(trajectory: Trajectory | None, judge: ChatProvider | None, *, task: str | None = None,
             catalog: SkillCatalog | list[CatalogSkill] | None = None, final_answer: str | None = None, model: str | None = None,
             max_chars: int = MAX_TRAJECTORY_CHARS) -> list[SelectionRow]:
    """The rows of one trajectory (a judge call each), in first-attempt order."""
    if trajectory is None:
        return [missing_row()]
    offered = offered_catalog(trajectory, catalog)
    skills = trajectory.selections()
    if not skills:
        return [not_applicable_row(trajectory, offered)]
    if judge is None:
        return [SelectionRow(skill=s.name, label="error", passed=False, refused=s.refused, how=s.how.value,
                             reason=f"{s.name}: no judge: no chat provider configured") for s in skills]
    text = render_trajectory(trajectory, max_chars)
    final = final_answer if final_answer is not None else trajectory.final_answer
    return [judge_skill(judge, selection_prompt(task or trajectory.task, offered, s, text, final), s, model=model) for s in skills]


def evaluate_selection(trajectory: Trajectory | None, judge: ChatProvider | None, *, task: str | None = None,
                       catalog: SkillCatalog | list[CatalogSkill] | None = None, final_answer: str | None = None,
                       model: str | None = None, max_chars: int = MAX_TRAJECTORY_CHARS) -> SelectionEvaluation:
    """Judge every skill the agent invoked. ``task``/``catalog``/``final_answer`` override what the trajectory recorded."""
    return aggregate(rows_for(trajectory, judge, task=task, catalog=catalog, final_answer=final_answer, model=model,
                              max_chars=max_chars))
