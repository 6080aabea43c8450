"""Builders for the grading tests: cases, trajectories, evidence, and a judge behind the gateway.

The judge is the real ``anthropic`` SDK (our ``AnthropicChat`` provider) talking to the plugin's
model gateway in scripted mode, which plays the judge model: it answers the forced ``trial_grade``
tool call (or, for malformed-reply tests, with plain text that is not one). Variants pick another
reply when the request holds a marker, e.g. the reminder that a retry carries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.providers.cache import CachedChat, ProviderCache
from pytest_skilleval.providers.retry import RetryPolicy
from pytest_skilleval.tier3.case_formats.model import Assertion, EvalCase, Label, SourceRef
from pytest_skilleval.tier3.grading import TrialEvidence
from pytest_skilleval.tier3.grading.judge import SCHEMA_NAME
from pytest_skilleval.trajectory.model import (
    InvocationMethod,
    InvocationStatus,
    Message,
    SkillInvocation,
    ToolCall,
    Trajectory,
    Usage,
)

SKILL = "csv-summary"
RETRY_MARKER = "Your previous reply was not valid"


def case(*assertions: Assertion, label: Label = Label.POSITIVE, expected_skill: str | None = SKILL, **kw: Any) -> EvalCase:
    values: dict[str, Any] = dict(id="csv-001", prompt="What is in sales.csv? Give me the columns and basic stats.",
                                  expected_output="3 rows; columns region, amount (mean 8.5), note.", skill=SKILL,
                                  expected_skill=expected_skill, label=label, shape="agentskills",
                                  source=SourceRef(file="evals/evals.json", line=4))
    values.update(kw)
    return EvalCase(assertions=tuple(assertions), **values)


def negative_case(*assertions: Assertion) -> EvalCase:
    return case(*assertions, label=Label.NEGATIVE, expected_skill=None, id="csv-neg-001", prompt="What is 2 + 2?", expected_output="4")


def shell(command: str, position: int = 1, result: str = "", name: str = "Bash") -> ToolCall:
    return ToolCall(name=name, arguments={"command": command}, result=result, completed=True, position=position)


def loaded(name: str = SKILL, how: InvocationMethod = InvocationMethod.TOOL,
           status: InvocationStatus = InvocationStatus.LOADED, **kw: Any) -> SkillInvocation:
    return SkillInvocation(name=name, how=how, status=status, **kw)


def trajectory(*calls: ToolCall, invocations: tuple[SkillInvocation, ...] = (), answer: str | None = "sales.csv has 3 rows; mean 8.5.",
               turns: int | None = 3, messages: tuple[str, ...] = (), **kw: Any) -> Trajectory:
    msgs = [Message(role="assistant", text=t, position=100 + n) for n, t in enumerate(messages)]
    values: dict[str, Any] = dict(harness="claude-code", task="What is in sales.csv?", tool_calls=list(calls),
                                  invocations=list(invocations), final_answer=answer, turns=turns, messages=msgs,
                                  usage=Usage(input_tokens=1200, output_tokens=300))
    values.update(kw)
    return Trajectory(**values)


def evidence(traj: Trajectory | None = None, *, arm: str = "with_skill", attempt: int = 1, **kw: Any) -> TrialEvidence:
    return TrialEvidence(skill_name=SKILL, case_id="csv-001", agent="claude-code", arm=arm, attempt=attempt,  # type: ignore[arg-type]
                         trajectory=traj, **kw)


# -- the judge behind the gateway -----------------------------------------------------------------------

def dims(score: float = 0.9, **overrides: float) -> dict[str, dict[str, Any]]:
    names = ("security", "correctness", "discoverability", "effectiveness", "efficiency")
    return {d: {"reason": f"{d} looks right", "score": overrides.get(d, score)} for d in names}


def verdict(*answers: str, score: float = 0.9, **overrides: float) -> dict[str, Any]:
    """A full trial_grade reply: every dimension at ``score`` (or an override), one entry per answer."""
    return {**dims(score, **overrides),
            "assertions": [{"id": n, "reason": f"assertion {n} checked", "verdict": a} for n, a in enumerate(answers, 1)]}


def tool_step(args: dict[str, Any]) -> dict[str, Any]:
    return {"tool": SCHEMA_NAME, "args": args}


def script(first: dict[str, Any], retry: dict[str, Any] | None = None, variants: tuple[tuple[str, dict[str, Any]], ...] = ()) -> Script:
    """``first`` answers a fresh request; ``retry`` (default: the same) a request carrying the retry reminder."""
    steps = [{"if_request_contains": marker, "steps": [step]} for marker, step in variants]
    return Script.from_data({"steps": [first], "variants": [*steps, {"if_request_contains": RETRY_MARKER, "steps": [retry or first]}]})


@contextmanager
def gateway_judge(tmp_path: Path, judge_script: Script, *, cache: ProviderCache | None = None) -> Iterator[tuple[ChatProvider, Trial]]:
    """An AnthropicChat judge whose requests go to a scripted gateway trial (optionally behind the disk cache)."""
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gateway-logs", log_bodies=True)) as gateway:
        trial = gateway.open_trial("grading-judge", script=judge_script)
        chat: ChatProvider = AnthropicChat("claude-judge-test", api_key=trial.token.secret, base_url=trial.url, timeout=15,
                                           retry=RetryPolicy(retries=0))
        if cache is not None:
            chat = CachedChat(chat, cache)
        try:
            yield chat, trial
        finally:
            gateway.close_trial(trial)


def bodies(trial: Trial) -> list[dict[str, Any]]:
    trial.wait_idle()
    return [json.loads(t) for t in trial.request_texts()]
