"""Tier 2 intra-skill dedup: planted duplicates, embeddings-only mode, classification through the gateway.

Real models throughout (the shipped static embedder; no mocked vectors). The chat model is the
model gateway in scripted mode, reached by the provider layer's OpenAI SDK client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import manifest, write_skill

from pytest_skilleval import gate
from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial
from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.providers.openai_chat import OpenAIChat
from pytest_skilleval.providers.retry import RetryPolicy
from pytest_skilleval.results import CheckResult, Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier2 import calibration, embedders, intra
from pytest_skilleval.tier2.checks import evaluate_dedup
from pytest_skilleval.tier2.chunking import chunk_markdown
from pytest_skilleval.tier2.similarity import UnionFind

PLANTED = ("Always run the full test suite with pytest before you open a pull request, and paste the summary "
           "line of the run into the pull request description so reviewers can see it passed.")
NEAR = PLANTED.replace("Always run", "Always execute")  # one word changed: still the same instruction
SKILL_MD = manifest(name="release-helper", description="Use when preparing a release of a Python package.", body=f"""\
# Release helper

Bump the version in pyproject.toml following semantic versioning, then update the changelog.

{PLANTED}

## Publishing

Build the wheel and the source distribution with python -m build and upload them with twine.
""")
GUIDE = f"""\
# Guide

Tag the release commit with the version number and push the tag to the remote.

