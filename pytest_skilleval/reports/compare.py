"""``skilleval compare OLD NEW``: what changed between two runs, as Markdown for a pull-request comment.

OLD and NEW are ``results.json`` files or report dirs. Per skill, agent and measure (overall and the
five dimensions) the change of the **with-skill** score, paired over the cases both runs scored
(:func:`stats.lift` with NEW as one arm and OLD as the other: mean of the per-case differences and
its t interval); checks that newly fail or newly pass; with-skill trials that newly fail or pass;
trigger recall and precision. A **regression** is any of: a measure down by at least
``--threshold`` points, a blocking check or a skill verdict that passed and no longer does, trigger
recall or precision down by at least the threshold. Regressions make the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilleval.reports.html import label, load, pct, points
from pytest_skilleval.tier3 import stats

MEASURES = ("overall", "security", "correctness", "discoverability", "effectiveness", "efficiency")
FAILING = ("FAILED", "ERROR", "INCOMPLETE")
DEFAULT_THRESHOLD = 5.0  # points


@dataclass
class MeasureChange:
    skill: str
    agent: str
    measure: str
    old: float | None
    new: float | None
    delta: float | None  # paired mean of new − old over shared cases
    low: float | None
    high: float | None
    n: int
    regression: bool = False


@dataclass
class Comparison:
    old: str
    new: str
    threshold: float
    measures: list[MeasureChange] = field(default_factory=list)
    newly_failing_checks: list[str] = field(default_factory=list)
    newly_passing_checks: list[str] = field(default_factory=list)
    newly_failing_trials: list[str] = field(default_factory=list)
    newly_passing_trials: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # "skill: PASS → FAIL"
    triggers: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)


def _skills(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(s.get("key")): s for s in doc.get("skills") or [] if isinstance(s, dict)}


def _checks(skill: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    out = {}
    for c in skill.get("checks") or []:
        r = c.get("result") or {}
        out[f"tier {r.get('tier', '?')} {r.get('check', '?')}"] = (str(r.get("status")), bool(c.get("blocking", True)))
    return out


def _per_case(agent: Mapping[str, Any], measure: str) -> dict[str, float | None]:
    """With-skill arm, first executions: each case's mean over its attempts (as tier3/report.py does)."""
    grouped: dict[str, list[float | None]] = defaultdict(list)
    for t in agent.get("attempts") or []:
        if t.get("arm") != "with_skill" or (t.get("execution") or 1) != 1 or t.get("status") == "SKIPPED":
            continue
        value = t.get("score") if measure == "overall" else (t.get("dimensions") or {}).get(measure)
        if measure == "overall" and t.get("status") not in ("PASSED", "FAILED"):
            value = None
        grouped[str(t.get("case"))].append(value)
    return {case: stats.mean_scored(values) for case, values in grouped.items()}


def _trial_outcomes(agent: Mapping[str, Any]) -> dict[str, str]:
    return {f"{t.get('case')} a{t.get('attempt', 1)}": str(t.get("status")) for t in agent.get("attempts") or []
            if t.get("arm") == "with_skill" and (t.get("execution") or 1) == 1}


def _agents(skill: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(a.get("agent")): a for a in (skill.get("tier3") or {}).get("agents") or [] if isinstance(a, dict)}


def _triggers(skill: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(a.get("agent")): a for a in (skill.get("triggers") or {}).get("agents") or [] if isinstance(a, dict)}


