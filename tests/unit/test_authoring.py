"""`skilleval init` and `skilleval create-eval-dataset`: a scaffold that passes Tier 1, and drafted cases in
four buckets that load as eval cases — from templates, and through a real provider SDK against a local server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, loopback_only

from pytest_skilleval import cli
from pytest_skilleval.authoring import dataset
from pytest_skilleval.gateway.fake_upstream import Act, FakeUpstream
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.triggers import sets as trigger_sets

#: what the fake vendor answers when a test pushes no text of its own
REPLIES = Script.from_data({"steps": [{"text": "hello from upstream"}], "usage": {"input": 11, "output": 7}})

EXAMPLES = sorted(p for p in (REPO / "example_skills").iterdir() if (p / "SKILL.md").is_file())


@pytest.fixture(autouse=True)
def _no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SKILLEVAL_PROVIDER", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_API_KEY", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)


def test_init_scaffold_passes_tier1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", "invoice-totals", "--dir", str(tmp_path / "skills")]) == 0
    root = tmp_path / "skills" / "invoice-totals"
    assert {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} == {
        "SKILL.md", "LICENSE.txt", "evals/evals.json", "evals/triggers.json"}
    cases = load_cases(Skill(root=root, key="invoice-totals"))
    assert len(cases) == 2 and not [p for p in cases.problems if p.severity.value in ("CRITICAL", "HIGH", "MEDIUM")]
    done = subprocess.run([sys.executable, "-m", "pytest", "--skills", str(root), "-m", "tier1", "-p", "no:cacheprovider", "-o", "addopts=",
                           "-q", "-n", "0", "--skilleval-report-dir="], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "failed" not in done.stdout.splitlines()[-1]
    capsys.readouterr()
    assert cli.main(["init", "invoice-totals", "--dir", str(tmp_path / "skills")]) == 2  # never overwrites without --force
    assert "--force" in capsys.readouterr().err
    assert cli.main(["init", "Bad_Name", "--dir", str(tmp_path)]) == 2


def test_init_trigger_set_loads(tmp_path: Path) -> None:
    assert cli.main(["init", "demo-skill", "--dir", str(tmp_path)]) == 0
    loaded = trigger_sets.load_trigger_set(Skill(root=tmp_path / "demo-skill", key="demo-skill"))
    assert {q.should_trigger for q in loaded.queries} == {True, False} and len(loaded.queries) == 4
    assert not [p for p in loaded.problems if p.severity.value in ("CRITICAL", "HIGH", "MEDIUM")]


@pytest.mark.parametrize("root", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_template_dataset_for_the_example_skills(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill_dir = shutil.copytree(root, tmp_path / root.name)
    assert cli.main(["create-eval-dataset", str(skill_dir), "--dry-run", "--templates"]) == 0
    doc = json.loads(capsys.readouterr().out)
    buckets = [e["metadata"]["bucket"] for e in doc["evals"]]
    assert set(buckets) == set(dataset.BUCKETS) and all(e["metadata"]["needs_review"] for e in doc["evals"])
    negatives = [e for e in doc["evals"] if e["metadata"]["bucket"] == "negative"]
    assert len(negatives) >= 2 and all(e["expected_skill"] is None for e in negatives)
    for e in negatives:  # never "what does this skill do?", never the skill's name
        assert root.name not in e["prompt"] and "skill" not in e["prompt"].lower() and "what does" not in e["prompt"].lower()
    assert next(e for e in doc["evals"] if e["metadata"]["bucket"] == "explicit")["prompt"].startswith(f"Use the {root.name} skill")
    # the skill already has evals/evals.json: refused without --force; a new file is written and loads cleanly
    assert cli.main(["create-eval-dataset", str(skill_dir), "--templates"]) == 2
    assert cli.main(["create-eval-dataset", str(skill_dir), "--templates", "-o", "evals/drafted.json"]) == 0
    cases = load_cases(Skill(root=skill_dir, key=root.name))
    drafted = [c for c in cases if c.source.file == "evals/drafted.json"]
    assert len(drafted) == len(doc["evals"]) and not [p for p in cases.problems if p.file == "evals/drafted.json"
                                                      and p.severity.value in ("CRITICAL", "HIGH", "MEDIUM")]
    assert cli.main(["create-eval-dataset", str(skill_dir), "--templates", "-o", "evals/drafted.json"]) == 2
    assert cli.main(["create-eval-dataset", str(skill_dir), "--templates", "-o", "evals/drafted.json", "--force"]) == 0


def test_near_miss_phrasing() -> None:
    assert dataset.near_miss("Write", "generating commit messages") == "Generate commit messages."
    assert dataset.near_miss("Summarize", "Excel workbooks") == "Summarize Excel workbooks for me."
    assert dataset.near_miss("Decide", "projects that version by date (CalVer)") == "Can you help me with projects that version by date (CalVer)?"
    what, use_when, excluded = dataset.describe(Skill(root=REPO / "example_skills" / "csv-summary", key="csv-summary"))
    assert what.startswith("Summarize a CSV file") and len(use_when) == 3 and excluded[:2] == ["Excel workbooks", "databases"]


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeUpstream]:
    loopback_only(monkeypatch)
    with FakeUpstream(REPLIES) as server:
        for name, value in (("SKILLEVAL_PROVIDER", "openai-compatible"), ("SKILLEVAL_BASE_URL", f"{server.url}/v1"),
                            ("SKILLEVAL_MODEL", "drafter"), ("SKILLEVAL_CACHE", "off"), ("SKILLEVAL_PROVIDER_RETRIES", "0")):
            monkeypatch.setenv(name, value)
        yield server


def test_provider_draft_is_validated_and_retried(upstream: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill_dir = shutil.copytree(REPO / "example_skills" / "csv-summary", tmp_path / "csv-summary")
    good = {"cases": [{"bucket": b, "prompt": f"A realistic {b} request about sales.csv", "expected_output": "the row count"}
                      for b in dataset.BUCKETS]}
    upstream.push(Act(text='{"cases": [{"bucket": "sideways", "prompt": "x"}]}'), Act(text=json.dumps(good)))  # malformed, then valid
    assert cli.main(["create-eval-dataset", str(skill_dir), "-o", "evals/model.json"]) == 0
    assert "drafted by model:drafter" in capsys.readouterr().out and upstream.count() == 2
    doc = json.loads((skill_dir / "evals" / "model.json").read_text())
    assert [e["metadata"]["bucket"] for e in doc["evals"]] == list(dataset.BUCKETS)
    assert doc["evals"][3]["expected_skill"] is None and doc["evals"][0]["expected_skill"] == "csv-summary"
    sent = json.dumps(upstream.requests[0].body["messages"])
    assert "Never ask what the skill does" in sent and "Not for Excel workbooks" in sent  # the rules and the skill reach the model
    # a draft missing a bucket is refused, nothing is written
    upstream.push(Act(text=json.dumps({"cases": good["cases"][:3] + good["cases"][:1]})))
    assert cli.main(["create-eval-dataset", str(skill_dir), "-o", "evals/other.json"]) == 1
    assert not (skill_dir / "evals" / "other.json").exists() and "no negative case" in capsys.readouterr().err
