"""The gateway's metering reaches grading for every agent (issue 10, item 8), with the real CLIs in bubblewrap.

``max_tokens`` and ``max_cost`` are decided from what the gateway metered over every request of the
trial — the same figure for all four CLIs — not from what each CLI says of itself (Codex and Gemini
report no cost at all: on a99a1ca their ``max_cost`` was undecided, so the trial was an ERROR). A
scripted trial spent nothing: its record and card show no dollars ("—"), only the metered tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import manifest, require, write_skill
from e2e_clis import AGENTS_DIR, CLIS
from e2e_fixtures import have

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream
from pytest_skilleval.reports.tier3 import attempt_sections
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3 import report as tier3_report
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.items import format_trial
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner

ANSWER = "The answer is 42."
EVALS = {"skill_name": "demo-skill", "evals": [
    {"id": "budget", "prompt": "What is six times seven?", "expected_output": "42",
     "assertions": [{"type": "contains", "value": "42"}, {"type": "max_tokens", "value": 1_000_000}, {"type": "max_cost", "value": 5.0}],
     "script": {"*": [{"text": ANSWER}]}},
]}


@pytest.fixture(scope="module")
def skill(tmp_path_factory: pytest.TempPathFactory) -> Skill:
    root = write_skill(tmp_path_factory.mktemp("skills"), "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": json.dumps(EVALS)})
    return Skill(root=root, key="demo-skill")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[LocalSandbox]:
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    box = LocalSandbox()
    require(box.isolated, f"Tier 3 trials need bubblewrap: {box.bwrap_problem}")
    yield box
    box.close()


def run(gateway: Gateway, sandbox: LocalSandbox, skill: Skill, name: str, root: Path) -> TrialRecord:
    agent = CLIS[name].agent
    require(agent.locate([AGENTS_DIR]) is not None, f"{name}: `{agent.executable}` is not installed (make agents)")
    for program in agent.needs:
        require(have(program), f"{name} needs `{program}` on PATH")
    case = load_cases(skill).get("budget")
    assert case is not None
    runner = TrialRunner(gateway, sandbox, Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,), timeout_s=240))
    return runner.run(TrialRequest(skill=skill, skill_key="demo-skill", case=case, agent=agent, arm="with_skill", name=f"budget-{name}"), root)


def usage_outcomes(record: TrialRecord) -> dict[str, tuple[bool | None, str]]:
    assert record.grade is not None
    return {o.kind: (o.passed, o.detail or "") for o in record.grade.assertions if o.kind in ("max_tokens", "max_cost")}


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini", "opencode"])
def test_scripted_trials_are_budgeted_on_metered_tokens_and_show_no_dollars(name: str, skill: Skill, sandbox: LocalSandbox,
                                                                            tmp_path: Path) -> None:
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gw")) as gateway:
        record = run(gateway, sandbox, skill, name, tmp_path / "t")
    assert record.status == "PASSED", format_trial(record)
    metered = record.tokens_in + record.tokens_out
    assert metered >= 1234 + 56  # the script's fixed usage, at least one request
    found = usage_outcomes(record)
    assert found["max_tokens"] == (True, f"{metered} tokens metered at the gateway (limit 1000000)")
    assert found["max_cost"] == (True, "$0.0000 metered at the gateway (limit $5.0000)")  # nothing was spent
    assert record.cost_usd is None  # no invented dollars: the CLI's own "total_cost_usd" is not a spend either
    t3 = tier3_report.build([record], blocking=False, reruns=0)
    assert t3.agents[0].arms["with_skill"].cost_usd is None
    row = next(line for line in attempt_sections(t3) if line.startswith("| ") and "with_skill" in line)
    assert f"| {metered} | — |" in row, row  # tokens per trial, then cost per trial: "—"


def test_proxied_trials_are_budgeted_on_metered_dollars(skill: Skill, sandbox: LocalSandbox, tmp_path: Path) -> None:
    with FakeUpstream(Script.from_data({"steps": [{"text": ANSWER}]})) as upstream, \
            Gateway(GatewayConfig(mode="proxy", upstreams={"openai": Upstream("openai", upstream.url, "sk-fake-openai-key")},
                                  log_dir=tmp_path / "gw")) as gateway:
        record = run(gateway, sandbox, skill, "codex", tmp_path / "t")
    assert record.status == "PASSED", format_trial(record)
    assert record.cost_usd is not None and record.cost_usd > 0  # priced from the built-in table
    assert usage_outcomes(record)["max_cost"] == (True, f"${record.cost_usd:.4f} metered at the gateway (limit $5.0000)")
