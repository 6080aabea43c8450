"""`skilleval aggregate`: every card layout in use and NVIDIA's benchmarks.json read into one row shape,
and the catalog means under each weighting — the same from the JSON as from the cards."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import CORPUS, require

from pytest_skilleval import cli
from pytest_skilleval.catalog import aggregate as ag
from pytest_skilleval.catalog import cards

NVIDIA_JSON = CORPUS / "nvidia-benchmarks.json"
PROPRIETARY = "rtvi-cv-scaffold-vss-service"  # in benchmarks.json, its card left out of the corpus (licence)


def need_corpus() -> None:
    require(NVIDIA_JSON.exists() and (CORPUS / "nvidia-skills").is_dir(), f"the skills corpus is not at {CORPUS}")


def test_each_card_layout() -> None:
    need_corpus()
    folder = CORPUS / "benchmark-cards"
    cudf = cards.parse_card((folder / "accelerated-computing-cudf.BENCHMARK.md").read_text(), "accelerated-computing-cudf")
    assert cudf.tasks == 13 and len(cudf.rows) == 10 and {r.agent for r in cudf.rows} == {"claude-code", "codex"}
    sec = next(r for r in cudf.rows if r.dimension == "Security" and r.agent == "claude-code")
    assert (sec.num, sec.score_pct, sec.uplift_pct) == (8, 92.0, 12.0)
    assert next(r for r in cudf.rows if r.dimension == "Effectiveness" and r.agent == "codex").uplift_pct == 0.0  # "86% (-0%)"
    model_labelled = cards.parse_card((folder / "cupynumeric-install.BENCHMARK.md").read_text(), "cupynumeric-install")
    assert {r.agent for r in model_labelled.rows} == {"claude-code", "codex"} and model_labelled.tasks == 24
    warp = cards.parse_card((folder / "warp-eval.BENCHMARK.md").read_text(), "warp-eval")
    assert warp.layout == "skill-benchmark" and warp.tasks == 22 and len(warp.rows) == 10  # the Overall row is skipped
    corr = next(r for r in warp.rows if r.dimension == "Correctness" and r.agent == "codex")
    assert (corr.num, corr.score_pct, corr.uplift_pct) == (None, 94.0, 20.0)
    assert next(r for r in warp.rows if r.dimension == "Security" and r.agent == "claude-code").uplift_pct == 0.0  # "±0 points"
    no_tier3 = cards.parse_card((CORPUS / "nvidia-skills/deepstream-generate-pipeline/BENCHMARK.md").read_text(), "x")
    all_na = cards.parse_card((CORPUS / "nvidia-skills/nemoclaw-user-guide/BENCHMARK.md").read_text(), "y")
    assert not no_tier3.has_results and not all_na.has_results


def test_our_card_and_results_json() -> None:
    card = ("# Skill Benchmark: demo\n\n- Tasks: 3 evaluation case(s) (2 positive, 1 negative)\n\n### Tier 3: baseline → with skill\n\n"
            "| Measure | Claude Code (Baseline → Skill) | Codex CLI (Baseline → Skill) |\n|---|---|---|\n"
            "| Overall | 50% → 90% (+40 points, 95% CI +10 to +70, gain; n=3) | not scored |\n"
            "| Correctness | 33% → 100% (+67 points, too few cases for an interval, n=2) | 50% → 50% (±0 points, 95% CI -10 to +10; n=3) |\n"
            "| Pass rate | 50% → 100% | — |\n")
    skill = cards.parse_card(card, "demo")
    assert skill.tasks == 3 and [(r.dimension, r.agent, r.score_pct, r.uplift_pct) for r in skill.rows] == [
        ("Correctness", "claude-code", 100.0, 67.0), ("Correctness", "codex", 50.0, 0.0)]
    doc = {"skills": [{"key": "demo", "tier3": {"cases": 3, "agents": [{"agent": "claude-code", "lift": [
        {"measure": "overall", "with_skill": 0.9, "delta": 0.4, "n": 3},
        {"measure": "correctness", "with_skill": 1.0, "delta": 0.5, "n": 3},
        {"measure": "security", "with_skill": None, "delta": None, "n": 0}]}]}}, {"key": "bare"}]}
    (demo, bare) = cards.from_results_json(doc, "results.json")
    assert [(r.dimension, r.score_pct, r.uplift_pct, r.num) for r in demo.rows] == [("Correctness", 100.0, 50.0, 3)]
    assert not bare.has_results


def test_json_and_cards_give_the_same_figures_under_each_weighting() -> None:
    need_corpus()
    from_json, _ = cards.read([NVIDIA_JSON])
    from_cards, notes = cards.read([CORPUS / "nvidia-skills"])
    assert notes == [] and len(from_json) == 341 and len(from_cards) == 340
    whole = ag.aggregate(from_json, sources=[])
    assert (whole.skills, whole.with_results, len(whole.without_results), whole.rows) == (341, 321, 20, 3180)
    # the corpus MANIFEST's reproduced means (equal rows; equal skills = agents averaged first)
    assert whole.dimensions["Correctness"]["equal_rows"].mean == pytest.approx(4247 / 106)
    assert whole.dimensions["Effectiveness"]["equal_rows"].mean == pytest.approx(24995 / 636)
    assert whole.dimensions["Efficiency"]["equal_rows"].mean == pytest.approx(22681 / 636)
    assert round(whole.dimensions["Correctness"]["equal_skills"].mean, 4) == 39.9517
    assert round(whole.dimensions["Effectiveness"]["equal_skills"].mean, 4) == 39.1776
    assert round(whole.dimensions["Efficiency"]["equal_skills"].mean, 4) == 35.6931
    # the cards hold every skill the JSON does except the one whose card is not in the corpus: leave it out, and
    # every figure (means, intervals, n, task weights, per agent) is identical
    same_json = ag.aggregate(from_json, sources=[], exclude=[PROPRIETARY])
    same_cards = ag.aggregate(from_cards, sources=[])
    assert same_json.excluded == [PROPRIETARY] and same_cards.rows == same_json.rows == 3170
    assert same_json.dimensions == same_cards.dimensions and same_json.per_agent == same_cards.per_agent
    assert same_json.without_results == same_cards.without_results


def test_cli_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need_corpus()
    folder = str(CORPUS / "benchmark-cards")
    assert cli.main(["aggregate", folder, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["skills"] == 3 and data["rows"] == 30 and set(data["dimensions"]["Security"]) == set(ag.WEIGHTINGS)
    assert cli.main(["aggregate", folder, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["weighting"] for r in rows if r["scope"] == "all"} == set(ag.WEIGHTINGS) and any(r["scope"] == "agent:codex" for r in rows)
    assert cli.main(["aggregate", folder]) == 0
    md = capsys.readouterr().out
    assert "| Dimension | Equal rows |" in md and "## Per agent" in md
    junk = tmp_path / "x.json"
    junk.write_text("[1, 2]")
    assert cli.main(["aggregate", str(junk)]) == 2
    # a card given twice is kept once and named
    assert cli.main(["aggregate", folder, str(CORPUS / "benchmark-cards" / "warp-eval.BENCHMARK.md")]) == 0
    assert "warp-eval: given again" in capsys.readouterr().out


def _scripted_and_real(tmp_path: Path) -> tuple[Path, Path]:
    """A results.json of a scripted run (make eval: the gateway played each case's script) and one of real models."""
    def doc(key: str, scripted: bool, delta: float) -> dict:
        return {"skills": [{"key": key, "tier3": {"cases": 3, "scripted": scripted, "modes": ["scripted" if scripted else "proxy"],
                                                  "agents": [{"agent": "claude-code", "lift": [
                                                      {"measure": "effectiveness", "with_skill": 1.0, "delta": delta, "n": 3}]}]}}]}
    scripted, real = tmp_path / "scripted.json", tmp_path / "real.json"
    scripted.write_text(json.dumps(doc("csv-summary", True, 0.8889)))
    real.write_text(json.dumps(doc("pdf-tools", False, 0.1)))
    return scripted, real


def test_scripted_tier3_rows_are_left_out_of_catalog_means_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A harness check is never a model measurement: its lift enters no catalog mean unless asked, and then labelled."""
    scripted, real = _scripted_and_real(tmp_path)
    skills, _ = cards.read([scripted, real])
    agg = ag.aggregate(skills, sources=[])
    assert agg.dimensions["Effectiveness"]["equal_rows"].mean == pytest.approx(10.0)
    assert agg.dimensions["Effectiveness"]["equal_rows"].n == 1 and agg.rows == 1
    assert agg.scripted == ["csv-summary"] and agg.scripted_rows == 1 and agg.scripted_included is False
    assert cli.main(["aggregate", str(scripted)]) == 0
    md = capsys.readouterr().out
    assert "+88.89" not in md and "csv-summary" in md and "harness check" in md and "--include-scripted" in md
    assert cli.main(["aggregate", str(scripted), str(real), "--include-scripted"]) == 0
    md = capsys.readouterr().out
    assert "+49.45" in md and "harness check" in md and "include" in md.lower()
    assert cli.main(["aggregate", str(scripted), "--include-scripted", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scripted_included"] is True and data["scripted"] == ["csv-summary"] and data["rows"] == 1


def test_our_card_of_a_scripted_run_is_scripted_too() -> None:
    card = ("# Skill Benchmark: demo\n\n- Tasks: 3 evaluation case(s)\n\n"
            "### Tier 3: baseline → with skill (harness check — not a model measurement)\n\n"
            "| Measure | Claude Code (Baseline → Skill) |\n|---|---|\n"
            "| Correctness | 33% → 100% (+67 points, too few cases for an interval, n=2) |\n")
    skill = cards.parse_card(card, "demo")
    assert skill.scripted and len(skill.rows) == 1
    assert not cards.parse_card(card.replace(" (harness check — not a model measurement)", ""), "demo").scripted


def test_the_catalog_reads_the_label_our_cards_write() -> None:
    from pytest_skilleval.reports.tier3 import HARNESS_CHECK

    assert cards.HARNESS_CHECK == HARNESS_CHECK
