"""``skilleval aggregate PATH…``: catalog means of skill lift per dimension, under each stated weighting.

A catalog headline ("skills add +40 points of correctness") depends on how rows are weighted, and
published means do not say. This prints all three, each with its n and a 95 % interval:

- **equal rows**: every skill × agent row counts once (what a mean over a results table gives);
- **equal skills**: each skill's rows are first averaged over its agents, then skills count once;
- **weighted by tasks**: every row weighs the tasks it rests on (its ``Num`` column, else the skill's
  task count); rows with neither are left out of this weighting, and counted.

Intervals are percentile bootstraps over the weighting's units (rows or skills), 2,000 resamples, seed
0, over units in sorted order — so the same rows give the same interval whichever files they came
from. Per-agent splits follow. Skills without results are counted and listed, never dropped silently.

Rows of a scripted Tier 3 run (``make eval``'s keyless gateway played each case's script: a harness check,
not a model measurement) enter no mean unless ``--include-scripted`` asks; the output names those skills and
counts their rows either way, and labels every figure that includes them.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pytest_skilleval.catalog.cards import DIMENSIONS, HARNESS_CHECK, Row, Skill, SourceError, read

WEIGHTINGS = ("equal_rows", "equal_skills", "by_tasks")
WEIGHTING_TEXT = {"equal_rows": "equal rows (skill × agent)", "equal_skills": "equal skills (agents averaged first)",
                  "by_tasks": "weighted by tasks"}
RESAMPLES, SEED, CONFIDENCE = 2000, 0, 0.95


@dataclass(frozen=True)
class Mean:
    mean: float | None
    low: float | None
    high: float | None
    n: int  # units: rows or skills
    weight: float | None = None  # by_tasks: the tasks summed
    left_out: int = 0  # by_tasks: rows with no task count


def weighted_mean(values: Sequence[float], weights: Sequence[float] | None = None) -> Mean:
    if not values:
        return Mean(None, None, None, 0)
    v = np.asarray(values, dtype=float)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    mean = float((v * w).sum() / w.sum())
    if v.size < 2:
        return Mean(mean, None, None, int(v.size), float(w.sum()) if weights is not None else None)
    rng = np.random.RandomState(SEED)
    idx = rng.randint(0, v.size, size=(RESAMPLES, v.size))
    sums = w[idx].sum(axis=1)
    means = np.where(sums > 0, (v[idx] * w[idx]).sum(axis=1) / np.where(sums > 0, sums, 1), np.nan)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.nanquantile(means, [tail, 1 - tail])
    return Mean(mean, float(low), float(high), int(v.size), float(w.sum()) if weights is not None else None)


def _means(rows: list[Row], tasks: dict[str, int | None]) -> dict[str, Mean]:
    rows = sorted(rows, key=lambda r: (r.skill, r.agent))
    by_skill: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_skill[r.skill].append(r.uplift_pct)
    weighted = [(r.uplift_pct, r.num if r.num is not None else tasks.get(r.skill)) for r in rows]
    known = [(v, w) for v, w in weighted if w]
    by_tasks = weighted_mean([v for v, _ in known], [float(w) for _, w in known])  # type: ignore[arg-type]
    return {"equal_rows": weighted_mean([r.uplift_pct for r in rows]),
            "equal_skills": weighted_mean([sum(v) / len(v) for _, v in sorted(by_skill.items())]),
            "by_tasks": Mean(by_tasks.mean, by_tasks.low, by_tasks.high, by_tasks.n, by_tasks.weight, len(weighted) - len(known))}


@dataclass
class Aggregate:
    sources: list[str]
    skills: int
    with_results: int
    without_results: list[str]
    rows: int
    agents: list[str]
    dimensions: dict[str, dict[str, Mean]]  # dimension -> weighting -> mean
    per_agent: dict[str, dict[str, dict[str, Mean]]]  # agent -> dimension -> weighting -> mean
    notes: list[str]
    excluded: list[str]
    scripted: list[str] = field(default_factory=list)  # skills with results from a scripted Tier 3 run (harness checks)
    scripted_rows: int = 0  # their rows
    scripted_included: bool = False  # counted in the means (--include-scripted), else left out of every one


def aggregate(skills: list[Skill], *, sources: list[str], notes: list[str] | None = None, exclude: Sequence[str] = (),
              include_scripted: bool = False) -> Aggregate:
    dropped = sorted(s.name for s in skills if s.name in set(exclude))
    skills = [s for s in skills if s.name not in set(exclude)]
    scripted = [s for s in skills if s.scripted and s.has_results]
    averaged = [s for s in skills if include_scripted or not (s.scripted and s.has_results)]
    tasks = {s.name: s.tasks for s in skills}
    rows = [r for s in averaged for r in s.rows]
    agents = sorted({r.agent for r in rows})
    dims = [d for d in DIMENSIONS if any(r.dimension == d for r in rows)]
    return Aggregate(
        sources=sources, skills=len(skills), with_results=sum(s.has_results for s in averaged),
        without_results=sorted(s.name for s in skills if not s.has_results), rows=len(rows), agents=agents,
        dimensions={d: _means([r for r in rows if r.dimension == d], tasks) for d in dims},
        per_agent={a: {d: _means([r for r in rows if r.dimension == d and r.agent == a], tasks) for d in dims} for a in agents},
        notes=list(notes or []), excluded=dropped, scripted=sorted(s.name for s in scripted),
        scripted_rows=sum(len(s.rows) for s in scripted), scripted_included=include_scripted and bool(scripted))


# -- output -------------------------------------------------------------------------------------------
def _fmt(m: Mean, *, digits: int = 2) -> str:
    if m.mean is None:
        return "—"
    ci = f" [{m.low:+.{digits}f}, {m.high:+.{digits}f}]" if m.low is not None and m.high is not None else ""
    return f"{m.mean:+.{digits}f}{ci}"


def markdown(agg: Aggregate) -> str:
    title = "# Catalog aggregate: skill lift per dimension" + (f" (includes {HARNESS_CHECK} rows)" if agg.scripted_included else "")
    out = [title, "",
           f"- Sources: {', '.join(f'`{s}`' for s in agg.sources)}",
           f"- Skills: {agg.skills} ({agg.with_results} with results, {len(agg.without_results)} without"
           + (f"; {len(agg.scripted)} of them scripted" if agg.scripted_included else
              f", {len(agg.scripted)} scripted, left out" if agg.scripted else "") + ")"
           + (f"; excluded on request: {', '.join(agg.excluded)}" if agg.excluded else ""),
           f"- Rows (skill × dimension × agent): {agg.rows}; agents: {', '.join(agg.agents) or 'none'}"]
    if agg.without_results:
        out.append(f"- Without results (counted, not averaged): {', '.join(agg.without_results)}")
    if agg.scripted:
        which = f"{len(agg.scripted)} skill(s), {agg.scripted_rows} row(s): {', '.join(agg.scripted)}"
        if agg.scripted_included:
            out.append(f"- **Includes scripted Tier 3 rows ({HARNESS_CHECK}) on request (--include-scripted)**: {which}. "
                       "The gateway played the model from each case's script: every figure below mixes harness checks "
                       "with measurements and is not publication evidence.")
        else:
            out.append(f"- Scripted Tier 3 rows left out of every mean ({HARNESS_CHECK}): {which}. The gateway played "
                       "the model from each case's script, so their lift tests the harness, not the skill; "
                       "`--include-scripted` counts them, labelled.")
    out += [f"- Note: {n}" for n in agg.notes]
    out += ["", "Lift = skill-assisted score − no-skill baseline, in points; "
                f"[95% bootstrap interval over the weighting's units, {RESAMPLES} resamples, seed {SEED}].", "",
            "| Dimension | Equal rows | n rows | Equal skills | n skills | Weighted by tasks | n rows (tasks) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for d, m in agg.dimensions.items():
        t = m["by_tasks"]
        tasks = f"{t.n} ({t.weight:,.0f})" if t.weight is not None else str(t.n)
        if t.left_out:
            tasks += f"; {t.left_out} without a task count"
        out.append(f"| {d} | {_fmt(m['equal_rows'])} | {m['equal_rows'].n} | {_fmt(m['equal_skills'])} | {m['equal_skills'].n} | "
                   f"{_fmt(t)} | {tasks} |")
    out += ["", "How each weighting counts: equal rows — every skill × agent row once; equal skills — a skill's rows "
                "averaged over its agents first, then every skill once; weighted by tasks — every row by the tasks it rests on "
                "(its Num column, else the skill's task count)."]
    if agg.per_agent:
        out += ["", "## Per agent", "", "| Agent | Dimension | Equal rows (= equal skills) | n | Weighted by tasks | n |",
                "|---|---|---:|---:|---:|---:|"]
        for a, dims in agg.per_agent.items():
            for d, m in dims.items():
                out.append(f"| {a} | {d} | {_fmt(m['equal_rows'])} | {m['equal_rows'].n} | {_fmt(m['by_tasks'])} | {m['by_tasks'].n} |")
    return "\n".join(out) + "\n"


def as_json(agg: Aggregate) -> str:
    return json.dumps(asdict(agg), indent=2) + "\n"


def as_csv(agg: Aggregate) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scope", "dimension", "weighting", "mean", "ci_low", "ci_high", "n", "tasks"])
    label = "+scripted" if agg.scripted_included else ""  # a mean holding harness checks says so in its scope
    for scope, dims in [("all", agg.dimensions), *((f"agent:{a}", d) for a, d in agg.per_agent.items())]:
        for d, by in dims.items():
            for weighting in WEIGHTINGS:
                if scope != "all" and weighting == "equal_skills":
                    continue  # one row per skill per agent: the same as equal rows
                m = by[weighting]
                w.writerow([scope + label, d, weighting, *("" if x is None else f"{x:.6f}" for x in (m.mean, m.low, m.high)), m.n,
                            "" if m.weight is None else f"{m.weight:g}"])
    return buf.getvalue()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, help="BENCHMARK.md cards, folders of them, a benchmarks.json or a results.json")
    parser.add_argument("--format", choices=("md", "json", "csv"), default="md")
    parser.add_argument("--exclude", action="append", default=[], metavar="SKILL", help="leave a skill out (repeatable); it is named in the output")
    parser.add_argument("--include-scripted", action="store_true",
                        help="count the rows of scripted Tier 3 runs (harness checks, not model measurements) in the means, labelled; "
                             "by default they are left out and counted")


def run(args: argparse.Namespace) -> int:
    try:
        skills, notes = read(args.paths)
    except (OSError, ValueError, SourceError) as exc:
        print(f"skilleval aggregate: {exc}", file=sys.stderr)
        return 2
    agg = aggregate(skills, sources=[str(p) for p in args.paths], notes=notes, exclude=args.exclude, include_scripted=args.include_scripted)
    sys.stdout.write({"md": markdown, "json": as_json, "csv": as_csv}[args.format](agg))
    return 0


def figures(agg: Aggregate) -> dict[str, Any]:
    """The per-dimension figures as plain numbers (what two sources must agree on)."""
    return {d: {w: (round(m.mean, 9) if m.mean is not None else None, m.n) for w, m in by.items()} for d, by in agg.dimensions.items()}
