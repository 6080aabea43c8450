"""The trigger parts of a ``BENCHMARK.md`` card and of the terminal summary (data: :mod:`.metrics`)."""

from __future__ import annotations

from pytest_skilleval.triggers.metrics import AgentTriggers, Rate, SkillTriggers

LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "opencode": "OpenCode", "gemini": "Gemini CLI"}


def _rate(rate: Rate) -> str:
    if rate.value is None:
        return "—"
    return f"{rate.value * 100:.0f}% ({rate.successes}/{rate.n}; 95% CI {rate.low * 100:.0f}–{rate.high * 100:.0f}%)"  # type: ignore[operator]


def _label(a: AgentTriggers) -> str:
    return LABELS.get(a.agent, a.agent) + (f" {'/'.join(a.versions)}" if a.versions else "")


def kind(t: SkillTriggers) -> str:
    if t.probe:
        return "model-only probe (one chat call per query with each agent's listing) — a probe, not the agents"
    if t.harness_check:
        return "scripted — harness check, not a model measurement: the gateway played a keyword-routing model"
    return "real agents through the gateway"


def markdown(t: SkillTriggers) -> list[str]:
    lines = ["## Trigger Evaluation", "",
             f"Does the agent load **{t.skill_name}** when it should, and leave it alone when it should not? Mode: {kind(t)}. "
             f"{'Blocking' if t.blocking else 'Advisory'}"
             + (f" (recall ≥ {t.thresholds['recall']:.0%}, precision ≥ {t.thresholds['precision']:.0%})." if t.blocking else "."),
             "", f"Trigger set `{t.set_digest}`; rivals ({len(t.rivals)}): {', '.join(t.rivals) or 'none'} (`{t.rivals_digest}`).", "",
             "| Agent | Recall | Precision | F1 | Accuracy | TP / FN / FP / TN | Errors | Requests / query | ≈ Prompt tokens / query |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in t.agents:
        c = a.confusion
        req, tok = a.per_query("requests"), a.per_query("prompt_tokens") if a.prompt_chars else a.per_query("tokens")
        lines.append(f"| {_label(a)} | {_rate(a.recall)} | {_rate(a.precision)} | {'—' if a.f1 is None else f'{a.f1:.2f}'} | "
                     f"{_rate(a.accuracy)} | {c.tp} / {c.fn} / {c.fp} / {c.tn} | {a.errors} quer{'y' if a.errors == 1 else 'ies'} "
                     f"({a.error_runs} run(s), {a.retries} retried) | {'—' if req is None else f'{req:.1f}'} | "
                     f"{'—' if tok is None else f'{tok:.0f}'} |")
    for a in t.agents:
        notes = []
        if a.stealing_rivals:
            notes.append("rivals that took positives: " + ", ".join(f"{k} ({v})" for k, v in a.stealing_rivals.items()))
        if a.missed_queries:
            notes.append("missed: " + ", ".join(f"`{q}`" for q in a.missed_queries))
        if a.acceptable_queries:
            handed = {o.query_id: o.rivals for o in a.outcomes if o.acceptable}
            notes.append("taken by an acceptable skill: " + ", ".join(f"`{q}` ({', '.join(handed[q])})" for q in a.acceptable_queries)
                         + " — left out of recall")
        if a.false_trigger_queries:
            notes.append("false triggers: " + ", ".join(f"`{q}`" for q in a.false_trigger_queries))
        if a.flipped_queries:
            notes.append("flipped between runs: " + ", ".join(f"`{q}`" for q in a.flipped_queries))
        if notes:
            lines += ["", f"- **{_label(a)}**: " + "; ".join(notes)]
    lines += ["", "<details><summary>Every query</summary>", "",
              "| Query | Should | " + " | ".join(LABELS.get(a.agent, a.agent) for a in t.agents) + " |",
              "|---|---|" + "---|" * len(t.agents)]
    ids = sorted({o.query_id for a in t.agents for o in a.outcomes})
    for qid in ids:
        cells = []
        for a in t.agents:
            o = next((x for x in a.outcomes if x.query_id == qid), None)
            if o is None:
                cells.append("")
                continue
            runs = "".join({True: "T", False: "·", None: "E"}[r] for r in o.runs)
            mark = "" if o.triggered is None or o.triggered == o.should_trigger else " ~" if o.acceptable else " ✗"
            cells.append(f"{runs}{mark}" + (f" ({', '.join(o.rivals)})" if o.rivals else ""))
        should = next(o.should_trigger for a in t.agents for o in a.outcomes if o.query_id == qid)
        lines.append(f"| `{qid}` | {'yes' if should else 'no'} | " + " | ".join(cells) + " |")
    lines += ["", "T = this skill loaded, · = not loaded, E = error (no decision; never counted as a miss), ✗ = the majority "
              "decision is wrong, ~ = an acceptable skill took it (left out of recall); a rival loaded instead is named.", "", "</details>"]
    return lines


def terminal_lines(t: SkillTriggers) -> list[str]:
    out = []
    for a in t.agents:
        c = a.confusion
        r, p = a.recall.value, a.precision.value
        out.append(f"triggers {t.skill} [{a.agent}{' probe' if t.probe else ''}]: recall {'—' if r is None else f'{r:.0%}'} "
                   f"precision {'—' if p is None else f'{p:.0%}'} (TP {c.tp} FN {c.fn} FP {c.fp} TN {c.tn}, {a.errors} error(s))"
                   + (" — harness check" if t.harness_check and not t.probe else "")
                   + (" BELOW THRESHOLD" if a.agent in t.failing_agents else ""))
    return out
