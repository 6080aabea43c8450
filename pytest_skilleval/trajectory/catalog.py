"""Find the skill catalog an agent was offered, in each harness's listing format.

Formats (reference §2.4, §6; agent-clis.md for the four CLIs as verified here):

* ``<available_skills><skill><name/><description/><location/></skill>…`` — Strands, OpenCode,
  Gemini CLI, Google ADK's ``list_skills``; an empty block, or "No skills are currently available.", is
  an offered-but-empty catalog;
* Codex ``<skills_instructions>``: ``### Available skills`` lines ``- name: description (file: r0/x/SKILL.md)``,
  with ``r0`` resolved through the ``### Skill roots`` table;
* Claude Code ``<system-reminder>``: "The following skills are available for use with the Skill tool:"
  followed by ``- name: description`` lines;
* OpenCode's short form ``## Available Skills`` with ``- **name**: description`` lines.

Callers pass only *trusted* text (system/developer prompts, harness reminders, discovery-tool
results): a catalog quoted inside a web page the agent fetched must not count.
"""

from __future__ import annotations

import html
import re
from typing import Any

from pytest_skilleval.trajectory.model import CatalogSkill

_XML_BLOCK = re.compile(r"<available_skills>(.*?)</available_skills>", re.S | re.I)
_XML_SKILL = re.compile(r"<skill>(.*?)</skill>", re.S | re.I)
_CLAUDE_INTRO = re.compile(r"The following skills are available for use with the Skill tool:?\s*\n", re.I)
_MD_HEADER = re.compile(r"^#{2,3}\s+Available skills\s*$", re.I | re.M)
_ROOT = re.compile(r"^\s*-\s*`?(r\d+)`?\s*=\s*`?([^`\n]+?)`?\s*$", re.M)
_FILE_SUFFIX = re.compile(r"\s*\((?:file|location|path):\s*([^)]*)\)\s*$", re.I)
_BOLD_ITEM = re.compile(r"^\s*[-*]\s+\*\*(.+?)\*\*\s*:?\s*(.*)$")
_PLAIN_ITEM = re.compile(r"^\s*[-*]\s+`?([^\s`:][^`]*?)`?:\s+(.*)$")
_BARE_ITEM = re.compile(r"^\s*[-*]\s+`?([\w.:/-]+)`?\s*$")
MAX_SKILLS = 5000


def _tag(block: str, name: str) -> str | None:
    m = re.search(rf"<{name}>(.*?)</{name}>", block, re.S | re.I)
    return html.unescape(m.group(1).strip()) if m else None


def _xml(text: str) -> list[CatalogSkill] | None:
    blocks = _XML_BLOCK.findall(text)
    if not blocks:
        return None
    out: list[CatalogSkill] = []
    for block in blocks:
        for m in _XML_SKILL.finditer(block):
            name = _tag(m.group(1), "name")
            if name:  # a nameless entry cannot be selected; a missing description is ""
                out.append(CatalogSkill(name=name, description=_tag(m.group(1), "description") or "",
                                        path=_tag(m.group(1), "location")))
    return out


def _list_items(lines: list[str], roots: dict[str, str]) -> list[CatalogSkill]:
    out: list[CatalogSkill] = []
    for line in lines:
        m = _BOLD_ITEM.match(line) or _PLAIN_ITEM.match(line)
        if m:
            name, desc = m.group(1).strip(), m.group(2).strip()
        else:
            b = _BARE_ITEM.match(line)
            if not b:
                continue
            name, desc = b.group(1), ""
        path = None
        f = _FILE_SUFFIX.search(desc)
        if f:
            desc, path = desc[: f.start()].rstrip(), f.group(1).strip()
            root, _, rest = path.partition("/")
            if root in roots:
                path = roots[root].rstrip("/") + "/" + rest
        out.append(CatalogSkill(name=name, description=desc, path=path))
    return out


def _section_lines(text: str, start: int) -> list[str]:
    """List lines after a header, up to the next header or closing tag."""
    lines: list[str] = []
    for line in text[start:].split("\n"):
        stripped = line.strip()
        if stripped.startswith("#") or stripped.startswith("</"):
            break
        lines.append(line)
    return lines


def _markdown(text: str) -> list[CatalogSkill] | None:
    m = _MD_HEADER.search(text)
    if not m:
        return None
    roots = dict(_ROOT.findall(text))
    return _list_items(_section_lines(text, m.end()), roots)


def _claude(text: str) -> list[CatalogSkill] | None:
    m = _CLAUDE_INTRO.search(text)
    if not m:
        return None
    lines: list[str] = []
    for line in text[m.end():].split("\n"):
        if line.strip().startswith("</system-reminder>"):
            break
        if line.strip() and not line.lstrip().startswith(("-", "*")) and lines:
            break  # the listing ends at the first paragraph that is not a list item
        lines.append(line)
    return _list_items(lines, {})


def parse_catalog_text(text: str) -> tuple[list[CatalogSkill], str] | None:
    """The skills listed in ``text`` and the format's name, or None when it lists none at all."""
    if not text or "skill" not in text.lower():
        return None
    for kind, finder in (("available_skills", _xml), ("claude-reminder", _claude), ("markdown", _markdown)):
        found = finder(text)
        if found is not None:
            return found[:MAX_SKILLS], kind
    return None


def parse_structured(value: Any) -> list[CatalogSkill] | None:
    """A structured listing: ``["a", "b"]`` (Claude's init event) or ``[{"name", "description"}]`` (ADK)."""
    if not isinstance(value, list):
        return None
    out: list[CatalogSkill] = []
    for item in value[:MAX_SKILLS]:
        if isinstance(item, str) and item.strip():
            out.append(CatalogSkill(name=item.strip()))
        elif isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"].strip():
            desc = item.get("description")
            path = item.get("path") or item.get("location")
            out.append(CatalogSkill(name=item["name"].strip(), description=desc if isinstance(desc, str) else None,
                                    path=path if isinstance(path, str) else None))
    return out
