"""The Tier 3 plan and estimate (tier3/plan.py) and the trial store behind it and baseline reuse (tier3/store.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.tier3.plan import PlannedTrial, estimate, plan_lines
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.store import BaselineKey, TrialStore

MODELS = {"claude-code": "claude-sonnet-4-5", "codex": "gpt-5.5"}


def trials(*agents: str, cases: int = 2, attempts: int = 1) -> list[PlannedTrial]:
    return [PlannedTrial("demo", f"c{c}", agent, arm, a) for agent in agents for c in range(cases)
            for arm in ("with_skill", "without_skill") for a in range(1, attempts + 1)]


def record(**kw: object) -> TrialRecord:
    values: dict[str, object] = {"skill": "skills/demo", "skill_name": "demo", "skill_path": "/x/skills/demo", "case_id": "c0",
                                 "agent": "claude-code", "arm": "without_skill", "status": "FAILED", "mode": "proxy", "requests": 3,
                                 "tokens_in": 30_000, "tokens_out": 900, "cost_usd": 0.1}
    return TrialRecord.model_validate(values | kw)


def test_node_ids_parse_back_to_planned_trials() -> None:
    t = PlannedTrial.from_nodeid("skills/csv-summary::tier3::csv-summary-001[claude-code-without_skill-a2]")
    assert t == PlannedTrial("csv-summary", "csv-summary-001", "claude-code", "without_skill", 2)
    assert PlannedTrial.from_nodeid("skills/csv-summary::tier1::schema") is None
    # Regression: --skilleval-aa's arm did not parse, so the plan and its estimate left it out
    aa = PlannedTrial.from_nodeid("skills/csv-summary::tier3::csv-summary-001[claude-code-without_skill_aa-a1]")
    assert aa == PlannedTrial("csv-summary", "csv-summary-001", "claude-code", "without_skill_aa", 1)


def test_an_aa_trial_is_estimated_from_the_last_recorded_baseline(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    store.keep_usage(record())  # c0, without_skill: 30,900 tokens, $0.10
    aa = estimate([PlannedTrial("demo", "c0", "claude-code", "without_skill_aa", 1)], mode="proxy", models=MODELS, store=store)
    assert (aa.recorded, aa.tokens, aa.usd) == (1, 30_900, pytest.approx(0.1))


def test_the_estimate_uses_the_last_recorded_run_else_the_default_table(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    planned = trials("claude-code")
    default = estimate(planned, mode="proxy", models=MODELS, store=store)
    assert (default.recorded, default.defaulted) == (0, 4) and default.tokens == 4 * 46_500
    assert default.usd == pytest.approx(4 * (45_000 * 3 + 1_500 * 15) / 1e6)  # sonnet prices, from the gateway's table
    store.keep_usage(record())
    known = estimate(planned, mode="proxy", models=MODELS, store=store)
    assert (known.recorded, known.defaulted) == (1, 3)  # case c0, without_skill: the recorded one
    assert known.usd == pytest.approx(0.1 + 3 * (45_000 * 3 + 1_500 * 15) / 1e6)
    assert estimate(planned, mode="scripted", models=MODELS, store=store).usd is None  # nothing is spent: no dollars



def test_the_usage_of_a_folder_named_like_an_escape_is_not_the_undecodable_folders(tmp_path: Path) -> None:
    """The folder literally named ``\udcff`` and the one named by the byte 0xff: both records' paths read
    ``.../\udcff`` once escaped for JSON, and usage was kept by that name (one overwrote the other), while the
    plan looks it up by the folder's part of the node id, escaped as the skill key is (``\\udcff`` and ``\udcff``)."""
    store = TrialStore(tmp_path)
    for key, cost in (("skills/\\\\udcff", 0.1), ("skills/\\udcff", 0.2)):  # the literal folder's key, the byte's
        store.keep_usage(record(skill=key, skill_path="/x/skills/\\udcff", cost_usd=cost))
    for key, cost in (("skills/\\\\udcff", 0.1), ("skills/\\udcff", 0.2)):
        planned = PlannedTrial.from_nodeid(f"{key}::tier3::c0[claude-code-without_skill-a1]")
        assert planned is not None
        found = estimate([planned], mode="proxy", models=MODELS, store=store)
        assert (found.recorded, found.usd) == (1, pytest.approx(cost)), key

def test_plan_lines_count_trials_per_agent_arm_and_attempt(tmp_path: Path) -> None:
    lines = plan_lines(trials("claude-code", "codex", attempts=2), mode="proxy", models=MODELS, store=TrialStore(tmp_path),
                       reuse_baseline=True, dry_run=True)
    assert lines[0] == "skilleval tier3 plan: 16 trial(s) over 2 case(s) — dry run (--skilleval-dry-run): nothing will be started"
    assert lines[1] == "  claude-code: with_skill a1: 2, with_skill a2: 2, without_skill a1: 2, without_skill a2: 2"
    assert "up to 8 without_skill trial(s) may be reused" in lines[3]
    assert lines[4].startswith("  estimate (an estimate, not a quote): ~") and "from the per-agent default table" in lines[4]


def test_only_counted_baselines_are_stored_and_reused_records_are_never_stored_again(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    key = BaselineKey(case_digest="sha256:abc", agent="claude-code", agent_version="2.1.197", model="m", mode="proxy", sandbox="local",
                      attempt=1)
    store.keep_baseline(key, record(status="ERROR"))
    assert store.baseline(key) is None
    store.keep_baseline(key, record(arm="with_skill"))
    assert store.baseline(key) is None
    store.keep_baseline(key, record())
    found = store.baseline(key)
    assert found is not None and found[0].status == "FAILED" and found[1].startswith("20")
    other = BaselineKey(**{**key.__dict__, "agent_version": "2.1.198"})  # a new CLI version: run it again
    assert store.baseline(other) is None
    store.keep_baseline(other, record(reused_from="2026-01-01T00:00:00+00:00 (run x)"))
    assert store.baseline(other) is None
