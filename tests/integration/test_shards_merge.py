"""`--skilleval-shard K/N` and `skilleval merge`: three shards merged are one run — the example skills
plus six Anthropic corpus skills, all default tiers (Tier 2 similarity included), byte for byte once the
run-to-run fields (generated_at, durations, the shard label) are set aside."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, REPO, require

from pytest_skilleval import cli
from pytest_skilleval.reports import html
from pytest_skilleval.shard import parse, share


def test_shares_are_round_robin_over_sorted_keys() -> None:
    keys = ["e", "a", "d", "c", "b"]
    parts = [share(keys, k, 3) for k in (1, 2, 3)]
    assert parts == [{"a", "d"}, {"b", "e"}, {"c"}] and set().union(*parts) == set(keys)
    assert parse("2/3") == (2, 3) and parse(None) is None
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(pytest.UsageError):
            parse(bad)


def normalised(report: Path) -> dict[str, Any]:
    data = json.loads((report / "results.json").read_text(encoding="utf-8"))
    for key in ("generated_at", "duration_s", "shard"):
        data.pop(key, None)
    for sk in data["skills"]:
        for rec in sk["checks"]:
            rec["result"]["duration_s"] = None
    return data


def cards(report: Path) -> dict[str, str]:
    return {p.relative_to(report).as_posix(): "\n".join(ln for ln in p.read_text(encoding="utf-8").splitlines()
                                                        if not ln.startswith("- Evaluation date:"))
            for p in sorted(report.rglob("BENCHMARK.md"))}


def pytest_run(work: Path, report: str, *extra: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "--skills", "skills", "-p", "no:cacheprovider", "-n", "0", "-o", "addopts=", "-q",
                           f"--skilleval-report-dir={report}", "--skilleval-cache-dir=shared-cache", *extra],
                          cwd=work, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]


def test_three_shards_merged_equal_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require((CORPUS / "anthropic-skills").is_dir(), f"the skills corpus is not at {CORPUS}")
    skills = tmp_path / "skills"
    for root in sorted((REPO / "example_skills").iterdir()):
        shutil.copytree(root, skills / root.name)
    # six corpus skills: three full shards of three; each run is all of Tier 1 and 2, four runs in all
    for root in sorted(r for r in (CORPUS / "anthropic-skills").iterdir() if (r / "SKILL.md").is_file())[:6]:
        shutil.copytree(root, skills / root.name)
    assert len(list(skills.iterdir())) == 9
    for k in (1, 2, 3):  # the shards share one embedding cache, as a CI matrix shares a restored cache
        pytest_run(tmp_path, f"shard{k}", f"--skilleval-shard={k}/3")
    pytest_run(tmp_path, "single")
    shard_keys = [{s["key"] for s in json.loads((tmp_path / f"shard{k}" / "results.json").read_text())["skills"]} for k in (1, 2, 3)]
    assert [len(s) for s in shard_keys] == [3, 3, 3] and len(set().union(*shard_keys)) == 9
    assert json.loads((tmp_path / "shard2" / "results.json").read_text())["shard"] == "2/3"

    assert cli.main(["merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), str(tmp_path / "shard3"), "-o", str(tmp_path / "merged")]) == 0
    assert cli.main(["merge", str(tmp_path / "single"), "-o", str(tmp_path / "single-merged")]) == 0
    assert "9 skill(s), 9 card(s)" in capsys.readouterr().out
    single, merged = normalised(tmp_path / "single"), normalised(tmp_path / "merged")
    assert json.dumps(single, indent=2, sort_keys=True) == json.dumps(merged, indent=2, sort_keys=True)
    assert cards(tmp_path / "single") == cards(tmp_path / "merged")
    assert html.render(single) == html.render(merged)
    page = (tmp_path / "merged" / "index.html").read_text(encoding="utf-8")
    assert page == html.render(json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8")))

    def junit(report: str) -> str:
        return re.sub(r' time="[^"]*"', "", (tmp_path / report / "junit.xml").read_text(encoding="utf-8"))

    assert junit("merged") == junit("single-merged") and junit("merged").count("<testcase ") > 9 * 10
    # a skill in two shards, or shards run with different settings, is refused
    assert cli.main(["merge", str(tmp_path / "shard1"), str(tmp_path / "shard1"), "-o", str(tmp_path / "bad")]) == 2
    assert "in more than one shard" in capsys.readouterr().err
