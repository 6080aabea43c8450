"""Read published benchmark results into one row shape: BENCHMARK.md cards of every layout in use,
NVIDIA's ``benchmarks.json`` (schema 2) and our own ``results.json``.

A :class:`Row` is one skill × dimension × agent: the skill-assisted score and the uplift over the
no-skill baseline, both in percentage points, and how many tasks it rests on. Card layouts read:

- **"# Evaluation Report"** (NVSkills-Eval / Skill Evaluator): ``## Results`` table
  ``| Dimension | Num | <agent> … |`` with cells ``92% (+12%)``; agents as backticked ids or
  model-labelled (``Claude Code (`model`)``); ``N/A`` cells and cards with no table have no results.
- **"# Skill Benchmark: <name>"** (SkillEvaluator ≥ 0.9, and ours): ``| Measure | <agent> (Baseline →
  Skill …) |`` with cells ``82% → 96% (+15 points …)``; the ``Overall`` row is a summary and is skipped.

Skills whose card has no results are kept as :class:`Skill` entries with no rows, never dropped. A skill whose
Tier 3 ran scripted (a harness check, not a model measurement) is marked ``scripted``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIMENSIONS = ("Security", "Correctness", "Discoverability", "Effectiveness", "Efficiency")
AGENT_IDS = {"claude code": "claude-code", "claude-code": "claude-code", "codex": "codex", "codex cli": "codex", "opencode": "opencode",
             "gemini cli": "gemini", "gemini": "gemini"}
CARD_NAME = "BENCHMARK.md"
#: How our cards label a scripted Tier 3 run (reports/tier3.py's HARNESS_CHECK; a test holds them equal).
HARNESS_CHECK = "harness check — not a model measurement"

_SCORE_UPLIFT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)%\s*\(\s*([+\-−±]?\s*\d+(?:\.\d+)?)\s*%?\s*\)")  # 92% (+12%)
_BASE_SKILL = re.compile(r"^\s*(-?\d+(?:\.\d+)?)%\s*→\s*(-?\d+(?:\.\d+)?)%\s*\(\s*([+\-−±]?\s*\d+(?:\.\d+)?)\s*points")  # 82% → 96% (+15 points
_TASKS = re.compile(r"^- (?:Dataset|Tasks):\s*(\d+)\s+evaluation (?:tasks?|cases?(?:\(s\))?)", re.M)
_SKILL_LINE = re.compile(r"^- Skill:\s*`([^`]+)`", re.M)


@dataclass(frozen=True)
class Row:
    skill: str
    dimension: str  # one of DIMENSIONS
    agent: str  # canonical id: claude-code, codex, …
    num: int | None  # tasks this row rests on, when the source says
    score_pct: float  # skill-assisted score, 0–100
    uplift_pct: float  # skill − baseline, points


@dataclass
class Skill:
    name: str
    tasks: int | None = None
    source: str = ""
    rows: list[Row] = field(default_factory=list)
    layout: str = ""
    #: Tier 3 ran in scripted mode: the gateway played the model from each case's script, so the lift tests the
    #: harness, not the skill (our results.json's ``tier3.scripted``, or our card's harness-check label).
    scripted: bool = False

    @property
    def has_results(self) -> bool:
        return bool(self.rows)


class SourceError(ValueError):
    """A file that is neither a card, a benchmarks.json nor a results.json."""


def agent_id(header: str) -> str:
    """``Claude Code (`aws/…`)``, ``Claude Code (Baseline → Skill Uplift)``, ```codex``` → ``claude-code`` / ``codex``."""
    text = header.strip()
    tick = re.fullmatch(r"`([^`]+)`", text)
    if tick:
        text = tick.group(1)
    text = re.sub(r"\s*\(.*\)\s*$", "", text).strip()
    return AGENT_IDS.get(text.lower(), re.sub(r"\s+", "-", text.lower()))


def _number(text: str) -> float:
    text = text.replace("−", "-").replace(" ", "")
    return 0.0 if text.startswith("±") else float(text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = _cells(lines[i])
            body = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                body.append(_cells(lines[i]))
                i += 1
            yield header, body
        else:
            i += 1


def parse_card(text: str, name: str, source: str = "") -> Skill:
    """One card → a :class:`Skill`; ``name`` is the catalog name (the card's folder)."""
    tasks = _TASKS.search(text)
    skill = Skill(name=name, tasks=int(tasks.group(1)) if tasks else None, source=source, scripted=HARNESS_CHECK in text)
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    layouts = {"# Skill Benchmark": "skill-benchmark", "# Evaluation Report": "evaluation-report"}
    skill.layout = next((v for k, v in layouts.items() if first.startswith(k)), "unknown")
    for header, body in _tables(text):
        key = header[0].lower() if header else ""
        if key not in ("dimension", "measure") or len(header) < 2 or "question" in (h.lower() for h in header):
            continue
        num_col = 1 if len(header) > 1 and header[1].lower() == "num" else None
        agent_cols = [(i, agent_id(h)) for i, h in enumerate(header) if i > 0 and i != num_col]
        for cells in body:
            dimension = cells[0].strip("* ").capitalize()
            if dimension not in DIMENSIONS:  # Overall, Pass rate, Verdict: summaries, not dimension rows
                continue
            num = None
            if num_col is not None and num_col < len(cells) and cells[num_col].isdigit():
                num = int(cells[num_col])
            for i, agent in agent_cols:
                cell = cells[i] if i < len(cells) else ""
                m = _SCORE_UPLIFT.match(cell)
                if m:
                    skill.rows.append(Row(name, dimension, agent, num, float(m.group(1)), _number(m.group(2))))
                    continue
                m = _BASE_SKILL.match(cell)
                if m:
                    skill.rows.append(Row(name, dimension, agent, num, float(m.group(2)), _number(m.group(3))))
    return skill


def card_name(path: Path) -> str:
    """``x/BENCHMARK.md`` → ``x`` (the catalog folder); ``x.BENCHMARK.md`` → ``x``."""
    if path.name == CARD_NAME:
        return path.parent.name
    return path.name[: -len("." + CARD_NAME)] if path.name.endswith("." + CARD_NAME) else path.stem


def from_benchmarks_json(doc: dict[str, Any], source: str) -> list[Skill]:
    """NVIDIA's ``benchmarks.json`` (schema 2): ``skills[]`` with ``tasks``, ``results[]`` rows."""
    skills: dict[str, Skill] = {}
    for s in doc.get("skills") or []:
        name = s.get("catalog_dir") or s.get("skill")
        skills[name] = Skill(name=name, tasks=s.get("tasks"), source=source, layout="benchmarks.json")
    for name in doc.get("skills_without_results") or []:
        skills.setdefault(name, Skill(name=name, source=source, layout="benchmarks.json"))
    for r in doc.get("results") or []:
        name = r["catalog_dir"]
        skill = skills.setdefault(name, Skill(name=name, source=source, layout="benchmarks.json"))
        skill.rows.append(Row(name, str(r["dimension"]).capitalize(), agent_id(str(r["agent"])), r.get("num"), float(r["score_pct"]),
                              float(r["uplift_pct"])))
    return list(skills.values())


def from_results_json(doc: dict[str, Any], source: str) -> list[Skill]:
    """Our ``results.json``: each skill's Tier 3 lift rows per agent (fractions → points)."""
    out = []
    for s in doc.get("skills") or []:
        t3 = s.get("tier3") or {}
        scripted = t3.get("scripted") is True or "scripted" in (t3.get("modes") or [])
        skill = Skill(name=str(s.get("key") or s.get("name")), tasks=t3.get("cases"), source=source, layout="results.json", scripted=scripted)
        for agent in t3.get("agents") or []:
            for r in agent.get("lift") or []:
                dimension = str(r.get("measure", "")).capitalize()
                if dimension in DIMENSIONS and r.get("delta") is not None and r.get("with_skill") is not None:
                    skill.rows.append(Row(skill.name, dimension, agent_id(str(agent.get("agent"))), r.get("n"),
                                          round(r["with_skill"] * 100, 6), round(r["delta"] * 100, 6)))
        out.append(skill)
    return out


def _cards_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(f"*{CARD_NAME}") if p.is_file() and not any(part.startswith(".") for part in p.parts))


