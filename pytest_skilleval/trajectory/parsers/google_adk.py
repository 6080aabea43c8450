"""Google ADK ``SkillToolset``: session events, ``{role, parts}`` contents, and bare call events.

Events are ``{id, invocation_id|invocationId, author, content: {role, parts}, usage_metadata}``;
parts hold ``function_call``/``functionCall`` and ``function_response``/``functionResponse`` (snake
or camel case). ``load_skill{skill_name}`` (or a prefixed ``<app>_load_skill``) answers
``{skill_name, instructions, frontmatter}`` — or ``{error, error_code}`` when refused. The catalog
comes from the discovery tools ``list_skills`` / ``search_skills`` (``<available_skills>`` XML or a
``{"skills": [...]}`` list), trusted only from those tools (reference §2.3f).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects


def _is_skill_tool(text: str) -> bool:
    return any(t in text for t in ('"load_skill"', "_load_skill\"", '"list_skills"', '"search_skills"'))


class GoogleAdkParser(TrajectoryParser):
    name = "google-adk"
    aliases = ("adk", "google_adk")
    description = "Google ADK session events and contents with load_skill / list_skills"
    priority = 90  # before the Gemini parser: both speak Google parts, but ADK events carry more

    def sniff(self, first_lines: Sequence[str]) -> bool:
        for obj in sniff_objects(first_lines):
            if ("invocation_id" in obj or "invocationId" in obj) and "author" in obj:
                return True
        return any(_is_skill_tool(line) and ("function_call" in line or "functionCall" in line or '"args"' in line)
                   for line in first_lines)

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        builder.fmt = "events"
        for rec in records:
            builder.session_id = builder.session_id or rec.get("session_id") or rec.get("sessionId")
            usage = rec.get("usage_metadata") or rec.get("usageMetadata")
            if isinstance(usage, dict):
                builder.add_usage(usage.get("prompt_token_count", usage.get("promptTokenCount")),
                                  usage.get("candidates_token_count", usage.get("candidatesTokenCount")),
                                  usage.get("cached_content_token_count", usage.get("cachedContentTokenCount")))
            content = rec.get("content")
            if isinstance(content, dict) and ("parts" in content or "role" in content):
                role = content.get("role") or ("user" if rec.get("author") == "user" else "model")
                blocks.feed_message(builder, {"role": role, "parts": content.get("parts") or []})
            elif "role" in rec or "system_instruction" in rec or "systemInstruction" in rec:
                blocks.feed_message(builder, rec)
            elif isinstance(rec.get("name"), str) and isinstance(rec.get("args"), dict):
                # A bare call event {name, args, id}; a bare response {name, response, id}.
                builder.tool_call(rec.get("id"), rec["name"], rec["args"])
            elif isinstance(rec.get("name"), str) and "response" in rec:
                blocks.feed_response(builder, rec.get("id"), rec["name"], rec["response"])
