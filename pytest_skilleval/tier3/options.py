"""Tier 3 options, read once into :class:`Tier3Settings` (command line > ini > environment > default).

Tier 3 is opt-in: a plain ``pytest --skills x`` never starts an agent. ``--skilleval-agents=…``
(or ``--skilleval-tier3`` for the default agent) turns it on; only then are trial items collected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.config import Option

DEFAULT_AGENT = "claude-code"
ARMS = ("with_skill", "without_skill")
#: --skilleval-aa: a second without_skill arm, staged and graded exactly like it; only the label differs.
AA_ARM = "without_skill_aa"
#: Where ``make agents`` installs the CLIs (relative to the rootdir); ``SKILLEVAL_AGENTS_DIR`` overrides.
DEFAULT_AGENTS_DIR = Path(".cache") / "agents"


def staged_arm(arm: str) -> str:
    """The arm a trial is staged and graded as: the A/A repeat is a without_skill trial in every respect."""
    return "without_skill" if arm == AA_ARM else arm

OPTIONS = (
    Option("skilleval_agents", "--skilleval-agents", "SKILLEVAL_AGENTS", None,
           "Run Tier 3 with these agent CLIs: a comma list of claude-code, codex, opencode, gemini (or 'all'). Turns Tier 3 on."),
    Option("skilleval_tier3", "--skilleval-tier3", "SKILLEVAL_TIER3", False,
           f"Turn Tier 3 on with the default agent ({DEFAULT_AGENT}) unless --skilleval-agents names others.", "bool"),
    Option("skilleval_attempts", "--skilleval-attempts", "SKILLEVAL_ATTEMPTS", 1,
           "Trials per case, arm and agent (items a1..aN); reports pass@k (unbiased) and pass^k.", "int"),
    Option("skilleval_skip_baseline", "--skilleval-skip-baseline", "SKILLEVAL_SKIP_BASELINE", False,
           "Run only the with_skill arm (no without_skill baseline, so no Skill Lift).", "bool"),
    Option("skilleval_sandbox", "--skilleval-sandbox", "SKILLEVAL_SANDBOX", "local",
           "Sandbox backend for agent trials: 'local' (bubblewrap), 'docker' (a container per trial), 'harbor', or a plugin's."),
    Option("skilleval_allow_unsandboxed", "--skilleval-allow-unsandboxed", "SKILLEVAL_ALLOW_UNSANDBOXED", False,
           "Run trials as plain subprocesses when the sandbox cannot confine them (no bubblewrap); reports say so.", "bool"),
    Option("skilleval_block_on_agent_eval", "--block-on-agent-eval", "SKILLEVAL_BLOCK_ON_AGENT_EVAL", False,
           "Make Tier 3 blocking: a FAIL verdict fails the run's exit status (default: advisory).", "bool"),
    Option("skilleval_trial_timeout", "--skilleval-trial-timeout", "SKILLEVAL_TRIAL_TIMEOUT", 300.0,
           "Seconds one agent run may take; then its whole process tree is killed.", "float"),
    Option("skilleval_max_turns", "--skilleval-max-turns", "SKILLEVAL_MAX_TURNS", 25,
           "Turn limit passed to the CLIs that have one (Claude Code --max-turns, Gemini maxSessionTurns).", "int"),
    Option("skilleval_infra_retries", "--skilleval-infra-retries", "SKILLEVAL_INFRA_RETRIES", 1,
           "Run a trial again (up to N times) when it ERRORed for an infrastructure cause (outage, crashed sandbox, the agent's "
           "API error), before it is recorded; never counted as an attempt or a rerun.", "int"),
    Option("skilleval_reuse_baseline", "--skilleval-reuse-baseline", "SKILLEVAL_REUSE_BASELINE", False,
           "Reuse stored without_skill trial records whose case (inputs included), agent and version, model, gateway mode, "
           "sandbox and attempt are unchanged, instead of running them again; cards name the reused records.", "bool"),
    Option("skilleval_dry_run", "--skilleval-dry-run", "SKILLEVAL_DRY_RUN", False,
           "Print the Tier 3 plan (trials per agent, arm and attempt) and its estimated tokens and cost, then stop.", "bool"),
    Option("skilleval_agent_models", "--skilleval-agent-models", "SKILLEVAL_AGENT_MODELS", "",
           "Models per agent for proxy/record runs, 'agent=model,...' (default: each adapter's)."),
    Option("skilleval_judge_votes", "--skilleval-judge-votes", "SKILLEVAL_JUDGE_VOTES", 1,
           "Independent judge calls per trial (3 is Claude Code's plugin eval); each dimension the median, agreement reported.", "int"),
    Option("skilleval_aa", "--skilleval-aa", "SKILLEVAL_AA", False,
           "Run the without_skill arm twice (a third arm, without_skill_aa) and report the lift between the two: the A/A noise floor.",
           "bool"),
    Option("skilleval_agents_dir", "--skilleval-agents-dir", "SKILLEVAL_AGENTS_DIR", str(DEFAULT_AGENTS_DIR),
           "npm prefix holding the agent CLIs (node_modules/.bin), relative to rootdir; PATH is searched after it."),
)


def add_options(parser: pytest.Parser) -> None:
    from pytest_skilleval.tier3.sandboxes.options import OPTIONS as SANDBOX_OPTIONS

    config_mod.register(parser, OPTIONS + SANDBOX_OPTIONS)


@dataclass(frozen=True)
class Tier3Settings:
    enabled: bool = False
    agents: tuple[str, ...] = (DEFAULT_AGENT,)
    attempts: int = 1
    arms: tuple[str, ...] = ARMS
    sandbox: str = "local"
    allow_unsandboxed: bool = False
    block: bool = False
    timeout_s: float = 300.0
    max_turns: int = 25
    infra_retries: int = 1
    reuse_baseline: bool = False
    dry_run: bool = False
    store_dir: Path | None = None  # <--skilleval-cache-dir>/tier3: baselines and usage history (tier3/store.py)
    models: dict[str, str] = field(default_factory=dict)
    agents_dirs: tuple[Path, ...] = ()
    gateway_mode: str = "scripted"
    reruns: int = 0  # pytest-rerunfailures' --reruns, for pass@(R+1)
    judge_votes: int = 1
    aa: bool = False  # --skilleval-aa: the without_skill arm a second time (the A/A noise floor)

    @property
    def scripted(self) -> bool:
        return self.gateway_mode == "scripted"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Tier3Settings:
        values = {opt.name: config_mod.value(config, opt) for opt in OPTIONS}
        agents_spec = values["skilleval_agents"]
        enabled = bool(agents_spec) or bool(values["skilleval_tier3"])
        agents = tuple(a.strip() for a in str(agents_spec or DEFAULT_AGENT).split(",") if a.strip())
        attempts, turns, timeout = values["skilleval_attempts"], values["skilleval_max_turns"], values["skilleval_trial_timeout"]
        if attempts < 1 or turns < 1 or not timeout > 0 or values["skilleval_infra_retries"] < 0 or values["skilleval_judge_votes"] < 1:
            raise pytest.UsageError("--skilleval-attempts, --skilleval-max-turns and --skilleval-judge-votes must be >= 1, "
                                    "--skilleval-trial-timeout positive, --skilleval-infra-retries >= 0")
        models: dict[str, str] = {}
        for pair in filter(None, (p.strip() for p in str(values["skilleval_agent_models"] or "").split(","))):
            agent, sep, model = pair.partition("=")
            if not sep or not agent.strip() or not model.strip():
                raise pytest.UsageError(f"--skilleval-agent-models: expected 'agent=model', got {pair!r}")
            models[agent.strip()] = model.strip()
        # The gateway's own option decides the mode; read it the same way (flag > ini > env).
        gateway = str(config.getoption("skilleval_gateway", None) or config.getini("skilleval_gateway")
                      or os.environ.get("SKILLEVAL_GATEWAY") or "scripted").strip().lower()
        cache = config_mod.value(config, next(o for o in config_mod.OPTIONS if o.name == "skilleval_cache_dir"))
        agents_dir = Path(str(values["skilleval_agents_dir"]))
        dirs = (agents_dir if agents_dir.is_absolute() else config.rootpath / agents_dir,)
        return cls(enabled=enabled, agents=agents, attempts=int(attempts),
                   arms=_arms(bool(values["skilleval_skip_baseline"]), bool(values["skilleval_aa"])),
                   sandbox=str(values["skilleval_sandbox"]).strip(),
                   allow_unsandboxed=bool(values["skilleval_allow_unsandboxed"]), block=bool(values["skilleval_block_on_agent_eval"]),
                   timeout_s=float(timeout), max_turns=int(turns), infra_retries=int(values["skilleval_infra_retries"]),
                   reuse_baseline=bool(values["skilleval_reuse_baseline"]), dry_run=bool(values["skilleval_dry_run"]),
                   store_dir=config.rootpath / str(cache) / "tier3" if cache else None, models=models, agents_dirs=dirs, gateway_mode=gateway,
                   reruns=int(config.getoption("reruns", None) or 0), judge_votes=int(values["skilleval_judge_votes"]),
                   aa=bool(values["skilleval_aa"]))


def _arms(skip_baseline: bool, aa: bool) -> tuple[str, ...]:
    if skip_baseline and aa:
        raise pytest.UsageError("--skilleval-aa repeats the without_skill arm; it cannot go with --skilleval-skip-baseline")
    return ARMS[:1] if skip_baseline else (*ARMS, AA_ARM) if aa else ARMS
