"""Scripted turns: the keyless model the gateway plays in CI.

Stateless by design (the rule verified with all four CLIs): the reply to a request is
``steps[min(number of tool results in the request, len(steps) - 1)]``. Retries, parallel trials
and CLI restarts need no server state, and side calls (title generators, classifiers) that lack
the scripted tool get ``side_text`` instead of a tool call they could not execute.

A script file is JSON or YAML, either one script or ``{"scripts": {"<agent>": <script>, ...}}``
because the tool names differ per CLI (Claude ``Skill``, Codex ``exec_command``, ...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, ToolCall, Usage, new_id


class ScriptUsage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: int = 1234  # fixed numbers make token and cost assertions exact
    output: int = 56


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Step(BaseModel):
    """One model turn: optional text, then zero or more tool calls. No tool call = the final answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str = ""
    tool: str | None = None  # shorthand for a single call
    args: dict[str, Any] = Field(default_factory=dict)
    tool_calls: tuple[ScriptedCall, ...] = ()
    usage: ScriptUsage | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> Step:
        # An explicit ``text: ""`` is an empty reply (a model that says nothing: Tier 3's "no output" rule);
        # a step with neither key is a mistake.
        if "text" not in self.model_fields_set and not self.calls():
            raise ValueError("a step needs text or a tool call (text: \"\" for an empty reply)")
        return self

    def calls(self) -> tuple[ScriptedCall, ...]:
        single = (ScriptedCall(name=self.tool, args=self.args),) if self.tool else ()
        return single + self.tool_calls


class Variant(BaseModel):
    """Different steps when the request holds a marker — e.g. play a model that uses a skill only
    when the skill is listed (``"<name>greet</name>"``), so with/without arms really differ."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    if_request_contains: str
    steps: tuple[Step, ...] = Field(min_length=1)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    steps: tuple[Step, ...] = Field(min_length=1)
    side_text: str = "ok"
    json_reply: Any = Field(default_factory=lambda: {"reasoning": "scripted", "next_speaker": "user"})
    variants: tuple[Variant, ...] = ()
    usage: ScriptUsage = ScriptUsage()
    model: str | None = None  # the model name reported back; default: the one requested

    @classmethod
    def load(cls, path: str | Path, agent: str | None = None) -> Script:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
        return cls.from_data(data, agent, source=str(path))

    @classmethod
    def from_data(cls, data: Any, agent: str | None = None, source: str = "script") -> Script:
        if isinstance(data, dict) and "scripts" in data:
            scripts = data["scripts"]
            if agent is None or agent not in scripts:
                raise ValueError(f"{source}: no script for agent {agent!r} (has: {', '.join(sorted(scripts))})")
            data = scripts[agent]
        return cls.model_validate(data)

    def choose(self, request: NeutralRequest, request_text: str) -> tuple[Step, int, str]:
        """The step answering ``request``, its index, and which variant chose it (for the log)."""
        steps, label = self.steps, "steps"
        for n, variant in enumerate(self.variants):
            if variant.if_request_contains in request_text:
                steps, label = variant.steps, f"variants[{n}]"
                break
        index = min(len(request.tool_results), len(steps) - 1)
        return steps[index], index, label

    def reply_for(self, request: NeutralRequest, request_text: str, id_prefix: str) -> tuple[Reply, str]:
        """The reply to one request, and a note for the log saying which step (or guard) answered."""
        step, index, label = self.choose(request, request_text)
        model = self.model or request.model or "scripted"
        usage = step.usage or self.usage
        tokens = Usage(input_tokens=usage.input, output_tokens=usage.output)
        if request.json_mode:
            return Reply(text=json.dumps(self.json_reply), model=model, usage=tokens), "json-side-call"
        calls = step.calls()
        if calls and any(c.name not in request.tools for c in calls):
            # A side call (title, summary) does not declare the scripted tool: answer it plainly.
            return Reply(text=self.side_text, model=model, usage=tokens), f"side-call (wanted {label}[{index}])"
        made = tuple(ToolCall(name=c.name, arguments=dict(c.args), id=new_id(f"{id_prefix}{index:02d}{k:02d}"))
                     for k, c in enumerate(calls))
        return Reply(text=step.text, model=model, usage=tokens, tool_calls=made), f"{label}[{index}]"
