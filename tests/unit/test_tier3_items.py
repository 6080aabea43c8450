"""Tier 3 items: opt-in collection, ids, markers, attempts and arms; agent adapters and their registry."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import manifest, write_skill

from pytest_skilleval.tier3.agents import AgentContext, AgentRegistry, ClaudeCode, Codex, GeminiCli, OpenCode
from pytest_skilleval.tier3.items import item_name
from pytest_skilleval.tier3.options import staged_arm
from pytest_skilleval.tier3.plugin import marker_name

pytest_plugins = ["pytester"]
EVALS = {"skill_name": "demo-skill", "evals": [
    {"id": "c1", "prompt": "Do the demo", "expected_output": "done", "script": [{"text": "done"}]},
    {"id": "neg-1", "prompt": "Unrelated", "expected_output": "x", "expected_skill": None, "script": [{"text": "x"}]}]}
THIRD_PARTY = '''
import pytest
from pytest_skilleval.tier3.agents.base import Agent

class Toy(Agent):
    name = "toy"
    label = "Toy agent"
    executable = "toy-agent-cli"
    parser = "generic"
    skill_root = ".toy/skills"
    default_model = "toy-1"
    def configure(self, ctx):
        return {}
    def command(self, executable, prompt, ctx):
        return [str(executable), prompt]

@pytest.hookimpl
def pytest_skilleval_agents(config):
    return [Toy()]
'''


@pytest.fixture
def skills(pytester: pytest.Pytester) -> Path:
    write_skill(pytester.path / "skills", "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": json.dumps(EVALS)})
    write_skill(pytester.path / "skills", "no-evals", {"SKILL.md": manifest("no-evals")})
    return pytester.path / "skills"


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--skills", "skills", "--skilleval-checks=schema", "--collect-only", "-q", "-p", "no:cacheprovider", *args)
    return [line for line in result.outlines if "::tier" in line]


def test_tier3_is_opt_in(pytester: pytest.Pytester, skills: Path) -> None:
    assert not [i for i in collected(pytester) if "::tier3::" in i]  # a plain run never starts an agent
    assert not [i for i in collected(pytester, "-m", "tier3") if "::tier3::" in i]
    result = pytester.runpytest("--skills", "skills", "--collect-only")
    assert "skilleval tier3: off (opt in with --skilleval-agents" in result.stdout.str()


def test_ids_per_case_agent_arm_and_attempt(pytester: pytest.Pytester, skills: Path) -> None:
    ids = [i for i in collected(pytester, "--skilleval-agents=claude,codex", "--skilleval-attempts=2") if "::tier3::" in i]
    expected = [f"skills/demo-skill::tier3::{item_name(case, agent, arm, n)}" for case in ("c1", "neg-1") for agent in ("claude-code", "codex")
                for arm in ("with_skill", "without_skill") for n in (1, 2)]
    assert ids == expected and len(set(ids)) == len(ids)
    assert ids[0] == "skills/demo-skill::tier3::c1[claude-code-with_skill-a1]"
    assert not [i for i in ids if "no-evals" in i]  # a skill without eval cases has no trials


def test_markers_select_tiers_and_agents(pytester: pytest.Pytester, skills: Path) -> None:
    both = ("--skilleval-agents=claude-code,codex",)
    assert {i.split("[")[1].split("-")[0] for i in collected(pytester, *both, "-m", "agent_codex")} == {"codex"}
    assert all("::tier3::" in i for i in collected(pytester, *both, "-m", "tier3"))
    assert not [i for i in collected(pytester, *both, "-m", "tier1") if "::tier3::" in i]
    assert len(collected(pytester, *both, "-m", "tier3", "-k", "without_skill")) == 4
    assert marker_name("claude-code") == "agent_claude_code"
    result = pytester.runpytest("--markers")
    assert "@pytest.mark.agent_gemini: Tier 3 trials run with Gemini CLI" in result.stdout.str()


def test_skip_baseline_and_tier3_flag(pytester: pytest.Pytester, skills: Path) -> None:
    ids = collected(pytester, "--skilleval-tier3", "--skilleval-skip-baseline", "-m", "tier3")
    assert ids == ["skills/demo-skill::tier3::c1[claude-code-with_skill-a1]", "skills/demo-skill::tier3::neg-1[claude-code-with_skill-a1]"]


def test_aa_adds_a_second_without_skill_arm(pytester: pytest.Pytester, skills: Path) -> None:
    ids = collected(pytester, "--skilleval-tier3", "--skilleval-aa", "-m", "tier3", "-k", "c1")
    assert ids == [f"skills/demo-skill::tier3::c1[claude-code-{arm}-a1]" for arm in ("with_skill", "without_skill", "without_skill_aa")]
    assert staged_arm("without_skill_aa") == "without_skill" and staged_arm("with_skill") == "with_skill"


def test_usage_errors(pytester: pytest.Pytester, skills: Path) -> None:
    for args, message in ((("--skilleval-agents=cursor",), "unknown agent 'cursor'"), (("--skilleval-tier3", "--skilleval-sandbox=cloud"),
                          "unknown sandbox 'cloud'"), (("--skilleval-attempts=0", "--skilleval-tier3"), "--skilleval-attempts"),
                          (("--skilleval-agent-models=codex", "--skilleval-tier3"), "agent=model"),
                          (("--skilleval-tier3", "--skilleval-aa", "--skilleval-skip-baseline"), "--skilleval-aa"),
                          (("--skilleval-tier3", "--skilleval-judge-votes=0"), "--skilleval-judge-votes")):
        result = pytester.runpytest("--skills", "skills", "--collect-only", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR and message in result.stderr.str(), (args, result.stderr.str())


def test_third_party_agent_through_the_hook(pytester: pytest.Pytester, skills: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # the local behaviour: a missing CLI skips
    pytester.makeconftest(THIRD_PARTY)
    ids = collected(pytester, "--skilleval-agents=toy", "-m", "agent_toy")
    assert ids[0] == "skills/demo-skill::tier3::c1[toy-with_skill-a1]" and len(ids) == 4
    result = pytester.runpytest("--skills", "skills", "--skilleval-agents=toy", "-m", "tier3", "-p", "no:cacheprovider", "-rs")
    # not installed: skipped with the reason (a CI run fails instead; see test_missing_cli_fails_in_ci)
    assert "toy-agent-cli` not found" in result.stdout.str() and result.ret == 0


def test_missing_cli_fails_in_ci(pytester: pytest.Pytester, skills: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(THIRD_PARTY)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("--skills", "skills", "--skilleval-agents=toy", "-m", "tier3", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    assert "CI=true: missing agent tooling is a failure" in result.stdout.str()


# -- adapters --------------------------------------------------------------------------------------
def ctx(tmp_path: Path) -> AgentContext:
    for name in ("home", "ws", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    return AgentContext(home=tmp_path / "home", workspace=tmp_path / "ws", tmp=tmp_path / "tmp", gateway_url="http://127.0.0.1:4321",
                        model=None, max_turns=7)


def test_adapters_write_offline_configs_pointing_at_the_gateway(tmp_path: Path) -> None:
    c = ctx(tmp_path)
    claude = ClaudeCode().configure(c)
    assert claude["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and claude["CLAUDE_CONFIG_DIR"] == str(c.home / ".claude")
    Codex().configure(c)
    toml = tomllib.loads((c.home / ".codex" / "config.toml").read_text())
    assert toml["model_providers"]["skilleval"]["base_url"] == "http://127.0.0.1:4321/v1" and toml["features"]["plugins"] is False
    assert toml["model_providers"]["skilleval"]["wire_api"] == "responses" and toml["analytics"]["enabled"] is False
    oc = OpenCode().configure(c)
    config = json.loads(oc["OPENCODE_CONFIG_CONTENT"])
    assert config["provider"]["skilleval"]["options"]["baseURL"] == "http://127.0.0.1:4321/v1"
    assert oc["NPM_CONFIG_REGISTRY"] == "http://127.0.0.1:4321/npm/" and oc["XDG_CONFIG_HOME"].startswith(str(c.home))
    GeminiCli().configure(c)
    settings = json.loads((c.home / ".gemini" / "settings.json").read_text())
    assert settings["telemetry"]["enabled"] is False and settings["model"]["maxSessionTurns"] == 7


def test_commands_cannot_mistake_a_prompt_for_an_option(tmp_path: Path) -> None:
    c, exe, prompt = ctx(tmp_path), Path("/bin/x"), "--help me"
    for agent in (ClaudeCode(), Codex(), OpenCode()):
        argv = agent.command(exe, prompt, c)
        assert argv[-2:] == ["--", prompt], agent.name
    assert f"--prompt={prompt}" in GeminiCli().command(exe, prompt, c)
    assert ClaudeCode().command(exe, prompt, c)[ClaudeCode().command(exe, prompt, c).index("--max-turns") + 1] == "7"
    assert "gpt-5.5" in Codex().command(exe, prompt, c)


def test_registry_aliases_and_locate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = AgentRegistry([ClaudeCode(), Codex(), OpenCode(), GeminiCli()])
    assert [a.name for a in registry.select("claude,gemini-cli,claude-code")] == ["claude-code", "gemini"]
    assert len(registry.select("all")) == 4
    with pytest.raises(KeyError, match="unknown agent"):
        registry.get("cursor")
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'claude 9.9.9'\n")
    fake.chmod(0o755)
    monkeypatch.delenv("SKILLEVAL_CLAUDE_CODE_PATH", raising=False)
    assert ClaudeCode().locate([tmp_path / "bin"]) == fake  # an npm prefix's .bin, or the folder itself
    assert ClaudeCode().version([tmp_path / "bin"]) == "9.9.9"
    monkeypatch.setenv("SKILLEVAL_CLAUDE_CODE_PATH", str(tmp_path / "nowhere"))
    assert ClaudeCode().locate([tmp_path / "bin"]) is None
    assert "SKILLEVAL_CLAUDE_CODE_PATH" in (ClaudeCode().missing([tmp_path / "bin"]) or "")
