"""``skilleval suggest-description``: budget first, estimate first, a scripted chat provider through the gateway."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script
from pytest_skilleval.skill import Skill
from pytest_skilleval.triggers.sets import load_trigger_set
from pytest_skilleval.triggers.suggest import main, split, write_description

openai = pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[2]
REWRITES = ("DESCRIPTION: Summarize a CSV or TSV file: row count, column types, per-column statistics. Use when asked what is in "
            "a delimited data file. Not for Excel or databases.\nDESCRIPTION: Profile tabular text files (CSV, TSV).")


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    return Path(shutil.copytree(REPO / "example_skills" / "csv-summary", tmp_path / "csv-summary"))


def test_refuses_without_a_budget_and_prints_the_estimate_first(skill_dir: Path, tmp_path: Path) -> None:
    from pytest_skilleval.providers.openai_chat import OpenAIChat

    script = Script.from_data({"steps": [{"text": REWRITES}], "json_reply": {"skill": "csv-summary", "reason": "scripted"}})
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gw")) as gw, gw.trial("suggest", script=script) as trial:
        chat = OpenAIChat("gpt-4o-mini", api_key=trial.token.secret, base_url=trial.openai_url, name="openai-compatible")
        lines: list[str] = []
        assert main([str(skill_dir)], chat_factory=lambda: chat, out=lines.append) == 2
        assert "--budget-usd is required" in lines[0] and trial.entries == []
        lines.clear()
        assert main([str(skill_dir), "--budget-usd", "0.000001", "--yes"], chat_factory=lambda: chat, out=lines.append) == 3
        assert lines[0].startswith("estimate:") and "exceeds the budget" in lines[1] and trial.entries == []
        lines.clear()
        before = (skill_dir / "SKILL.md").read_text()
        assert main([str(skill_dir), "--budget-usd", "1", "--yes", "--candidates", "2"], chat_factory=lambda: chat, out=lines.append) == 0
    calls = len(trial.entries)  # read once the trial is closed: a reply reaches the client a moment before it is logged
    assert lines[0].startswith("estimate: ") and f"{calls} chat calls" in lines[0]  # the estimate counts the calls exactly
    assert any(line.startswith("best:") and "train F1" in line and "test F1" in line for line in lines)
    assert lines[-1] == "not written (pass --write to update SKILL.md)" and (skill_dir / "SKILL.md").read_text() == before
    # Every probe prompt carried the listing with the description it scored.
    bodies = [str(e["body"]) for e in trial.entries]
    assert sum("Profile tabular text files (CSV, TSV)." in b for b in bodies) >= 2


def test_split_is_stratified_and_stable() -> None:
    queries = list(load_trigger_set(Skill(root=REPO / "example_skills" / "csv-summary", key="csv")))
    train, test = split(queries, 0.3, "seed")
    assert split(queries, 0.3, "seed") == (train, test) and not set(q.id for q in train) & set(q.id for q in test)
    assert any(q.should_trigger for q in test) and any(not q.should_trigger for q in test)


def test_write_replaces_only_the_description(skill_dir: Path) -> None:
    skill = Skill(root=skill_dir, key="csv-summary")
    write_description(skill_dir / "SKILL.md", skill.description, "Summarize CSV and TSV files. Use when asked what a data file holds.")
    again = Skill(root=skill_dir, key="csv-summary")
    assert again.description == "Summarize CSV and TSV files. Use when asked what a data file holds." and again.name == "csv-summary"
    assert again.body == skill.body
