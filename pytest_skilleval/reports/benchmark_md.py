"""``BENCHMARK.md``: one card per skill, in SkillEvaluator's section order.

The verdict only speaks for the tiers that ran and says which did not. "Recommended for
publication" appears only when all three tiers ran and passed, so a Tier 1-only run can never
read as a publication recommendation.
"""

from __future__ import annotations

from pytest_skilleval.reports import tier3 as tier3_md
from pytest_skilleval.reports.model import NOT_RUN, TIER_PURPOSE, RunReport, SkillReport
from pytest_skilleval.results import Finding
from pytest_skilleval.triggers import report as triggers_md

TOP_N = 5
ANSWERS = (
    "Is the skill well-formed, licensed and free of secrets, personal data and hidden text? (Tier 1)",
    "Are its scripts and instructions free of dangerous patterns? (Tier 1)",
    "Does it repeat itself, or duplicate another skill in the catalog? (Tier 2)",
    "Does an agent pick it when it should, and leave it alone when it should not? (Tier 3)",
    "Does an agent do measurably better with the skill than without it? (Tier 3)",
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _tiers_text(tiers: list[int]) -> str:
    return ", ".join(f"Tier {t}" for t in tiers)


def _callout(sk: SkillReport) -> list[str]:
    if sk.verdict == "INCOMPLETE":
        return ["> ⚠️ **Overall verdict: INCOMPLETE — Required evidence is missing**", ">",
                "> A required check could not produce evidence (a scanner is missing, crashed or timed out). "
                "Missing evidence is never a pass."]
    if sk.verdict == "FAIL":
        return ["> ❌ **Overall verdict: FAIL — Publication blocked**", ">",
                "> At least one blocking check failed; see Blocking Findings below."]
    if sk.recommended_for_publication:
        return ["> ✅ **Overall verdict: PASS — Recommended for publication**"]
    if not sk.tiers_not_run:  # every tier ran, but Tier 3 is not publication evidence: say what is missing
        gaps = sk.tier3.publication_gaps() if sk.tier3 is not None else ["Tier 3 trials"]
        return [f"> ☑️ **Overall verdict: PASS ({_tiers_text(sk.tiers_run)}) — Not yet recommended for publication**", ">",
                "> Publication needs a passing Tier 3 verdict from real models in a sandbox, with all five dimensions scored and "
                "every case × arm × attempt run. Missing here:", *[f"> - {_cell(g)}" for g in gaps]]
    return [f"> ☑️ **Overall verdict: PASS ({_tiers_text(sk.tiers_run)}) — Not yet recommended for publication**", ">",
            f"> The verdict covers {_tiers_text(sk.tiers_run)} only; {_tiers_text(sk.tiers_not_run)} "
            f"{'was' if len(sk.tiers_not_run) == 1 else 'were'} not run. Publication needs all three tiers."]


def _metadata(sk: SkillReport, run: RunReport) -> list[str]:
    settings = run.settings
    lines = ["## Evaluation Metadata", "",
             f"- Skill: `{sk.name}`",
             f"- Path: `{sk.key}`",
             f"- Evaluation date: {run.generated_at[:10]}",
             f"- Evaluator version: {run.tool['name']} {run.tool['version']} (commit `{run.tool.get('commit', 'unknown')}`; "
             f"Python {run.tool.get('python', '?')}, NumPy {run.tool.get('numpy', '?')})",
             f"- Skill content digest: `{sk.digest}`" if sk.digest else "- Skill content digest: not recorded (files check not run)",
             f"- Rule profile: {settings.get('profile')}; checks fail at {settings.get('fail_on')} and above",
             f"- Tiers run: {_tiers_text(sk.tiers_run) or 'none'}; not run: {_tiers_text(sk.tiers_not_run) or 'none'}"]
    if sk.tier3 is not None:
        lines += tier3_md.metadata_lines(sk.tier3)
    elif 3 in sk.tiers_not_run:
        lines.append("- Agents: none (Tier 3 not run)")
    if not run.complete and run.exit_status == 2:  # pytest.ExitCode.INTERRUPTED: Ctrl-C, SIGTERM
        lines.append("- **This run was interrupted: the card shows only the checks that finished.**")
    elif not run.complete:
        lines.append("- **This run is incomplete: a pytest worker crashed, and the item it was running has no result "
                     "(INCOMPLETE below).**")
    return lines


def _glance(sk: SkillReport) -> list[str]:
    lines = ["## Results at a Glance", "", "| Check | Tier | Status | Findings | Score |", "|---|---:|---|---:|---:|"]
    for rec in sk.checks:
        r = rec.result
        status = r.status.value + ("" if rec.blocking else " (advisory)")
        score = f"{r.score:g}/100" if r.score is not None else "—"
        lines.append(f"| {_cell(r.check)} | {r.tier} | {status} | {len(r.findings)} | {score} |")
    if 3 in sk.tiers_not_run:
        lines += ["", "Agent dimensions (Security, Correctness, Discoverability, Effectiveness, Efficiency) and Skill "
                      "Lift are reported once Tier 3 runs; no agent result is shown or implied here."]
    return lines


def _tier_status(sk: SkillReport) -> list[str]:
    lines = ["## Tier Status", "", "| Tier | Purpose | Status | Evidence |", "|---|---|---|---|"]
    for key, ts in sk.tiers.items():
        if ts.status == NOT_RUN:
            evidence = "—"
        elif key == "3" and sk.tier3 is not None:
            evidence = tier3_md.evidence(sk.tier3)
        else:
            evidence = f"{ts.checks} check(s); {ts.findings} finding(s)"
            if ts.failed_checks:
                evidence += f"; failed: {', '.join(ts.failed_checks)}"
            if ts.advisory_failures:
                evidence += f"; advisory: {', '.join(ts.advisory_failures)}"
        lines.append(f"| Tier {key} | {TIER_PURPOSE[int(key)]} | {ts.status} | {_cell(evidence)} |")
    return lines


def _finding_line(check: str, f: Finding) -> str:
    loc = f" (`{f.location()}`)" if f.file else ""
    return f"- **{f.severity.value}** {check}/{f.rule}: {_cell(f.message)}{loc}"


def _blocking(sk: SkillReport) -> list[str]:
    blocking = sk.blocking_findings()
    problems = [rec.result for rec in sk.checks if rec.result.status.value in ("INCOMPLETE", "ERROR")]
    if not blocking and not problems:
        return []
    lines = ["## Blocking Findings", ""]
    lines += [f"- **{r.status.value}** {r.check}: {_cell(r.reason or '')}" for r in problems]
    lines += [_finding_line(c, f) for c, f in blocking[:TOP_N]]
    if len(blocking) > TOP_N:
        lines.append(f"- … and {len(blocking) - TOP_N} more blocking finding(s) in results.json")
    return lines


def _observations(sk: SkillReport) -> list[str]:
    found = sk.all_findings()
    lines = ["## Findings and Observations", ""]
    if not found:
        return lines + ["No findings."]
    counts = ", ".join(f"{n} {sev}" for sev, n in sk.severity_counts.items() if n)
    lines += ["<details>", f"<summary>{len(found)} finding(s): {counts}</summary>", ""]
    lines += [_finding_line(c, f) for c, f in found[:TOP_N * 4]]
    if len(found) > TOP_N * 4:
        lines.append(f"- … and {len(found) - TOP_N * 4} additional finding(s) in results.json")
    quality = next((rec.result for rec in sk.checks if rec.result.check == "quality"), None)
    if quality is not None and quality.deductions:
        lines += ["", f"Quality score {quality.score:g}/100 (pass mark {quality.min_score:g}); deductions:", ""]
        lines += [f"- −{d.points} {d.dimension}: {_cell(d.reason)} (`{d.rule}`)" for d in quality.deductions]
    return lines + ["", "</details>"]


def _methodology() -> list[str]:
    return ["## Scoring Methodology", "", "<details>", "<summary>How this card is computed</summary>", "",
            "- Each Tier 1 check is one pytest item. A check fails when a finding is at or above the configured "
            "severity (default HIGH) or a score is under its pass mark; advisory checks report but never block.",
            "- INCOMPLETE means a required scanner was missing, crashed, timed out or returned unparseable output, "
            "or a file the check reads could not be read (over the size cap, hard-linked, not UTF-8). "
            "It fails the check: missing evidence is never a pass.",
            "- Quality is 0–100: 35% correctness, 25% discoverability, 25% reliability, 15% efficiency; pass mark 70.",
            "- Tier 2 blocks on EXACT_DUPLICATE (≥ 0.95) and HIGH_SIMILARITY (≥ 0.90) unless configured advisory.",
            "- Tier 3 dimensions pass at ≥ 50%, are neutral at 40–50%, fail below 40%; Skill Lift is with-skill minus "
            "without-skill over the cases scored in both arms; overall is each trial's mean over the dimensions both arms "
            "score (Discoverability is with-skill only and reported on its own), and overall lift is the mean of the paired cases' "
            "differences in it, so it equals the difference of the two arm means over those cases.",
            "- The lift's 95% interval is a Student t interval over paired case differences (t quantile at 96%, measured "
            "coverage ≥ 0.93 on bounded, tied and skewed scores from 3 cases up: benchmarks/interval_coverage.py); below 3 "
            "paired cases there is no interval, and a lift is a gain or a loss only when its interval excludes 0.",
            "", "</details>"]


def render(sk: SkillReport, run: RunReport) -> str:
    sections = [
        [f"# Skill Benchmark: {sk.name}"],
        _callout(sk) + (tier3_md.callout(sk.tier3) if sk.tier3 else []),
        _metadata(sk, run),
        ["## What This Report Answers", "", *[f"- {a}" for a in ANSWERS]],
        _glance(sk) + (tier3_md.glance(sk.tier3) if sk.tier3 else []),
        tier3_md.attempt_sections(sk.tier3) if sk.tier3 else [],
        triggers_md.markdown(sk.triggers) if sk.triggers else [],
        _tier_status(sk),
        _blocking(sk),
        _observations(sk),
        _methodology(),
        ["## Freshness", "",
         "This card describes the skill's content at the digest above. Re-run the evaluation whenever the skill, its "
         "evaluation cases or the target agents change."],
    ]
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"
