"""Cost guardrails and baseline reuse as a user runs them: real Claude Code in bubblewrap, scripted, through pytest.

- Before any trial starts the run prints its plan (trials per agent × arm × attempt) and an estimate;
  ``--skilleval-dry-run`` stops there.
- ``--skilleval-reuse-baseline`` after an edit of SKILL.md starts only the with_skill trials: the
  gateway's own log (one ``trial_closed`` line per trial it served) proves it, and the card names the
  reused baseline records and when they were stored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

pytest_plugins = ["pytester"]
COMMON = ("-p", "no:cacheprovider", f"--skilleval-agents-dir={AGENTS_DIR}", "--skilleval-cache-dir=trial-cache")


def need_claude() -> None:
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    require(CLIS["claude-code"].agent.locate([AGENTS_DIR]) is not None, "claude-code: `claude` is not installed (make agents)")


def served(log_dir: Path) -> list[str]:
    """The trials the gateway served: its own log has one trial_closed line per trial."""
    lines = [json.loads(line) for line in (log_dir / "gateway.jsonl").read_text().splitlines() if line.strip()]
    return [e["trial"] for e in lines if e.get("event") == "trial_closed"]


def test_dry_run_prints_the_plan_and_starts_nothing(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "example_skills" / "csv-summary", pytester.path / "skills" / "csv-summary")
    result = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-tier3", "--skilleval-attempts", "2", "--skilleval-dry-run",
                                           "-n", "2", *COMMON, timeout=300)
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert "skilleval tier3 plan: 12 trial(s) over 3 case(s) — dry run (--skilleval-dry-run): nothing will be started" in out
    assert "  claude-code: with_skill a1: 3, with_skill a2: 3, without_skill a1: 3, without_skill a2: 3" in out
    assert "estimate (an estimate, not a quote): ~" in out and "no dollars (the gateway plays the model" in out
    assert not (pytester.path / "skilleval-report").exists() and not (pytester.path / "skilleval-report" / "gateway").exists()


def test_reuse_baseline_after_editing_the_skill_runs_only_the_with_skill_arm(pytester: pytest.Pytester) -> None:
    need_claude()
    skill = pytester.path / "skills" / "csv-summary"
    shutil.copytree(REPO / "example_skills" / "csv-summary", skill)
    first = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "-n", "2",
                                          "--skilleval-gateway-log-dir=gw1", *COMMON, timeout=600)
    assert first.ret == 0, first.stdout.str()[-3000:]
    assert "skilleval tier3 plan: 6 trial(s) over 3 case(s)" in first.stdout.str()  # printed by the xdist controller
    first_served = served(pytester.path / "gw1")
    assert len(first_served) == 6 and sum("without_skill" in t for t in first_served) == 3

    md = skill / "SKILL.md"
    md.write_text(md.read_text() + "\nAlways name the file you summarised.\n")  # the skill changed; the baseline did not
    second = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "-n", "2", "--skilleval-reuse-baseline",
                                           "--skilleval-gateway-log-dir=gw2", *COMMON, timeout=600)
    out = second.stdout.str()
    assert second.ret == 0, out[-3000:]
    second_served = served(pytester.path / "gw2")
    assert len(second_served) == 3 and all("with_skill" in t and "without_skill" not in t for t in second_served), second_served

    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    t3 = data["skills"][0]["tier3"]
    assert len(t3["reused_baselines"]) == 3
    card = (pytester.path / "skilleval-report" / "csv-summary" / "BENCHMARK.md").read_text()
    assert "- Reused baseline records (--skilleval-reuse-baseline): 3 without_skill trial(s) not run but taken from an earlier run" in card
    assert "csv-summary-001 [claude-code] a1: 20" in card  # … and when: an ISO timestamp, then the run id
    agent = t3["agents"][0]
    without = [r for r in agent["attempts"] if r["arm"] == "without_skill"]
    assert len(without) == 3 and all(r["tokens"] == 0 for r in without)  # nothing spent on them in this run
    assert {r["status"] for r in without} == {"FAILED", "PASSED"}  # the recorded outcomes, unchanged

    edited = skill / "evals" / "files" / "sales.csv"  # an input file changed: the baseline must run again
    edited.write_text(edited.read_text() + "south,7,\n")
    third = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "-n", "2", "--skilleval-reuse-baseline",
                                          "--skilleval-gateway-log-dir=gw3", *COMMON, timeout=600)
    assert third.ret == 0, third.stdout.str()[-3000:]
    third_served = served(pytester.path / "gw3")
    assert sum("without_skill" in t for t in third_served) == 3  # every case reads sales.csv (the negative one by default)
    print(f"\ngateway trials served: first run {len(first_served)}, after editing SKILL.md with --skilleval-reuse-baseline "
          f"{len(second_served)}, after editing sales.csv {len(third_served)}")


def test_dry_run_plans_and_prices_the_aa_arm(pytester: pytest.Pytester) -> None:
    # Regression (make eval): the plan's node-id pattern knew only with_skill|without_skill, so with
    # --skilleval-aa it printed "18 trial(s)" and ran 27, and the dry-run estimate left the A/A arm out.
    shutil.copytree(REPO / "example_skills" / "csv-summary", pytester.path / "skills" / "csv-summary")
    args = ("--skills", "skills", "--skilleval-tier3", "--skilleval-gateway=proxy", "--skilleval-dry-run", "-n", "2", *COMMON)
    plain = pytester.runpytest_subprocess(*args, timeout=300).stdout.str()
    aa = pytester.runpytest_subprocess(*args, "--skilleval-aa", timeout=300).stdout.str()
    assert "skilleval tier3 plan: 6 trial(s) over 3 case(s)" in plain, plain[-3000:]
    assert "skilleval tier3 plan: 9 trial(s) over 3 case(s)" in aa, aa[-3000:]
    assert "  claude-code: with_skill a1: 3, without_skill a1: 3, without_skill_aa a1: 3" in aa

    def tokens(out: str) -> int:
        line = next(ln for ln in out.splitlines() if "estimate (an estimate, not a quote): ~" in ln)
        return int(line.split("~", 1)[1].split(" ", 1)[0].replace(",", ""))

    assert tokens(aa) == tokens(plain) * 3 // 2