{NEAR}
"""


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    root = write_skill(tmp_path, "release-helper", {"SKILL.md": SKILL_MD, "references/guide.md": GUIDE})
    return Skill(root=root, key="release-helper")


def _planted_lines(skill: Skill) -> tuple[int, int]:
    skill_line = skill.manifest_text.splitlines().index(PLANTED) + 1  # type: ignore[union-attr]
    return skill_line, GUIDE.splitlines().index(NEAR) + 1


def _no_chat() -> ChatProvider | None:
    return None


def test_planted_duplicate_found_with_both_locations_embeddings_only(skill: Skill) -> None:
    result = evaluate_dedup(skill, embedders.load_static(), _no_chat)
    skill_line, guide_line = _planted_lines(skill)
    assert result.status is Status.PASSED and result.metrics["mode"] == "embeddings-only"
    candidates = [f for f in result.findings if f.rule == "tier2.duplicate-candidate"]
    assert len(candidates) == 1, [f.message for f in result.findings]
    found = candidates[0]
    assert (found.file, found.line) == ("SKILL.md", skill_line)
    assert f"SKILL.md:{skill_line}" in found.message and f"references/guide.md:{guide_line}" in found.message
    assert "unverified" in found.message and "embeddings-only" in found.message
    assert found.severity in (Severity.LOW, Severity.MEDIUM)  # advisory: never fails at the default fail-on
    note = [f for f in result.findings if f.rule == "tier2.embeddings-only"]
    assert len(note) == 1 and note[0].severity is Severity.INFO
    assert gate.decide(result, blocking=True, policy=gate.Policy()).status is Status.PASSED


def test_a_skill_without_repeats_has_no_clusters(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "plain", {"SKILL.md": manifest(name="plain", body=(
        "# Plain\n\nConvert temperatures between Celsius and Fahrenheit using the standard formula.\n\n"
        "Deploy the container image to the staging cluster with kubectl apply and watch the rollout.\n"))})
    result = evaluate_dedup(Skill(root=root, key="plain"), embedders.load_static(), _no_chat)
    assert result.findings == [] and result.metrics["clusters"] == 0


def test_union_find_chains_pairs_into_clusters() -> None:
    uf = UnionFind(6)
    for a, b in ((0, 3), (3, 5), (1, 2)):
        uf.union(a, b)
    assert uf.groups() == [[0, 3, 5], [1, 2]]


def test_long_single_linkage_chains_are_split_until_they_fit() -> None:
    chain = [(k, k + 1, 0.85) for k in range(19)] + [(0, 1, 0.99), (5, 6, 0.95), (6, 7, 0.95)]
    groups = intra._components(20, chain, calibration.INTRA_THRESHOLD)
    assert sorted((g, round(s, 2)) for g, s in groups) == [([0, 1], 0.99), ([5, 6, 7], 0.95)]
    small = intra._components(5, [(k, k + 1, 0.85) for k in range(4)], calibration.INTRA_THRESHOLD)
    assert small == [([0, 1, 2, 3, 4], 0.85)]  # within the size limit: single linkage as specified


def test_verbatim_repeats_cluster_whatever_the_vectors() -> None:
    chunks = chunk_markdown("A paragraph that repeats word for word.\n\nAn unrelated line.\n\nA paragraph that repeats word  for word.\n", "x.md")
    orthogonal = np.eye(3, dtype=np.float32)  # the model says "unrelated": identical text still wins
    clusters = intra.find_clusters(chunks, orthogonal, 0.8, calibration.IDENTITY)
    assert [[c.start_line for c in cl.members] for cl in clusters] == [[1, 5]] and clusters[0].max_similarity == 1.0


# -- classification through the model gateway ---------------------------------------------------


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gw-logs", timeout_s=10)) as gw:
        yield gw


def _chat(trial: Trial) -> OpenAIChat:
    return OpenAIChat("scripted-judge", api_key=trial.token.secret, base_url=trial.openai_url, name="openai-compatible",
                      retry=RetryPolicy(retries=0))


def _classify(gateway: Gateway, skill: Skill, reply: Any) -> tuple[CheckResult, Trial]:
    script = Script.from_data({"steps": [{"text": "unused"}], "json_reply": reply})
    with gateway.trial("dedup", script=script) as trial:
        chat = _chat(trial)
        result = evaluate_dedup(skill, embedders.load_static(), lambda: chat)
    return result, trial


def test_classified_duplicate_is_high_and_blocks(gateway: Gateway, skill: Skill) -> None:
    result, trial = _classify(gateway, skill, {"verdict": "DUPLICATE", "confidence": 0.9, "reasoning": "same rule twice",
                                               "suggestion": "keep it in SKILL.md only"})
    skill_line, guide_line = _planted_lines(skill)
    assert result.metrics["mode"] == "classified" and result.metrics["chat_model"] == "openai-compatible:scripted-judge"
    [finding] = result.findings
    assert finding.severity is Severity.HIGH and finding.rule == "tier2.duplicate"
    assert f"SKILL.md:{skill_line}" in finding.message and f"references/guide.md:{guide_line}" in finding.message
    assert "confidence 0.90" in finding.message and finding.suggestion == "keep it in SKILL.md only"
    assert gate.decide(result, blocking=True, policy=gate.Policy()).outcome == "failed"
    # the request really went through the gateway, carrying both passages and a JSON schema
    [entry] = trial.entries
    body = json.dumps(entry["body"])
    assert "references/guide.md" in body and "json_schema" in body and entry["status"] == 200


def test_low_confidence_duplicate_is_advisory(gateway: Gateway, skill: Skill) -> None:
    result, _ = _classify(gateway, skill, {"verdict": "DUPLICATE", "confidence": 0.5})
    assert [f.severity for f in result.findings] == [Severity.MEDIUM]
    assert gate.decide(result, blocking=True, policy=gate.Policy()).status is Status.PASSED


def test_intentional_detail_is_not_a_finding(gateway: Gateway, skill: Skill) -> None:
    result, _ = _classify(gateway, skill, {"verdict": "INTENTIONAL_DETAIL", "confidence": 0.95, "reasoning": "summary"})
    assert result.findings == [] and result.metrics["verdicts"][0]["verdict"] == "INTENTIONAL_DETAIL"


def test_malformed_classifier_reply_is_retried_then_an_error(gateway: Gateway, skill: Skill) -> None:
    result, trial = _classify(gateway, skill, {"label": "dup?"})  # valid JSON, wrong shape
    assert result.status is Status.ERROR and "malformed" in (result.reason or "")
    assert len(trial.entries) == 3  # ChatProvider.structured asked twice more before giving up
    assert "previous reply was not valid" in json.dumps(trial.entries[-1]["body"])
    assert gate.decide(result, blocking=False, policy=gate.Policy()).outcome == "failed"  # an ERROR is never advisory
