"""The model-only probe (``--skilleval-trigger-mode=model``): one chat call per query, no agent.

For iterating on a description cheaply. The prompt carries the skill listing exactly as each agent
sends it: the text is taken from a gateway request log of a real run of that CLI — captured once
per skill × agent by a keyless scripted trial of the real CLI (the skill among its rivals), or read
from a recorded log. The model is asked which listed skill, if any, it would load for the query,
through the provider layer (retries, validated JSON, cache). Its results are labelled a probe:
``agent`` mode stays the default and the reference.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from pytest_skilleval.gateway import Script
from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatRequest, ProviderError
from pytest_skilleval.trajectory import skill_key
from pytest_skilleval.trajectory.requestlog import listing_text
from pytest_skilleval.triggers.record import TriggerRecord
from pytest_skilleval.triggers.sets import TriggerQuery
from pytest_skilleval.triggers.trial import TriggerRequest, TriggerRunner

PROBE_SYSTEM = ("You are the skill router of a coding agent. Below is the skill listing the agent shows its model, verbatim. "
                "For the user's request, decide which ONE listed skill the agent should load before answering, or none. "
                "Load a skill only when the request needs what its description offers. Answer as JSON: "
                '{"skill": "<exact skill name>" or null, "reason": "<one sentence>"}.')
CAPTURE_QUERY = "Say hello."  # the listing capture's prompt: the scripted model answers at once


class ProbeAnswer(BaseModel):
    skill: str | None = None
    reason: str = Field(default="", max_length=2000)


PROBE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"skill": {"type": ["string", "null"]}, "reason": {"type": "string"}},
                                "required": ["skill", "reason"], "additionalProperties": False}


@dataclass
class Prober:
    """Runs probe "trials"; captures each skill × agent listing once, through ``runner`` (the real CLI, scripted)."""

    runner: TriggerRunner
    chat: ChatProvider
    listings: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def listing(self, req: TriggerRequest, root: Path) -> str:
        key = (str(req.skill.root), req.agent.name, req.rivals.digest)
        if key not in self.listings:
            capture = TriggerRequest(skill=req.skill, skill_key=req.skill_key, query=TriggerQuery("listing-capture", CAPTURE_QUERY, False),
                                     agent=req.agent, rivals=req.rivals, name=f"{req.name}#listing",
                                     script=Script.from_data({"steps": [{"text": "Hello."}]}))
            record = self.runner.run(capture, root / "listing-capture", mode="scripted")
            text = listing_text(record.artifacts.get("requests", "")) if record.artifacts.get("requests") else None
            if text is None:
                raise RuntimeError(f"{req.agent.name} sent no skill listing in its capture run ({record.status}: {record.reason})")
            self.listings[key] = text
        return self.listings[key]

    def run(self, req: TriggerRequest, root: Path) -> TriggerRecord:
        started = time.perf_counter()
        base = {"nodeid": req.nodeid, "skill": req.skill_key, "skill_name": req.skill.name, "skill_path": str(req.skill.root),
                "query_id": req.query.id, "query": req.query.query, "should_trigger": req.query.should_trigger, "agent": req.agent.name,
                "run": req.run, "mode": "model", "gateway_mode": "probe", "set_digest": req.set_digest, "rivals": req.rivals.names,
                "rivals_digest": req.rivals.digest, "agent_version": req.agent.version(self.runner.settings.agents_dirs)}
        try:
            listing = self.listing(req, root)
            request = ChatRequest(messages=(ChatMessage(role="system", content=f"{PROBE_SYSTEM}\n\n{listing}"),
                                            ChatMessage(role="user", content=req.query.query)),
                                  json_schema=PROBE_SCHEMA, schema_name="skill_choice", max_tokens=200, attempt=req.run - 1)
            answer, reply = self.chat.structured(request, ProbeAnswer)
        except (ProviderError, RuntimeError) as exc:
            return TriggerRecord(**base, status="ERROR", reason=f"probe failed: {exc}", seconds=round(time.perf_counter() - started, 4))
        chosen = (answer.skill or "").strip()
        installed = {skill_key(n): n for n in (req.skill.name, *req.rivals.names)}
        loaded = installed.get(skill_key(chosen)) if chosen else None
        triggered = loaded == req.skill.name
        ignored = [f"{chosen}: not a listed skill"] if chosen and loaded is None else []
        return TriggerRecord(**base, status="TRIGGERED" if triggered else "NOT_TRIGGERED", triggered=triggered, how="probe" if triggered else None,
                             loaded=[loaded] if loaded else [], rival_loaded=loaded if loaded and not triggered else None,
                             skill_listed=req.skill.name in listing, ended_by="answer", ignored=ignored, requests=1, model_turns=1,
                             model=reply.model, tokens_in=reply.input_tokens, tokens_out=reply.output_tokens,
                             seconds=round(time.perf_counter() - started, 4), notes=[f"probe reason: {answer.reason}"[:300]],
                             artifacts={"listing": json.dumps(listing[:200])})
