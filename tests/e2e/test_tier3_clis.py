"""Each real CLI through BOTH arms of an example case, scripted and keyless, inside bubblewrap.

The case is ``csv-summary-001`` of ``example_skills/csv-summary``: its script loads the skill only
when the request lists it. The trial runner is the package's (staging, adapters, sandbox, parsing,
grading); the assertions read the gateway's request log — what each CLI really sent the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

from pytest_skilleval.gateway import Gateway, GatewayConfig
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.items import format_trial
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.staging import hidden_dirs
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner
from pytest_skilleval.trajectory.requestlog import read_request_context

SKILL_DIR = REPO / "example_skills" / "csv-summary"
CASE = "csv-summary-001"


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrialRunner]:
    sandbox = LocalSandbox()
    require(sandbox.isolated, f"Tier 3 trials need bubblewrap: {sandbox.bwrap_problem}")
    settings = Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,), timeout_s=240)
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path_factory.mktemp("gateway"))) as gateway:
        yield TrialRunner(gateway, sandbox, settings, hidden=tuple(hidden_dirs(c.agent for c in CLIS.values())))
    sandbox.close()


def main_requests(record: TrialRecord) -> list[str]:
    """Bodies (as JSON text) of the requests that carried tools: side calls (OpenCode's title) do not."""
    entries = [json.loads(line) for line in Path(record.artifacts["requests"]).read_text().splitlines()]
    return [json.dumps(e["body"], ensure_ascii=False) for e in entries if e["tools"]]


@pytest.mark.parametrize("name", CLIS)
def test_both_arms_in_bubblewrap(name: str, runner: TrialRunner, tmp_path: Path) -> None:
    agent = CLIS[name].agent
    require(agent.locate([AGENTS_DIR]) is not None, f"{name}: `{agent.executable}` is not installed (make agents)")
    for program in agent.needs:
        require(have(program), f"{name} needs `{program}` on PATH")
    skill = Skill(root=SKILL_DIR, key="csv-summary")
    cases = load_cases(skill)
    case = cases.get(CASE)
    assert case is not None
    records = {}
    for arm in ("with_skill", "without_skill"):
        req = TrialRequest(skill=skill, skill_key="csv-summary", case=case, agent=agent, arm=arm, name=f"e2e-{name}-{arm}",
                           dataset_digest=cases.digest())
        records[arm] = runner.run(req, tmp_path / arm)
    with_skill, without = records["with_skill"], records["without_skill"]

    # From the gateway log: the with-skill request listed the skill; no without-skill request did.
    listing = agent.listing("csv-summary")
    first = main_requests(with_skill)[0]
    assert listing in first, f"{name}: {listing!r} not in its first request"
    assert skill.description[:60] in first  # name and description, in this CLI's catalog format
    assert not any(listing in text or "csv-summary/SKILL.md" in text for text in main_requests(without))
    catalog_with = read_request_context(with_skill.artifacts["requests"]).catalog
    catalog_without = read_request_context(without.artifacts["requests"]).catalog
    assert catalog_with is not None and "csv-summary" in [s.name for s in catalog_with]
    assert catalog_without is not None and "csv-summary" not in [s.name for s in catalog_without]  # bundled skills still listed
    assert (with_skill.skill_listed, without.skill_listed) == (True, False)

    # The scripted model loaded the skill where it was offered; its body reached the model after that.
    assert with_skill.status == "PASSED", format_trial(with_skill)
    assert with_skill.invoked_skills == ["csv-summary"] and with_skill.skill_body_reached_model is True
    assert "3 rows" in (with_skill.final_answer or "")
    # The baseline answered without it and failed the case's checks: the lift the card reports.
    assert without.status == "FAILED" and without.invoked_skills == [] and without.skill_body_reached_model is False, format_trial(without)

    for record in records.values():
        assert record.isolated and "bubblewrap" in record.sandbox
        assert record.exit_code == 0 and not record.timed_out
        assert not [n for n in record.notes if "network" in n or "failed at the gateway" in n], record.notes
        assert (Path(record.artifacts["workspace"]) / "evals/files/sales.csv").is_file()  # the case's input, in both arms
        assert record.tokens_in >= 1234 and record.agent_version
