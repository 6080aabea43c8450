"""The Tier 3 parts of a ``BENCHMARK.md`` card and of the terminal summary.

Results at a glance: ``baseline → skill (lift ± CI)`` per measure and agent; then pass@k and every
attempt; then the metadata to reproduce the run. A scripted run is labelled a harness check on
every one of these, and never recommends publication.
"""

from __future__ import annotations

from pytest_skilleval.tier3.report import MEASURES, AgentTier3, ArmStats, LiftRow, Tier3Report

HARNESS_CHECK = "harness check — not a model measurement"
LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "opencode": "OpenCode", "gemini": "Gemini CLI"}
MAX_ATTEMPT_ROWS = 200


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _points(value: float | None) -> str:
    if value is None:
        return "—"
    points = value * 100
    return "±0" if abs(points) < 0.05 else f"{points:+.0f}"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _label(agent: AgentTier3) -> str:
    return LABELS.get(agent.agent, agent.agent)


def lift_cell(row: LiftRow | None, arm_with: float | None, arm_without: float | None) -> str:
    """``47% → 92% (+45 points, 95% CI +20 to +70)``; one arm only: just its value."""
    if row is None or row.delta is None:
        if arm_with is None and arm_without is None:
            return "not scored"
        return f"{_pct(arm_without)} → {_pct(arm_with)} (not paired)"
    ci = f", 95% CI {_points(row.ci_low)} to {_points(row.ci_high)}" if row.ci_low is not None and row.n > 1 else ""
    return f"{_pct(row.without_skill)} → {_pct(row.with_skill)} ({_points(row.delta)} points{ci}; n={row.n})"


def callout(t3: Tier3Report) -> list[str]:
    if t3.scripted:
        return [">", f"> Tier 3 ran in scripted mode: a **{HARNESS_CHECK}**. The gateway played the model from each case's "
                     "script, so these numbers test the harness (discovery, listing, tools, parsing), not the skill's value; "
                     "they are never publication evidence."]
    if not t3.isolated and t3.trials:
        return [">", "> Tier 3 trials ran **unsandboxed** (--skilleval-allow-unsandboxed): not publication evidence."]
    return []


def metadata_lines(t3: Tier3Report) -> list[str]:
    agents = ", ".join(f"{_label(a)} {'/'.join(a.versions) or '(version unknown)'} (`{', '.join(a.models) or 'no model'}`)"
                       for a in t3.agents)
    labels = ", ".join(f"{n} {label}" for label, n in sorted(t3.labels.items()))
    mode = ", ".join(t3.modes) + (f" — **{HARNESS_CHECK}**" if t3.scripted else " (real models through the gateway)")
    attempts = f"{t3.attempts}" + (f", plus up to {t3.reruns} rerun(s) of a failed attempt (--reruns)" if t3.reruns else "")
    lines = [f"- Agents: {agents or 'none'}",
             f"- Tier 3 gateway mode: {mode}",
             f"- Tasks: {t3.cases} evaluation case(s) ({labels})",
             f"- Dataset digest: `{t3.dataset_digest}` (pytest-skilleval-cases/1)" if t3.dataset_digest else "- Dataset digest: not recorded",
             f"- Attempts per case and arm: {attempts}",
             f"- Sandbox: {'; '.join(t3.sandboxes) or 'none ran'}",
             f"- Tier 3 trials: {t3.trials} run, {t3.errors} errored, {t3.skipped} skipped; "
             f"Tier 3 is {'blocking (--block-on-agent-eval)' if t3.blocking else 'advisory'}"]
    lines += [f"- Skipped because: {_cell(reason)}" for reason in t3.skip_reasons[:3]]
    return lines


def glance(t3: Tier3Report) -> list[str]:
    if not t3.agents:
        return []
    agents = [a for a in t3.agents if a.arms]
    title = "### Tier 3: baseline → with skill" + (f" ({HARNESS_CHECK})" if t3.scripted else "")
    lines = ["", title, "", "| Measure | " + " | ".join(f"{_label(a)} (Baseline → Skill)" for a in agents) + " |",
             "|---|" + "---|" * len(agents)]
    for measure in MEASURES:
        cells = []
        for a in agents:
            row = next((r for r in a.lift if r.measure == measure), None)
            w, wo = a.arms.get("with_skill"), a.arms.get("without_skill")
            cells.append(lift_cell(row, w.measures.get(measure) if w else None, wo.measures.get(measure) if wo else None))
        lines.append(f"| {measure.capitalize()} | " + " | ".join(cells) + " |")
    lines.append("| Pass rate | " + " | ".join(f"{_pct(_rate(a, 'without_skill'))} → {_pct(_rate(a, 'with_skill'))}" for a in agents) + " |")
    lines.append("| Verdict | " + " | ".join(a.verdict or "NOT SCORED" for a in agents) + " |")
    lines += ["", "Cells read `baseline → with skill (lift in points, paired bootstrap 95% CI over cases; n = paired cases)`. "
                  "Dimensions pass at ≥ 50%, are neutral at 40–50% and fail below 40%; a lift of ≥ +5 points is a gain, ≤ −10 a loss."]
    return lines


