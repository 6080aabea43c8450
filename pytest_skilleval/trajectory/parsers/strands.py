"""Strands Agents with the ``AgentSkills`` plugin: ``agent.messages`` dumps and session-manager messages.

Messages are Bedrock-shaped: ``{role, content: [{text} | {toolUse: {toolUseId, name, input}} |
{toolResult: {toolUseId, status, content}}]}``; a session manager wraps each as ``{message: …}``.
A JSON document ``{system_prompt, messages}`` is accepted too. The skill tool is
``skills{skill_name}``; its result is the body with a ``---``/``Location:`` tail. Because ``@tool``
reports plain strings as ``success``, a refusal is known only by its text ("Skill 'x' not found.
Available skills: …"), and "Skill 'x' activated (no instructions available)." is a load without a
body. The catalog is the ``<available_skills>`` block of the system prompt (reference §2.3a).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects


class StrandsParser(TrajectoryParser):
    name = "strands"
    aliases = ("strands-agents", "strands-agentskills", "bedrock")
    description = "Strands Agents messages (Bedrock toolUse/toolResult) with the AgentSkills plugin"

    def sniff(self, first_lines: Sequence[str]) -> bool:
        if any('"toolUse"' in line or '"toolResult"' in line for line in first_lines):
            return True
        return any("system_prompt" in obj or (isinstance(obj.get("message"), dict) and "message_id" in obj)
                   for obj in sniff_objects(first_lines))

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        builder.fmt = "messages"
        for rec in records:
            if isinstance(rec.get("message"), dict) and "role" not in rec:
                rec = {**rec["message"], **({"system_prompt": rec["system_prompt"]} if "system_prompt" in rec else {})}
            blocks.feed_message(builder, rec)
            meta = T.as_dict(rec.get("metadata"))
            usage = rec.get("usage") or meta.get("usage")
            if isinstance(usage, dict):
                builder.add_usage(usage.get("inputTokens"), usage.get("outputTokens"), usage.get("cacheReadInputTokens"))
