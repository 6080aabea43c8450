"""Record a real CLI's skill trial through the gateway, then replay it in a different sandbox.

Recording proxies to a local fake vendor (never the internet) with a stand-in "real" key. The
replay runs the same CLI in a fresh sandbox — other temp paths, other session ids, timings — with
no upstream at all, and must complete with zero divergences: this is what cassette matching
(tool results normalised, the trial's paths as placeholders, side calls in any order) is for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_clis import CLIS, FINAL_SKILL
from e2e_fixtures import Sandbox, make_sandbox
from e2e_harness import run_cli

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream

STAND_IN_KEY = "sk-ant-api03-stand-in-real-key-0123456789"


def placeholders(box: Sandbox) -> dict[str, str]:
    return {"<WORKSPACE>": str(box.workspace), "<HOME>": str(box.home), "<TMPDIR>": str(box.tmp), "<ROOT>": str(box.root)}


@pytest.mark.parametrize("name", CLIS)
def test_recorded_cli_trial_replays_without_divergence(name: str, tmp_path: Path) -> None:
    cli, cassettes, trial_name = CLIS[name], tmp_path / "cassettes", f"{name}-skill[recorded]"
    first, second = make_sandbox(tmp_path / "record"), make_sandbox(tmp_path / "replay")
    with FakeUpstream(Script.from_data(cli.script(skill=True))) as vendor:
        upstreams = {family: Upstream(family, vendor.url, STAND_IN_KEY) for family in ("anthropic", "openai", "gemini")}
        with Gateway(GatewayConfig(mode="record", upstreams=upstreams, cassette_dir=cassettes, log_dir=tmp_path / "logs")) as gw:
            recorded, events, _ = run_cli(cli, gw, first, trial_name, skill=True, placeholders=placeholders(first))
    assert cli.final_text(events) == FINAL_SKILL
    cassette = gw.cassette_path(trial_name).read_text()
    assert STAND_IN_KEY not in cassette and recorded.token.secret not in cassette
    assert len(json.loads(cassette)["interactions"]) == len(recorded.entries)

    with Gateway(GatewayConfig(mode="replay", cassette_dir=cassettes)) as gw:
        replayed, events, _ = run_cli(cli, gw, second, trial_name, skill=True, placeholders=placeholders(second))
    replayed.check()  # raises ReplayDivergence with every message if anything differed
    assert cli.final_text(events) == FINAL_SKILL
    assert sorted(e["note"] for e in replayed.entries) == sorted(f"cassette turn {n + 1}" for n in range(len(recorded.entries)))
    assert [e["tokens_in"] for e in replayed.entries] == [e["tokens_in"] for e in recorded.entries]
