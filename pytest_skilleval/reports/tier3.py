"""The Tier 3 parts of a ``BENCHMARK.md`` card and of the terminal summary.

Results at a glance: ``baseline → skill (lift, interval)`` per measure and agent, where the two arm
values are the very means the verdict reads; the trial counts behind them (paired, unpaired, not
scored, errored, skipped); the power of the run and, with ``--skilleval-aa``, the A/A noise floor;
then pass@k and every attempt; then the metadata to reproduce the run. A scripted run is labelled
a harness check on every one of these, and never recommends publication.
"""

from __future__ import annotations

from pytest_skilleval.tier3 import stats
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


def _interval(row: LiftRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return f"too few cases for an interval, n={row.n}"
    word = {"PASS": "gain", "FAIL": "loss"}.get(row.band or "", "no clear change")
    return f"95% CI {_points(row.ci_low)} to {_points(row.ci_high)}, {word}; n={row.n}"


def lift_cell(row: LiftRow | None, arm_with: float | None, arm_without: float | None) -> str:
    """``47% → 92% (+45 points, 95% CI +20 to +70, gain; n=12)``: the arm means over all their scored
    cases (what the verdict reads), then the lift over the paired cases; one arm only: its value."""
    if row is None or row.delta is None:
        if arm_with is None and arm_without is None:
            return "not scored"
        return f"{_pct(arm_without)} → {_pct(arm_with)} (not paired)"
    unpaired = f"; {row.unpaired} unpaired" if row.unpaired else ""
    return f"{_pct(arm_without)} → {_pct(arm_with)} ({_points(row.delta)} points, {_interval(row)}{unpaired})"


def callout(t3: Tier3Report) -> list[str]:
    if t3.scripted:
        return [">", f"> Tier 3 ran in scripted mode: a **{HARNESS_CHECK}**. The gateway played the model from each case's "
                     "script, so these numbers test the harness (discovery, listing, tools, parsing), not the skill's value; "
                     "they are never publication evidence."]
    if not t3.isolated and t3.trials:
        return [">", "> Tier 3 trials ran **unsandboxed** (--skilleval-allow-unsandboxed): not publication evidence."]
    return []


def metadata_lines(t3: Tier3Report) -> list[str]:
    # here, not at the top: the case loader and every eval-file format come with it, and a Tier 1 run's
    # report imports this module
    from pytest_skilleval.tier3.cases import DIGEST_ALGORITHM

    agents = ", ".join(f"{_label(a)} {'/'.join(a.versions) or '(version unknown)'} (`{', '.join(a.models) or 'no model'}`)"
                       for a in t3.agents)
    labels = ", ".join(f"{n} {label}" for label, n in sorted(t3.labels.items()))
    mode = ", ".join(t3.modes) + (f" — **{HARNESS_CHECK}**" if t3.scripted else " (real models through the gateway)")
    attempts = f"{t3.attempts}" + (f", plus up to {t3.reruns} rerun(s) of a failed attempt (--reruns)" if t3.reruns else "")
    lines = [f"- Agents: {agents or 'none'}",
             f"- Tier 3 gateway mode: {mode}",
             f"- Tasks: {t3.cases} evaluation case(s) ({labels})",
             f"- Dataset digest: `{t3.dataset_digest}` ({DIGEST_ALGORITHM}: the cases and their input files)" if t3.dataset_digest
             else "- Dataset digest: not recorded",
             f"- Attempts per case and arm: {attempts}",
             f"- Sandbox: {'; '.join(t3.sandboxes) or 'none ran'}",
             f"- Tier 3 trials: {t3.trials} run, {t3.errors} errored, {t3.skipped} skipped; "
             f"Tier 3 is {'blocking (--block-on-agent-eval)' if t3.blocking else 'advisory'}"]
    lines += [f"- Skipped because: {_cell(reason)}" for reason in t3.skip_reasons[:3]]
    if t3.breaker_refused:
        lines.append(f"- Not started by the circuit breaker (ERROR): {t3.breaker_refused} trial(s); {_cell(t3.breaker_reason or '')}")
    if t3.infra_retries:
        lines.append(f"- Infrastructure retries: {t3.infra_retries} trial run(s) ERRORed for an infrastructure cause and were run again "
                     "(--skilleval-infra-retries; not attempts, not reruns)")
    if t3.reused_baselines:
        lines.append(f"- Reused baseline records (--skilleval-reuse-baseline): {len(t3.reused_baselines)} without_skill trial(s) "
                     "not run but taken from an earlier run, stored at:")
        lines += [f"  - {_cell(line)}" for line in t3.reused_baselines[:MAX_ATTEMPT_ROWS]]
    lines += [f"- Judge: {_judge_text(t3)}",
              f"- Lift interval: {t3.interval.method}; {t3.interval.confidence:.0%} (t quantile at {t3.interval.t_level:.0%}), none below "
              f"{t3.interval.min_cases} paired cases; no resampling, so no seed",
              f"- Trial limits: timeout {_num(t3.trial_timeout_s, ' s')}, max turns {_num(t3.max_turns, '')}"
              + ("; A/A: the without_skill arm ran twice (--skilleval-aa)" if t3.aa else "")]
    return lines


def _num(value: float | None, unit: str) -> str:
    return "not recorded" if value is None else f"{value:g}{unit}"


def _judge_text(t3: Tier3Report) -> str:
    j = t3.judge
    if j is None:
        return "none graded a trial (no judge configured, or scripted mode): Correctness and Effectiveness come from typed assertions only"
    votes = f"{j.votes} vote(s) per trial" + (f", which agreed on {j.agreement:.0%} of items" if j.agreement is not None else "")
    return (f"`{', '.join(j.models) or 'unknown model'}`, prompt {', '.join(j.prompt_versions) or 'unknown'}; {votes}; "
            f"{j.judged_trials} trial(s) judged")


def glance(t3: Tier3Report) -> list[str]:
    if not t3.agents:
        return []
    if t3.trials == 0:
        return ["", "### Tier 3: not run", "", f"No trial ran ({t3.skipped} skipped), so there is no Tier 3 result and no verdict."
                + (f" Skipped because: {_cell(t3.skip_reasons[0])}" if t3.skip_reasons else "")]
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
        name = "Discoverability (with skill only)" if measure == "discoverability" else measure.capitalize()
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| Pass rate | " + " | ".join(f"{_pct(_rate(a, 'without_skill'))} → {_pct(_rate(a, 'with_skill'))}" for a in agents) + " |")
    lines.append("| Trials | " + " | ".join(_counts(a) for a in agents) + " |")
    lines.append("| Verdict | " + " | ".join(a.verdict or "NOT SCORED" for a in agents) + " |")
    overall_dims = {", ".join(d.capitalize() for d in a.overall_dimensions) for a in agents}
    lines += ["", "Cells read `baseline → with skill`: each arm's mean over all its scored cases (the numbers the verdict reads), "
                  "then the lift over the cases scored in both arms with its 95% interval (Student t over paired case differences; "
                  f"none below {stats.MIN_CASES_FOR_INTERVAL} paired cases). Overall is each trial's mean over the dimensions "
                  f"both arms score ({' / '.join(sorted(overall_dims)) or 'none'}), then per case and per arm; its lift is the mean of the "
                  "paired cases' differences, the interval is over those same differences; Discoverability exists only with the skill "
                  "and is shown on its own. "
                  "Dimensions pass at ≥ 50%, are neutral at 40–50% and fail below 40%; a lift is a gain at ≥ +5 points and a loss at ≤ −10 "
                  "only when its interval excludes 0."]
    for a in agents:
        lines += [f"- {line}" for line in _power_lines(a)]
    if t3.judge is not None and t3.judge.flagged and t3.judge.agreement is not None:
        lines += [f"- ⚠️ **The judge disagrees with itself**: its {t3.judge.votes} votes per trial agreed on only {t3.judge.agreement:.0%} "
                  "of items (dimension scores within 0.2, assertion verdicts unanimous); its scores are noisy — use more votes or "
                  "another judge model."]
    return lines


def _counts(agent: AgentTier3) -> str:
    """One set of counts: what ran, what was scored, and what the lift could pair."""
    parts = []
    for arm in agent.arms.values():
        extra = [f"{n} {word}" for n, word in ((arm.errors, "errored"), (arm.not_scored, "not scored"), (arm.skipped, "skipped")) if n]
        parts.append(f"{arm.arm}: {arm.passed} passed, {arm.failed} failed" + (", " + ", ".join(extra) if extra else ""))
    overall = next((r for r in agent.lift if r.measure == "overall"), None)
    if overall is not None:
        parts.append(f"{overall.n} paired case(s), {overall.unpaired} unpaired")
    return "; ".join(parts) or "—"


def _power_lines(agent: AgentTier3) -> list[str]:
    out = []
    p = agent.power
    if p is not None:
        attempts = f"{p.attempts} attempt{'s' if p.attempts != 1 else ''}"
        if p.detectable is None:
            now = f"too few cases for an interval (n={p.n} paired; an interval needs {stats.MIN_CASES_FOR_INTERVAL}), so no lift can be called"
        else:
            spread = f"spread {p.spread * 100:.0f} points" if p.spread is not None else "no spread"
            now = f"the smallest lift this run could call at n={p.n} paired cases and {spread} is {p.detectable * 100:.0f} points (80% power)"
        need = (f"a {p.target * 100:.0f}-point lift needs ≈ {p.cases_for_target} cases × {attempts} at this spread"
                if p.cases_for_target is not None else f"a {p.target * 100:.0f}-point lift needs a spread estimate: run ≥ "
                f"{stats.MIN_CASES_FOR_INTERVAL} cases")
        out.append(f"Power ({_label(agent)}): {now}; {need}.")
    floor = agent.noise_floor
    if floor is not None:
        value = "not scored" if floor.delta is None else f"{_points(floor.delta)} points ({_interval(floor)})"
        real = next((r for r in agent.lift if r.measure == "overall"), None)
        beside = f"; the real overall lift: {_points(real.delta)} points" if real is not None and real.delta is not None else ""
        out.append(f"A/A noise floor ({_label(agent)}): the without_skill arm run twice differs by {value}{beside}. "
                   "A lift inside this noise says nothing about the skill.")
    return out


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
                  "| Case | Arm | Attempt | Run | Status | Score | Sec/Cor/Dis/Eff/Efc | Tokens | Agent s | Skill listed | Invoked | Reason |",
                  "|---|---|---:|---:|---|---:|---|---:|---:|---|---|---|"]
        for r in rows:
            listed = {True: "yes", False: "no", None: "—"}[r.skill_listed]
            score = "—" if r.score is None else f"{r.score:.2f}"
            lines.append(f"| {_cell(r.case)} | {r.arm} | a{r.attempt} | {r.execution} | {r.status} | {score} | {_dims(r.dimensions)} | {r.tokens} | "
                         f"{_secs(r.cli_seconds)} | {listed} | {_cell(', '.join(r.invoked) or '—')} | {_cell((r.reason or '')[:160])} |")
        if len(a.attempts) > MAX_ATTEMPT_ROWS:
            lines.append(f"| … {len(a.attempts) - MAX_ATTEMPT_ROWS} more in results.json ||||||||||||")
        lines += ["", "</details>"]
    return lines