def compare(old: Mapping[str, Any], new: Mapping[str, Any], *, threshold: float = DEFAULT_THRESHOLD, names: tuple[str, str] = ("OLD", "NEW")
            ) -> Comparison:
    out = Comparison(old=names[0], new=names[1], threshold=threshold)
    a, b = _skills(old), _skills(new)
    out.added, out.removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
    cut = threshold / 100
    for key in sorted(set(a) & set(b)):
        so, sn = a[key], b[key]
        if so.get("verdict") != sn.get("verdict"):
            line = f"{key}: verdict {so.get('verdict')} → {sn.get('verdict')}"
            out.verdicts.append(line)
            if so.get("verdict") == "PASS":
                out.regressions.append(line)
        co, cn = _checks(so), _checks(sn)
        for check in sorted(set(co) & set(cn)):
            (was, _), (now, blocking) = co[check], cn[check]
            if was not in FAILING and now in FAILING:
                line = f"{key}: {check} {was} → {now}" + ("" if blocking else " (advisory)")
                out.newly_failing_checks.append(line)
                if blocking:
                    out.regressions.append(line)
            elif was in FAILING and now not in FAILING:
                out.newly_passing_checks.append(f"{key}: {check} {was} → {now}")
        ao, an = _agents(so), _agents(sn)
        for agent in sorted(set(ao) & set(an)):
            for measure in MEASURES:
                po, pn = _per_case(ao[agent], measure), _per_case(an[agent], measure)
                change = stats.lift(pn, po)
                if change.n == 0:
                    continue
                row = MeasureChange(key, agent, measure, change.without_skill, change.with_skill, change.delta, change.ci_low, change.ci_high,
                                    change.n)
                if change.delta is not None and change.delta <= -cut + 1e-9:
                    row.regression = True
                    ci = f", 95% CI {points(change.ci_low)} to {points(change.ci_high)}" if change.ci_low is not None else ", no interval"
                    if change.ci_high is not None and change.ci_high >= 0:
                        ci += ", which includes 0: could be noise"
                    out.regressions.append(f"{key} · {label(agent)} · {measure}: {pct(change.without_skill)} → {pct(change.with_skill)} "
                                           f"({points(change.delta)} points{ci}; n={change.n} shared case(s))")
                out.measures.append(row)
            to, tn = _trial_outcomes(ao[agent]), _trial_outcomes(an[agent])
            for trial in sorted(set(to) & set(tn)):
                if to[trial] == "PASSED" and tn[trial] in ("FAILED", "ERROR"):
                    out.newly_failing_trials.append(f"{key} · {label(agent)} · {trial}: {to[trial]} → {tn[trial]}")
                elif to[trial] in ("FAILED", "ERROR") and tn[trial] == "PASSED":
                    out.newly_passing_trials.append(f"{key} · {label(agent)} · {trial}: {to[trial]} → {tn[trial]}")
        go, gn = _triggers(so), _triggers(sn)
        for agent in sorted(set(go) & set(gn)):
            for rate in ("recall", "precision"):
                was, now = (go[agent].get(rate) or {}).get("value"), (gn[agent].get(rate) or {}).get("value")
                if was is None or now is None or abs(now - was) < 1e-12:
                    continue
                line = f"{key} · {label(agent)} · trigger {rate}: {pct(was)} → {pct(now)} ({points(now - was)} points)"
                out.triggers.append(line)
                if now - was <= -cut + 1e-9:
                    out.regressions.append(line)
    return out


def markdown(c: Comparison) -> str:
    head = f"## skilleval compare: `{c.old}` → `{c.new}`"
    lines = [head, ""]
    if c.regressions:
        lines += [f"**❌ {len(c.regressions)} regression(s)** (threshold {c.threshold:g} points):", ""]
        lines += [f"- {r}" for r in c.regressions]
    else:
        lines.append(f"**✅ No regression** (threshold {c.threshold:g} points).")
    changed = [m for m in c.measures if m.delta is not None and abs(m.delta) >= 0.005]
    if changed:
        lines += ["", "### With-skill scores that changed (paired over shared cases)", "",
                  "| Skill | Agent | Measure | Old | New | Change (points) | 95% CI | n |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for m in changed:
            ci = f"{points(m.low)} to {points(m.high)}" if m.low is not None else "too few cases"
            mark = " ❌" if m.regression else ""
            lines.append(f"| {m.skill} | {label(m.agent)} | {m.measure} | {pct(m.old)} | {pct(m.new)} | {points(m.delta)}{mark} | {ci} | {m.n} |")
    elif c.measures:
        lines += ["", f"Tier 3 with-skill scores: no change over {len(c.measures)} skill × agent × measure comparison(s)."]
    for title, items in (("Checks newly failing", c.newly_failing_checks), ("Checks newly passing", c.newly_passing_checks),
                         ("Skill verdicts", c.verdicts), ("With-skill trials newly failing", c.newly_failing_trials),
                         ("With-skill trials newly passing", c.newly_passing_trials), ("Trigger recall and precision", c.triggers),
                         ("Skills only in the new run", c.added), ("Skills only in the old run", c.removed)):
        if items:
            lines += ["", f"### {title}", ""] + [f"- {i}" for i in items]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", type=Path, help="the earlier results.json or report dir")
    parser.add_argument("new", type=Path, help="the later results.json or report dir")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help=f"points a with-skill score (or trigger rate) may drop before it is a regression (default {DEFAULT_THRESHOLD:g})")
    parser.add_argument("--format", choices=("md", "json"), default="md")


def run(args: argparse.Namespace) -> int:
    try:
        old, new = load(args.old), load(args.new)
    except (OSError, ValueError) as exc:
        print(f"skilleval compare: {exc}", file=sys.stderr)
        return 2
    result = compare(old, new, threshold=args.threshold, names=(str(args.old), str(args.new)))
    sys.stdout.write(markdown(result) if args.format == "md" else json.dumps(asdict(result), indent=2) + "\n")
    return 1 if result.regressions else 0
