"""Text helpers shared by the parsers: flattening result payloads, telling a skill body from an
acknowledgement or a refusal, and naming a skill from a SKILL.md it read.

These patterns are facts about harness output (each noted with its source in the reference), kept
in one place so a harness that changes its wording is fixed once.
"""

from __future__ import annotations

import json
import re
from typing import Any

# "Launching skill: x" (Claude), "Skill 'x' activated (no instructions available)." (Strands),
# "Skill **x** activated. Resources loaded from …" (Gemini display string), "Loaded skill: x" (OpenCode title).
_ACK = re.compile(
    r"(?:(?:launching|loading|activating|loaded|activated)\s+skill\b.*"
    r"|skill\s+\[?\s*(?:\*\*|['\"`])?[\w.:/-]+(?:\*\*|['\"`])?\s*\]?\s+(?:activated|loaded|launched)\b.*)",
    re.I,
)
# A refusal a harness reports with a *success* status (Strands' @tool returns plain strings).
_REFUSAL = re.compile(
    r"(?:error:\s*skill_name is required.*"
    r"|(?:error:\s*)?skill\s+['\"`]?[^\s'\"`]*['\"`]?\s+(?:was\s+|is\s+)?not found.*"
    r"|(?:error:\s*)?(?:unknown|unrecognized|unrecognised)\s+skill.*"
    r"|(?:error:\s*)?no such skill.*)",
    re.I,
)
# Claude Code injects a note instead of the body when a skill is loaded again.
_REINVOCATION = re.compile(r"\(?\s*re-invocation of /|skill /\S+ (?:was loaded earlier|is already loaded)", re.I)
_NUMBERED = re.compile(r"^\s*\d+(?:\t|→|\| |: )")
_FM_OPEN = re.compile(r"^---[ \t]*$", re.M)
_FM_NAME = re.compile(r"^name:\s*['\"]?([^'\"\n#]+?)['\"]?\s*(?:#.*)?$", re.M)
FAIL_STATUSES = frozenset({"error", "errored", "fail", "failed", "failure", "cancelled", "canceled", "declined", "rejected"})
# 141 is SIGPIPE: `cat SKILL.md | head -20` exits 141 after head has what it needs — the read worked.
OK_EXIT_CODES = frozenset({0, 141})
TEXT_KEYS = ("instructions", "llmContent", "content", "output", "aggregated_output", "text", "response", "result", "message")


def cap(text: str | None, limit: int) -> tuple[str | None, bool]:
    """At most ``limit`` characters, keeping head and tail, and whether anything was cut."""
    if text is None or len(text) <= limit:
        return text, False
    half = max(limit // 2 - 20, 1)
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters omitted …]\n{text[-half:]}", True


def flatten(value: Any, depth: int = 0) -> str:
    """The human-readable text of a result payload: a string, a list of text blocks, or a dict."""
    if value is None or depth > 6:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    if isinstance(value, list):
        return "\n".join(t for t in (flatten(v, depth + 1) for v in value) if t)
    if isinstance(value, dict):
        for key in TEXT_KEYS:
            if key in value and value[key] not in (None, "", [], {}):
                return flatten(value[key], depth + 1)
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def is_acknowledgement(text: str) -> bool:
    """A one-line "skill launched" note is not the skill's body."""
    first = text.strip().split("\n", 1)[0].strip()
    return bool(first) and bool(_ACK.fullmatch(first)) and (text.strip() == first or first.lower().startswith("skill **"))


def is_refusal_text(text: str) -> bool:
    stripped = text.strip()
    return "\n" not in stripped and bool(_REFUSAL.fullmatch(stripped))


def is_reinvocation_note(text: str) -> bool:
    return bool(_REINVOCATION.search(text[:300]))


def strip_line_numbers(text: str) -> str:
    """Undo ``cat -n``-style numbering (Claude's Read, OpenCode's read) so frontmatter is found."""
    lines = text.split("\n")
    numbered = [ln for ln in lines if _NUMBERED.match(ln)]
    if lines and len(numbered) >= max(1, len([ln for ln in lines if ln.strip()]) * 0.6):
        return "\n".join(_NUMBERED.sub("", ln, count=1) for ln in lines)
    return text


def frontmatter_name(text: str) -> str | None:
    """``name:`` from a SKILL.md's leading YAML block; a regex on purpose — the text is untrusted."""
    body = strip_line_numbers(text).lstrip("\ufeff")
    # A wrapper line may come first (OpenCode's read shows `<file>`): the block opens near the top.
    start = _FM_OPEN.search(body[:400])
    if not start:
        return None
    body = body[start.end():]
    end = body.find("\n---")
    head = body[: end if end != -1 else 4000]
    m = _FM_NAME.search(head)
    return m.group(1).strip() if m else None


def skill_name_from_path(path: str) -> str | None:
    """``…/skills/pdf-processing/SKILL.md`` → ``pdf-processing``; a bare ``SKILL.md`` names nothing."""
    parts = [p for p in re.split(r"[\\/]+", path.strip().strip("'\"")) if p]
    if len(parts) < 2 or parts[-1].lower() != "skill.md" or parts[-2] in (".", ".."):
        return None
    return parts[-2]


def decode_json_string(value: Any) -> Any:
    """Tool arguments sometimes arrive as a JSON-encoded string (Responses API, Codex rollouts)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {}
    return value


_WRAPPED_BODY = (
    re.compile(r"<instructions>(.*?)</instructions>", re.S),  # Gemini CLI <activated_skill>
    re.compile(r"<skill_content\b[^>]*>(.*?)(?:</skill_content>|$)", re.S),  # OpenCode skill tool
)


def unwrap_skill_body(text: str) -> str:
    """The SKILL.md text inside a harness's wrapper (Gemini ``<activated_skill>``, OpenCode ``<skill_content>``)."""
    for pattern in _WRAPPED_BODY:
        m = pattern.search(text)
        if m and m.group(1).strip():
            return m.group(1).strip()
    return text


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}``: harness fields are optional and untyped."""
    return value if isinstance(value, dict) else {}