def _dollars(total: float | None, per: int) -> str:
    """Cost per trial; "—" when nothing was spent (scripted or replayed trials): no invented dollars."""
    return "—" if total is None else f"${total / per:.4f}"


def _dims(dimensions: dict[str, float | None]) -> str:
    if not dimensions:
        return "—"
    return "/".join("—" if dimensions.get(d) is None else f"{dimensions[d]:.2f}"
                    for d in ("security", "correctness", "discoverability", "effectiveness", "efficiency"))


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def evidence(t3: Tier3Report) -> str:
    return f"{len(t3.agents)} agent(s); {t3.cases} case(s); {t3.trials} trial(s)" + (f"; {t3.errors} errored" if t3.errors else "")


def terminal_lines(key: str, t3: Tier3Report) -> list[str]:
    """One line per agent: the overall lift, pass rates and pass@k; one line when no trial ran."""
    out = []
    if t3.trials == 0:
        reason = f": {t3.skip_reasons[0]}" if t3.skip_reasons else ""
        return [f"tier3 {key}: NOT RUN — no trial ran ({t3.skipped} skipped{reason}); no verdict"]
    for a in t3.agents:
        overall = next((r for r in a.lift if r.measure == "overall"), None)
        w, wo = a.arms.get("with_skill"), a.arms.get("without_skill")
        lift = lift_cell(overall, w.measures.get("overall") if w else None, wo.measures.get("overall") if wo else None) if overall else "no baseline"
        out.append(f"tier3 {key} · {a.agent}: overall {lift}; verdict {a.verdict or 'NOT SCORED'}"
                   + (f"; {_pass_cells(w)}" if w else "") + (f" [{HARNESS_CHECK}]" if t3.scripted else ""))
    if t3.breaker_refused:
        out.append(f"tier3 {key}: {t3.breaker_refused} trial(s) not started, ERROR: {t3.breaker_reason}")
    if t3.infra_retries:
        out.append(f"tier3 {key}: {t3.infra_retries} trial run(s) ERRORed for an infrastructure cause and were run again")
    if not t3.blocking and any(arm.failed for a in t3.agents for arm in a.arms.values()):
        out.append(f"tier3 {key}: failed trials are advisory and do not fail the run (--block-on-agent-eval: a FAIL verdict does)")
    return out
