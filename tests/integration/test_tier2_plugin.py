"""Tier 2 as a user drives it: collection and selection, the gate and --no-block-on-dedup, the chat
model through the model gateway, embeddings-only runs, and a reference catalog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy  # noqa: F401 - see below
import pytest
from conftest import manifest, write_skill

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial

pytest_plugins = ["pytester"]
# NumPy is imported here, before any in-process pytester run, on purpose: Tier 2 imports it lazily
# (a Tier 1 run never loads it), so the first inner run would import it, pytester would drop it from
# sys.modules afterwards, and the next inner run's import fails ("cannot load module more than once
# per process"). Imported first, it is in the snapshot pytester restores.
TIER2 = "--skilleval-checks=dedup,similarity"
PLANTED = ("Always run the full test suite with pytest before you open a pull request, and paste the summary "
           "line of the run into the pull request description so reviewers can see it passed.")
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_PROVIDER", "SKILLEVAL_API_KEY", "SKILLEVAL_MODEL",
        "SKILLEVAL_BASE_URL", "SKILLEVAL_EMBEDDING_PROVIDER")


@pytest.fixture(autouse=True)
def no_provider_from_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:  # a developer's real key must not turn these runs into paid, non-deterministic ones
        monkeypatch.delenv(key, raising=False)


def _skill(base: Path, name: str, description: str, body: str, files: dict[str, str] | None = None) -> Path:
    return write_skill(base / "skills", name, {"SKILL.md": manifest(name=name, description=description, body=body), **(files or {})})


def _release(base: Path) -> None:
    _skill(base, "release-helper", "Use when preparing a release of a Python package.",
           f"# Release helper\n\nBump the version following semantic versioning.\n\n{PLANTED}\n",
           {"references/guide.md": f"# Guide\n\nTag the release commit and push the tag.\n\n{PLANTED}\n"})


def _twins(base: Path) -> None:
    body = "# CSV\n\nRead the CSV file, report the column types, and summarise each numeric column with its mean and range.\n"
    _skill(base, "csv-summary", "Summarise a CSV file: column types and statistics.", body)
    _skill(base, "csv-summary-copy", "Summarise a CSV file: column types and statistics.", body)


def _results(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((path / "rep" / "results.json").read_text())
    return {f"{s['key']}::{c['result']['check']}": c for s in data["skills"] for c in s["checks"]}


def test_tier2_items_sit_next_to_tier1_and_selection_crosses_tiers(pytester: pytest.Pytester) -> None:
    _release(pytester.path)
    _twins(pytester.path)
    ids = [ln for ln in pytester.runpytest("--skills=skills", "--collect-only", "-q").outlines if "::tier" in ln]
    assert "skills/release-helper::tier2::dedup" in ids and "skills/release-helper::tier2::similarity" in ids
    assert ids.index("skills/release-helper::tier1::files") < ids.index("skills/release-helper::tier2::dedup")
    picked = pytester.runpytest("--skills=skills", "--skilleval-checks=files,dedup", "--collect-only", "-q").outlines
    assert [ln for ln in picked if "release-helper::" in ln] == ["skills/release-helper::tier1::files", "skills/release-helper::tier2::dedup"]
    minus = pytester.runpytest("--skills=skills", "--skilleval-checks=-similarity", "--collect-only", "-q").outlines
    assert not any("::tier2::similarity" in ln for ln in minus) and any("::tier2::dedup" in ln for ln in minus)
    marked = pytester.runpytest("--skills=skills", "-m", "tier2", "--collect-only", "-q").outlines
    assert sorted(ln for ln in marked if "::tier" in ln) == sorted(ln for ln in ids if "::tier2::" in ln)


def test_duplicate_skills_block_unless_no_block_on_dedup(pytester: pytest.Pytester) -> None:
    _twins(pytester.path)
    blocked = pytester.runpytest("--skills=skills", TIER2, "--skilleval-report-dir=rep", "-p", "no:cacheprovider")
    blocked.assert_outcomes(passed=2, failed=2)
    blocked.stdout.fnmatch_lines(["*similarity: FAILED*", "*CRITICAL*EXACT_DUPLICATE (1.00) with skill 'csv-summary-copy'*"])
    advisory = pytester.runpytest("--skills=skills", TIER2, "--no-block-on-dedup", "-v", "--skilleval-report-dir=rep")
    assert advisory.ret == 0
    advisory.stdout.fnmatch_lines(["*csv-summary::tier2::similarity ADVISORY*"])
    record = _results(pytester.path)["csv-summary::similarity"]
    assert record["result"]["status"] == "FAILED" and record["blocking"] is False  # reported, not hidden


@pytest.fixture
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path_factory.mktemp("gw"), timeout_s=10)) as gw:
        yield gw


def _via_gateway(monkeypatch: pytest.MonkeyPatch, trial: Trial) -> list[str]:
    monkeypatch.setenv("SKILLEVAL_API_KEY", trial.token.secret)  # keys come from the environment only
    return ["--skilleval-provider=openai-compatible", f"--skilleval-base-url={trial.openai_url}", "--skilleval-model=judge",
            "--skilleval-provider-retries=0", "--skilleval-cache=off"]


def test_dedup_classified_by_a_chat_model_through_the_gateway(pytester: pytest.Pytester, gateway: Gateway,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _release(pytester.path)
    script = Script.from_data({"steps": [{"text": "unused"}], "json_reply": {"verdict": "DUPLICATE", "confidence": 0.92,
                                                                             "reasoning": "the same rule twice"}})
    with gateway.trial("tier2-dedup", script=script) as trial:
        args = _via_gateway(monkeypatch, trial)
        failed = pytester.runpytest("--skills=skills", "--skilleval-checks=dedup", "--skilleval-report-dir=rep", *args)
        failed.assert_outcomes(failed=1)
        failed.stdout.fnmatch_lines(["*dedup: FAILED*", "*HIGH*SKILL.md:9 duplicate content in 2 places: SKILL.md:9, "
                                     "references/guide.md:5*openai-compatible:judge says DUPLICATE, confidence 0.92*"])
        advisory = pytester.runpytest("--skills=skills", "--skilleval-checks=dedup", "--no-block-on-dedup", "-v",
                                      "--skilleval-report-dir=rep", *args)
        assert advisory.ret == 0
        advisory.stdout.fnmatch_lines(["*release-helper::tier2::dedup ADVISORY*"])
    assert len(trial.entries) == 2 and all(e["status"] == 200 for e in trial.entries)
    record = _results(pytester.path)["release-helper::dedup"]
    assert record["result"]["metrics"]["mode"] == "classified" and record["blocking"] is False


def test_malformed_classifier_replies_are_an_error_even_when_advisory(pytester: pytest.Pytester, gateway: Gateway,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _release(pytester.path)
    with gateway.trial("tier2-bad", script=Script.from_data({"steps": [{"text": "x"}], "json_reply": ["not", "an", "object"]})) as trial:
        result = pytester.runpytest("--skills=skills", "--skilleval-checks=dedup", "--no-block-on-dedup",
                                    *_via_gateway(monkeypatch, trial))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*dedup: ERROR*cluster classification failed*malformed*"])
    assert len(trial.entries) == 3


def test_without_a_chat_model_dedup_reports_unverified_candidates(pytester: pytest.Pytester) -> None:
    _release(pytester.path)
    result = pytester.runpytest("--skills=skills", "--skilleval-checks=dedup", "--skilleval-report-dir=rep")
    result.assert_outcomes(passed=1)
    record = _results(pytester.path)["release-helper::dedup"]
    assert record["result"]["status"] == "PASSED" and record["result"]["metrics"]["mode"] == "embeddings-only"
    card = (pytester.path / "rep" / "release-helper" / "BENCHMARK.md").read_text()
    assert "embeddings-only" in card and "SKILL.md:9" in card and "references/guide.md:5" in card


def test_two_provider_keys_do_not_break_tier2(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both keys set: the offline embedder needs neither, dedup runs embeddings-only and names the option that
    settles the choice; only a check that needs a chat model (the rubric) is an error, naming it too."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-not-used")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-used")
    _release(pytester.path)
    _skill(pytester.path, "other-skill", "Use when formatting a changelog.", "# Changelog\n\nGroup entries by type.\n")
    result = pytester.runpytest("--skills=skills", TIER2, "--skilleval-report-dir=rep")
    result.assert_outcomes(passed=4)
    record = _results(pytester.path)["release-helper::dedup"]
    assert record["result"]["metrics"]["mode"] == "embeddings-only"
    assert "--skilleval-provider" in json.dumps(record["result"]["findings"])
    rubric = pytester.runpytest("--skills=skills/other-skill", "--skilleval-checks=rubric")
    rubric.assert_outcomes(failed=1)
    rubric.stdout.fnmatch_lines(["*ambiguous*--skilleval-provider=openai|anthropic*"])


def test_compare_to_a_reference_catalog(pytester: pytest.Pytester) -> None:
    body = "# Notes\n\nTurn meeting notes into a list of decisions and action items with owners and due dates.\n"
    _skill(pytester.path, "meeting-notes", "Turn meeting notes into decisions and action items.", body)
    catalog = write_skill(pytester.path / "catalog", "minutes-taker", {
        "SKILL.md": manifest(name="minutes-taker", description="Turn meeting notes into decisions and action items.", body=body)})
    alone = pytester.runpytest("--skills=skills/meeting-notes", "--skilleval-checks=similarity", "-rs")
    alone.assert_outcomes(skipped=1)
    alone.stdout.fnmatch_lines(["*no other skill to compare with*"])
    result = pytester.runpytest("--skills=skills/meeting-notes", "--skilleval-checks=similarity",
                                f"--skilleval-compare-to={catalog.parent}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*EXACT_DUPLICATE*with catalog skill 'minutes-taker' (catalog/minutes-taker)*"])


@pytest.mark.parametrize("args, message", [
    (["--skilleval-similarity-threshold=2"], "*--skilleval-similarity-threshold must be between 0 and 1*"),
    (["--skilleval-embedder=word2vec"], "*--skilleval-embedder: unknown embedder 'word2vec'*"),
    (["--skilleval-compare-to=nowhere"], "*--skilleval-compare-to:*is not a folder*"),
])
def test_bad_tier2_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    _twins(pytester.path)
    result = pytester.runpytest("--skills=skills", TIER2, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