def read(paths: Iterable[Path]) -> tuple[list[Skill], list[str]]:
    """Every skill in ``paths`` (cards, folders of cards, benchmarks.json, results.json); a skill
    named twice keeps its first source, and the second is reported."""
    skills: dict[str, Skill] = {}
    notes: list[str] = []
    for path in paths:
        found: list[Skill] = []
        if path.is_dir():
            results = path / "results.json"
            if results.is_file():  # a report dir: results.json holds what its cards show, unrounded
                found = from_results_json(json.loads(results.read_text(encoding="utf-8")), str(results))
            else:
                found = [parse_card(p.read_text(encoding="utf-8"), card_name(p), str(p)) for p in _cards_under(path)]
        elif path.name.endswith(CARD_NAME) or path.suffix == ".md":
            found = [parse_card(path.read_text(encoding="utf-8"), card_name(path), str(path))]
        elif path.suffix == ".json":
            doc = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(doc, dict) and "results" in doc and "schema_version" in doc and isinstance(doc.get("results"), list):
                found = from_benchmarks_json(doc, str(path))
            elif isinstance(doc, dict) and isinstance(doc.get("skills"), list):
                found = from_results_json(doc, str(path))
            else:
                raise SourceError(f"{path}: neither a benchmarks.json (results[]) nor a results.json (skills[])")
        else:
            raise SourceError(f"{path}: not a BENCHMARK.md card, a folder of cards, a benchmarks.json or a results.json")
        for skill in found:
            if skill.name in skills:
                notes.append(f"{skill.name}: given again in {skill.source}; the first ({skills[skill.name].source}) is kept")
                continue
            skills[skill.name] = skill
    return sorted(skills.values(), key=lambda s: s.name), notes
