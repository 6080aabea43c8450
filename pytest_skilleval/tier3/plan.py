"""The Tier 3 plan, printed before any trial starts: how many trials per agent × arm × attempt, and
an **estimate** of the tokens and dollars they will cost (``--skilleval-dry-run`` stops after it).

Per trial the estimate is the last metered usage of the same case, agent, arm and gateway mode
(:class:`pytest_skilleval.tier3.store.TrialStore`), else the per-agent default below; dollars come
from the gateway's price table for the agent's model. Scripted and replayed runs spend nothing, so
their dollar estimate is "none". Reused baselines (``--skilleval-reuse-baseline``) are not counted
as trials to run: the plan cannot know which are stored, so it says how many *may* be reused.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_skilleval.gateway.metering import PriceTable
from pytest_skilleval.gateway.protocols.base import Usage
from pytest_skilleval.tier3.options import AA_ARM, ARMS, staged_arm
from pytest_skilleval.tier3.store import TrialStore

#: Tokens (input, output) one trial of one case typically takes with a real model, per agent: the
#: system prompt and tool schemas of each CLI dominate. Used only when nothing was recorded yet.
DEFAULT_TOKENS: Mapping[str, tuple[int, int]] = {
    "claude-code": (45_000, 1_500), "codex": (25_000, 1_500), "opencode": (30_000, 1_500), "gemini": (30_000, 1_500),
}
FALLBACK_TOKENS = (40_000, 2_000)  # an agent from a plugin
SCRIPTED_TOKENS = (3 * 1234, 3 * 56)  # scripted steps meter a fixed 1234/56 per request; ~3 requests a trial
UNBILLED_MODES = frozenset({"scripted", "replay"})


#: Every arm an item can have, the A/A repeat included: a trial the plan cannot parse is neither counted nor priced.
TRIAL_ID = re.compile(r"^(?P<skill>.+)::tier3::(?P<case>.+)\[(?P<agent>.+)-(?P<arm>" + "|".join(sorted((*ARMS, AA_ARM), key=len, reverse=True))
                      + r")-a(?P<attempt>\d+)\]$")


@dataclass(frozen=True)
class PlannedTrial:
    skill: str  # the skill folder's name
    case_id: str
    agent: str
    arm: str
    attempt: int

    @classmethod
    def from_nodeid(cls, nodeid: str) -> PlannedTrial | None:
        """``<skill path>::tier3::<case>[<agent>-<arm>-a<n>]`` (tier3/items.py), as the xdist controller sees items."""
        m = TRIAL_ID.match(nodeid)
        if m is None:
            return None
        return cls(m["skill"].rstrip("/").rsplit("/", 1)[-1], m["case"], m["agent"], m["arm"], int(m["attempt"]))


@dataclass(frozen=True)
class Estimate:
    tokens: int
    usd: float | None  # None: nothing will be spent (scripted, replay)
    recorded: int  # trials estimated from the last recorded run of the same case, agent, arm and mode
    defaulted: int  # … and from the default table


def estimate(trials: Iterable[PlannedTrial], *, mode: str, models: Mapping[str, str], store: TrialStore | None,
             prices: PriceTable | None = None) -> Estimate:
    prices = prices or PriceTable.load()
    tokens, usd, recorded, defaulted = 0, 0.0, 0, 0
    for t in trials:
        last = _last_usage(store, t, mode)
        if last is not None:
            t_in, t_out, cost = int(last.get("tokens_in") or 0), int(last.get("tokens_out") or 0), last.get("cost_usd")
            recorded += 1
        else:
            t_in, t_out = SCRIPTED_TOKENS if mode == "scripted" else DEFAULT_TOKENS.get(t.agent, FALLBACK_TOKENS)
            cost = None
            defaulted += 1
        tokens += t_in + t_out
        if mode not in UNBILLED_MODES:
            usd += float(cost) if cost is not None else prices.cost(models.get(t.agent, "default"), Usage(t_in, t_out))[0]
    return Estimate(tokens=tokens, usd=None if mode in UNBILLED_MODES else round(usd, 4), recorded=recorded, defaulted=defaulted)


def _last_usage(store: TrialStore | None, t: PlannedTrial, mode: str) -> dict[str, Any] | None:
    """The last metered usage of this trial; an A/A trial is a without_skill trial in every respect, so
    without its own record it costs what the baseline last cost."""
    if store is None:
        return None
    last = store.usage(t.skill, t.case_id, t.agent, t.arm, mode)
    if last is None and staged_arm(t.arm) != t.arm:
        last = store.usage(t.skill, t.case_id, t.agent, staged_arm(t.arm), mode)
    return last


def plan_lines(trials: list[PlannedTrial], *, mode: str, models: Mapping[str, str], store: TrialStore | None,
               reuse_baseline: bool = False, dry_run: bool = False) -> list[str]:
    """The lines printed before the first trial (and all a dry run prints)."""
    if not trials:
        return ["skilleval tier3 plan: no trials to run"]
    counts = Counter((t.agent, t.arm, t.attempt) for t in trials)
    agents = sorted({t.agent for t in trials})
    lines = [f"skilleval tier3 plan: {len(trials)} trial(s) over {len({(t.skill, t.case_id) for t in trials})} case(s)"
             + (" — dry run (--skilleval-dry-run): nothing will be started" if dry_run else "")]
    for agent in agents:
        cells = ", ".join(f"{arm} a{attempt}: {n}" for (a, arm, attempt), n in sorted(counts.items()) if a == agent)
        lines.append(f"  {agent}: {cells}")
    if reuse_baseline:
        baseline = sum(1 for t in trials if t.arm == "without_skill")
        lines.append(f"  --skilleval-reuse-baseline: up to {baseline} without_skill trial(s) may be reused from the trial store, "
                     "not run")
    est = estimate(trials, mode=mode, models=models, store=store)
    source = ", ".join(part for part in (f"{est.recorded} trial(s) from the last recorded run of the same case and arm" if est.recorded else "",
                                         f"{est.defaulted} from the per-agent default table" if est.defaulted else "")
                       if part)
    dollars = "no dollars (the gateway plays the model: nothing is spent)" if est.usd is None else f"~${est.usd:,.2f}"
    lines.append(f"  estimate (an estimate, not a quote): ~{est.tokens:,} tokens, {dollars}; {source}")
    return lines
