"""Recover the offered catalog (and the task) from a gateway request log.

Some harnesses never write the catalog into their own output: Claude Code, Codex ``exec --json``,
OpenCode and Gemini CLI only send it to the model. The model gateway logs every request a trial
makes as one JSON line; the first request that lists skills is the catalog the agent was offered.
Accepted line shapes: the request body itself, or an envelope holding it under ``body``,
``request_body``, ``json``, ``request`` or ``payload`` (a dict or a JSON string). Bodies of all four
wire protocols are understood: Anthropic Messages, OpenAI Responses, OpenAI Chat, Gemini.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.trajectory.catalog import parse_catalog_text
from pytest_skilleval.trajectory.model import CatalogSkill
from pytest_skilleval.trajectory.reader import RecordReader
from pytest_skilleval.trajectory.tools import ParseLimits

_BODY_KEYS = ("messages", "input", "contents", "system", "systemInstruction", "system_instruction", "instructions")
_ENVELOPE_KEYS = ("body", "request_body", "json", "request", "payload", "data")
# Harness-injected context blocks that are not the user's task.
_CONTEXT = re.compile(r"^\s*<(system-reminder|environment_context|session_context|user_instructions|permissions|skills_instructions"
                      r"|INSTRUCTIONS|command-message)\b", re.I)
MAX_REQUESTS_SCANNED = 50  # the catalog is in the first real request; side calls (titles) come first at most a few times


@dataclass
class RequestContext:
    catalog: list[CatalogSkill] | None = None
    catalog_format: str | None = None
    task: str | None = None
    requests: int = 0


def _find_body(obj: Any, depth: int = 0) -> dict[str, Any] | None:
    if isinstance(obj, str) and depth:
        try:
            obj = json.loads(obj)
        except ValueError:
            return None
    if not isinstance(obj, dict) or depth > 3:
        return None
    if any(k in obj for k in _BODY_KEYS):
        return obj
    for key in _ENVELOPE_KEYS:
        found = _find_body(obj.get(key), depth + 1)
        if found is not None:
            return found
    return None


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        content = content.get("parts", [content])
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def request_segments(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(role, texts) of a request body, system prompt first, in any of the four wire protocols."""
    segs: list[tuple[str, list[str]]] = []
    for key in ("system", "instructions", "systemInstruction", "system_instruction"):
        if body.get(key):
            segs.append(("system", _texts(body[key])))
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if isinstance(items, str):
            segs.append(("user", [items]))
            continue
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("type") not in (None, "message"):
                continue  # function calls and their outputs are not prompt text
            role = str(item.get("role") or "user")
            role = "assistant" if role == "model" else role
            segs.append((role, _texts(item.get("content", item.get("parts")))))
    return segs


def read_request_context(path: str | Path, limits: ParseLimits | None = None) -> RequestContext:
    ctx = RequestContext()
    records = RecordReader(path, limits).records()
    try:
        _scan(records, ctx)
    finally:
        records.close()  # we usually stop early: release the file now, not at garbage collection
    return ctx


def _scan(records: Iterable[dict[str, Any]], ctx: RequestContext) -> None:
    fallback: list[str] = []
    try:
        _scan_requests(records, ctx, fallback)
    finally:
        if ctx.task is None and fallback:
            ctx.task = fallback[0]


def _scan_requests(records: Iterable[dict[str, Any]], ctx: RequestContext, fallback: list[str]) -> None:
    for record in records:
        body = _find_body(record)
        if body is None:
            continue
        ctx.requests += 1
        segs = request_segments(body)
        # A request without tools is a side call (OpenCode's title generator): its user text is not the task.
        side_call = not body.get("tools")
        if ctx.task is None and not (side_call and fallback):
            for role, texts in segs:  # the first user text that is not an injected context block
                task = "\n".join(t.strip() for t in texts if t.strip() and not _CONTEXT.match(t)) if role == "user" else ""
                if task and side_call:
                    fallback.append(task)
                elif task:
                    ctx.task = task
                if task:
                    break
        if ctx.catalog is None:
            for role, texts in segs:
                # Trusted places only: the system/developer prompt, and Claude's reminder in a user turn.
                trusted = [t for t in texts if role in ("system", "developer") or "<system-reminder>" in t]
                for text in trusted:
                    found = parse_catalog_text(text)
                    if found is not None:
                        ctx.catalog, ctx.catalog_format = found
                        break
                if ctx.catalog is not None:
                    break
        if (ctx.catalog is not None and ctx.task is not None) or ctx.requests >= MAX_REQUESTS_SCANNED:
            return


def listing_text(request_log: str | Path) -> str | None:
    """The block that lists the skills in the first request that has one — in the system prompt, a
    developer message or Claude's ``<system-reminder>`` — verbatim as the CLI sent it (the model
    probe's prompt carries it)."""
    records = RecordReader(request_log).records()
    try:
        for record in records:
            body = _find_body(record)
            if body is None or not body.get("tools"):
                continue
            for role, texts in request_segments(body):
                for text in texts:
                    trusted = role in ("system", "developer") or "<system-reminder>" in text
                    if trusted and parse_catalog_text(text) is not None:
                        return _listing_block(text)
    finally:
        records.close()
    return None


_LISTING_TAGS = ("available_skills", "skills_instructions", "system-reminder")


def _listing_block(text: str) -> str:
    """The listing's own block out of a whole system prompt: the paragraph that introduces it through
    its closing tag (``<available_skills>``, ``<skills_instructions>``, ``<system-reminder>``), verbatim."""
    for tag in _LISTING_TAGS:
        start, end = text.find(f"<{tag}"), text.find(f"</{tag}>")
        if 0 <= start < end:
            intro = text.rfind("\n\n", 0, start)
            return text[intro + 2 if intro >= 0 else 0:end + len(tag) + 3]
    return text