def _rate(agent: AgentTier3, arm: str) -> float | None:
    stats = agent.arms.get(arm)
    return stats.pass_rate if stats else None


def _pass_cells(arm: ArmStats) -> str:
    parts = [f"pass@{p.k} {_pct(p.pass_at_k)}, pass^{p.k} {_pct(p.pass_hat_k)}" for p in arm.pass_at_k]
    if arm.reruns is not None:
        r = arm.reruns
        parts.append(f"pass@{r.k} (reruns) {_pct(r.rate)} ({r.passed_cases}/{r.passed_cases + r.failed_cases} cases)")
    return "; ".join(parts) or "—"


def attempt_sections(t3: Tier3Report) -> list[str]:
    if not t3.agents:
        return []
    lines = ["## Tier 3 pass@k and Attempts", ""]
    if t3.scripted:
        lines += [f"_Scripted mode: {HARNESS_CHECK}._", ""]
    lines += ["| Agent | Arm | Trials | Passed | Failed | Errors | pass@k | Tokens/trial | Cost/trial | Agent s/trial | Plugin s/trial |",
              "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for a in t3.agents:
        for arm in a.arms.values():
            per = max(arm.trials, 1)
            lines.append(f"| {_label(a)} | {arm.arm} | {arm.trials} | {arm.passed} | {arm.failed} | {arm.errors} | {_pass_cells(arm)} | "
                         f"{(arm.tokens_in + arm.tokens_out) / per:.0f} | {_dollars(arm.cost_usd, per)} | {_secs(arm.cli_seconds)} | "
                         f"{_secs(arm.plugin_seconds)} |")
    for a in t3.agents:
        rows = a.attempts[:MAX_ATTEMPT_ROWS]
        lines += ["", "<details>", f"<summary>{_label(a)}: {len(a.attempts)} attempt(s)</summary>", "",
                  "| Case | Arm | Attempt | Run | Status | Score | Tokens | Agent s | Skill listed | Invoked | Reason |",
                  "|---|---|---:|---:|---|---:|---:|---:|---|---|---|"]
        for r in rows:
            listed = {True: "yes", False: "no", None: "—"}[r.skill_listed]
            score = "—" if r.score is None else f"{r.score:.2f}"
            lines.append(f"| {_cell(r.case)} | {r.arm} | a{r.attempt} | {r.execution} | {r.status} | {score} | {r.tokens} | "
                         f"{_secs(r.cli_seconds)} | {listed} | {_cell(', '.join(r.invoked) or '—')} | {_cell((r.reason or '')[:160])} |")
        if len(a.attempts) > MAX_ATTEMPT_ROWS:
            lines.append(f"| … {len(a.attempts) - MAX_ATTEMPT_ROWS} more in results.json |||||||||||")
        lines += ["", "</details>"]
    return lines


def _dollars(total: float | None, per: int) -> str:
    """Cost per trial; "—" when nothing was spent (scripted or replayed trials): no invented dollars."""
    return "—" if total is None else f"${total / per:.4f}"


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def evidence(t3: Tier3Report) -> str:
    return f"{len(t3.agents)} agent(s); {t3.cases} case(s); {t3.trials} trial(s)" + (f"; {t3.errors} errored" if t3.errors else "")


def terminal_lines(key: str, t3: Tier3Report) -> list[str]:
    """One line per agent: the overall lift, pass rates and pass@k."""
    out = []
    for a in t3.agents:
        overall = next((r for r in a.lift if r.measure == "overall"), None)
        w = a.arms.get("with_skill")
        lift = lift_cell(overall, w.measures.get("overall") if w else None, None) if overall else "no baseline"
        out.append(f"tier3 {key} · {a.agent}: overall {lift}; verdict {a.verdict or 'NOT SCORED'}"
                   + (f"; {_pass_cells(w)}" if w else "") + (f" [{HARNESS_CHECK}]" if t3.scripted else ""))
    if not t3.blocking and any(arm.failed for a in t3.agents for arm in a.arms.values()):
        out.append(f"tier3 {key}: failed trials are advisory and do not fail the run (--block-on-agent-eval: a FAIL verdict does)")
    return out
