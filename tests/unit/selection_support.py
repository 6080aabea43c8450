"""Judges for the selection tests.

The main one goes *through the gateway*: the real ``anthropic`` SDK (our ``AnthropicChat``
provider) talks to the plugin's model gateway in scripted mode, which answers the forced
``skill_selection_rating`` tool call with a verdict picked by what the request contains. The
in-process :class:`FaultyJudge` exists only to inject faults the gateway would not produce
(malformed replies, exceptions).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.base import ChatProvider, ChatReply, ChatRequest
from pytest_skilleval.providers.retry import RetryPolicy

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "trajectories"
TOOL = "skill_selection_rating"


def verdict_script(no_for: tuple[str, ...] = ()) -> Script:
    """Yes for every skill, except No for each skill named in ``no_for``."""
    def step(score: str, why: str) -> dict[str, Any]:
        return {"tool": TOOL, "args": {"reasoning": why, "score": score}}

    return Script.from_data({
        "steps": [step("Yes", "the description fits the task")],
        "variants": [{"if_request_contains": f"The agent invoked the skill: {name}\\n", "steps": [step("No", f"{name} does not fit")]}
                     for name in no_for],
    })


@contextmanager
def gateway_judge(tmp_path: Path, no_for: tuple[str, ...] = ()) -> Iterator[tuple[AnthropicChat, Trial]]:
    """An AnthropicChat provider whose requests go through a scripted gateway trial."""
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gateway-logs", log_bodies=True)) as gateway:
        trial = gateway.open_trial("selection-judge", script=verdict_script(no_for))
        judge = AnthropicChat("claude-judge-test", api_key=trial.token.secret, base_url=trial.url, timeout=15,
                              retry=RetryPolicy(retries=0))
        try:
            yield judge, trial
        finally:
            gateway.close_trial(trial)


def request_texts(trial: Trial) -> list[str]:
    trial.wait_idle()
    return trial.request_texts()


class FaultyJudge(ChatProvider):
    """Replies from a list, one per call (``Exception`` instances are raised): for fault injection only."""

    name = "faulty"
    model = "faulty-judge"

    def __init__(self, replies: list[str | Exception]) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return ChatReply(text=reply, model=self.model, provider=self.name, input_tokens=10, output_tokens=5)


def yes(reason: str = "fits") -> str:
    return json.dumps({"reasoning": reason, "score": "Yes"})
