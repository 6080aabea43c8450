"""The opt-in rubric check, judged by a scripted model through the real gateway and the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import manifest, run_check, write_skill

from pytest_skilleval import gate
from pytest_skilleval.gateway import Gateway, GatewayConfig, Script
from pytest_skilleval.providers import select
from pytest_skilleval.providers.openai_chat import OpenAIChat
from pytest_skilleval.providers.retry import RetryPolicy
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.rubric import CRITERIA, RubricCheck


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gw-logs", timeout_s=10)) as gw:
        yield gw


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    root = write_skill(tmp_path, "demo-skill", {"SKILL.md": manifest(), "references/guide.md": "# Guide\n\nStep one.\n"})
    return Skill(root=root, key="demo-skill")


def _judge(gateway: Gateway, skill: Skill, reply: Any, monkeypatch: pytest.MonkeyPatch, **settings: object) -> tuple[Any, Any]:
    script = Script.from_data({"steps": [{"text": "unused"}], "json_reply": reply})
    with gateway.trial("rubric", script=script) as trial:
        chat = OpenAIChat("scripted-judge", api_key=trial.token.secret, base_url=trial.openai_url, name="openai-compatible",
                          retry=RetryPolicy(retries=0))
        monkeypatch.setattr(select, "chat_from_settings", lambda s: chat)
        result = run_check(RubricCheck(), skill, **settings)
    return result, trial


def _reply(**overrides: float) -> dict[str, Any]:
    return {"criteria": [{"id": c.id, "score": overrides.get(c.id, 8), "notes": f"{c.id} note"} for c in CRITERIA]}


def test_rubric_is_opt_in() -> None:
    assert RubricCheck.default_enabled is False


def test_good_scores_pass_with_the_weighted_overall(gateway: Gateway, skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    result, trial = _judge(gateway, skill, _reply(maintainability=10), monkeypatch)
    total = sum(c.weight for c in CRITERIA)
    expected = round((8 * (total - 1) + 10 * 1) / total * 10, 1)
    assert result.score == expected and result.min_score == 70 and result.findings == []
    assert gate.decide(result, blocking=True, policy=gate.Policy()).status is Status.PASSED
    [entry] = trial.entries  # one judge call, through the gateway, carrying the skill and the schema
    body = json.dumps(entry["body"])
    assert "references/guide.md" in body and "json_schema" in body and "trigger_description" in body


def test_a_criterion_under_seven_fails_and_names_it(gateway: Gateway, skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _judge(gateway, skill, _reply(examples=4), monkeypatch)
    [finding] = result.findings
    assert finding.rule == "rubric.examples" and finding.severity is Severity.HIGH and "4/10" in finding.message
    assert result.score is not None and result.score >= 70  # the overall alone would pass
    assert gate.decide(result, blocking=True, policy=gate.Policy()).status is Status.FAILED


def test_overall_under_the_pass_mark_fails(gateway: Gateway, skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _judge(gateway, skill, _reply(), monkeypatch, min_rubric=85.0)
    assert result.score == 80.0 and result.findings == []
    verdict = gate.decide(result, blocking=True, policy=gate.Policy())
    assert verdict.status is Status.FAILED and "below the pass mark 85" in verdict.reason


def test_malformed_reply_is_retried_then_error_not_zero(gateway: Gateway, skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    result, trial = _judge(gateway, skill, {"verdict": "great"}, monkeypatch)
    assert result.status is Status.ERROR and "malformed" in (result.reason or "") and result.score is None
    assert len(trial.entries) == 3


def test_wrong_criteria_set_is_an_error(gateway: Gateway, skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = _reply()
    reply["criteria"] = reply["criteria"][:-1]
    result, _ = _judge(gateway, skill, reply, monkeypatch)
    assert result.status is Status.ERROR and "maintainability" in (result.reason or "")


def test_no_chat_model_is_incomplete(skill: Skill, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select, "chat_from_settings", lambda s: None)
    result = run_check(RubricCheck(), skill)
    assert result.status is Status.INCOMPLETE and "--skilleval-provider" in (result.reason or "")
