"""Trigger-mode options, read once into :class:`TriggerSettings` (command line > ini > environment > default).

Opt-in like Tier 3: ``--skilleval-triggers`` collects ``<skill>::triggers::…`` items for the agents
of ``--skilleval-agents`` (default Claude Code).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.config import Option

MODES = ("agent", "model")

OPTIONS = (
    Option("skilleval_triggers", "--skilleval-triggers", "SKILLEVAL_TRIGGERS", False,
           "Run trigger trials: does each agent load the skill for the queries of evals/triggers.json (and not for the others)?",
           "bool"),
    Option("skilleval_trigger_mode", "--skilleval-trigger-mode", "SKILLEVAL_TRIGGER_MODE", "agent",
           "'agent' (the real CLIs; the reference) or 'model' (one chat call per query with each agent's listing: a cheap probe)."),
    Option("skilleval_trigger_runs", "--skilleval-trigger-runs", "SKILLEVAL_TRIGGER_RUNS", 3,
           "Runs per query and agent; a query counts as triggered when at least half its runs trigger.", "int"),
    Option("skilleval_trigger_max_turns", "--skilleval-trigger-max-turns", "SKILLEVAL_TRIGGER_MAX_TURNS", 4,
           "The gateway ends a trigger trial after this many model turns if no skill was loaded and no answer given.", "int"),
    Option("skilleval_trigger_rivals", "--skilleval-trigger-rivals", "SKILLEVAL_TRIGGER_RIVALS", None,
           "A folder of skills (a catalog) installed as rivals beside the skill under test (default: the other collected skills)."),
    Option("skilleval_trigger_rivals_max", "--skilleval-trigger-rivals-max", "SKILLEVAL_TRIGGER_RIVALS_MAX", 20,
           "At most this many rivals, the nearest by description similarity (Tier 2 embedder); 0 = no rivals.", "int"),
    Option("skilleval_triggers_from_cases", "--skilleval-triggers-from-cases", "SKILLEVAL_TRIGGERS_FROM_CASES", False,
           "Eval cases with a routing label (should_trigger / expected skill) are trigger queries too.", "bool"),
    Option("skilleval_block_on_triggers", "--block-on-triggers", "SKILLEVAL_BLOCK_ON_TRIGGERS", None,
           "RECALL,PRECISION (e.g. 0.8,0.9): fail the run when any skill x agent falls below either (default: advisory)."),
)


def add_options(parser: pytest.Parser) -> None:
    config_mod.register(parser, OPTIONS)


@dataclass(frozen=True)
class TriggerSettings:
    enabled: bool = False
    mode: str = "agent"
    runs: int = 3
    max_turns: int = 4
    rivals_dir: Path | None = None
    rivals_max: int = 20
    from_cases: bool = False
    block_recall: float | None = None
    block_precision: float | None = None

    @property
    def blocking(self) -> bool:
        return self.block_recall is not None

    @classmethod
    def from_config(cls, config: pytest.Config) -> TriggerSettings:
        v = {opt.name: config_mod.value(config, opt) for opt in OPTIONS}
        mode = str(v["skilleval_trigger_mode"]).strip().lower()
        if mode not in MODES:
            raise pytest.UsageError(f"--skilleval-trigger-mode: expected one of {', '.join(MODES)}, got {mode!r}")
        runs, turns, rivals_max = int(v["skilleval_trigger_runs"]), int(v["skilleval_trigger_max_turns"]), int(v["skilleval_trigger_rivals_max"])
        if runs < 1 or turns < 1 or rivals_max < 0:
            raise pytest.UsageError("--skilleval-trigger-runs and --skilleval-trigger-max-turns must be >= 1, "
                                    "--skilleval-trigger-rivals-max >= 0")
        recall = precision = None
        if v["skilleval_block_on_triggers"]:
            recall, precision = parse_thresholds(str(v["skilleval_block_on_triggers"]))
        rivals = v["skilleval_trigger_rivals"]
        rivals_dir = (config.invocation_params.dir / str(rivals)).resolve() if rivals else None
        if rivals_dir is not None and not rivals_dir.is_dir():
            raise pytest.UsageError(f"--skilleval-trigger-rivals: {rivals_dir} is not a folder")
        return cls(enabled=bool(v["skilleval_triggers"]) or mode == "model",  # asking for the probe is asking for trigger items
                   mode=mode, runs=runs, max_turns=turns, rivals_dir=rivals_dir, rivals_max=rivals_max,
                   from_cases=bool(v["skilleval_triggers_from_cases"]), block_recall=recall, block_precision=precision)


def parse_thresholds(spec: str) -> tuple[float, float]:
    """``"0.8,0.9"`` → (recall, precision); percentages (``80,90``) are accepted too."""
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) != 2:
        raise pytest.UsageError(f"--block-on-triggers: expected RECALL,PRECISION (e.g. 0.8,0.9), got {spec!r}")
    out = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise pytest.UsageError(f"--block-on-triggers: {part!r} is not a number") from None
        value = value / 100 if value > 1 else value
        if not 0 <= value <= 1:
            raise pytest.UsageError(f"--block-on-triggers: {part!r} is not between 0 and 1 (or 0 and 100)")
        out.append(value)
    return out[0], out[1]
