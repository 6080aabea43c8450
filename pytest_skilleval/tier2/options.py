"""Tier 2 options, read once into :class:`Tier2Settings` (command line > ini > environment > default)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod

EMBEDDERS = ("default", "static", "minilm")
FLAGS: tuple[tuple[str, str, str | None, str], ...] = (
    ("skilleval_embedder", "--skilleval-embedder", "SKILLEVAL_EMBEDDER",
     "Offline Tier 2 embeddings: 'default' (MiniLM transformer for descriptions, the shipped static model for chunks), "
     "'static' (static model only: fastest), 'minilm' (transformer only: best, slow on big catalogs). A remote "
     "endpoint chosen with --skilleval-embedding-provider replaces both."),
    ("skilleval_compare_to", "--skilleval-compare-to", "SKILLEVAL_COMPARE_TO",
     "A folder of existing skills (a reference catalog) each collected skill is also compared against."),
    ("skilleval_similarity_threshold", "--skilleval-similarity-threshold", "SKILLEVAL_SIMILARITY_THRESHOLD",
     "Lowest cross-skill similarity shown as a finding (default 0.75). It filters what is shown; the bands stay fixed."),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("skilleval")
    for dest, flag, _env, help_text in FLAGS:
        group.addoption(flag, action="store", default=None, dest=dest, metavar="VALUE", help=help_text)
        parser.addini(dest, help_text, type="string", default=None)
    group.addoption("--no-block-on-dedup", action="store_true", default=None, dest="skilleval_no_block_on_dedup",
                    help="Tier 2 findings are reported but advisory: they never fail the run.")
    parser.addini("skilleval_no_block_on_dedup", "Make Tier 2 advisory (see --no-block-on-dedup).", type="bool", default=None)


def _value(config: pytest.Config, dest: str, env: str | None) -> str | None:
    cli = config.getoption(dest, default=None)
    if cli not in (None, ""):
        return str(cli)
    ini = config.getini(dest)
    if ini not in (None, "", []):
        return str(ini)
    return os.environ.get(env) or None if env else None


@dataclass(frozen=True)
class Tier2Settings:
    embedder: str = "default"
    compare_to: Path | None = None
    show_threshold: float = 0.75
    block: bool = True

    @classmethod
    def from_config(cls, config: pytest.Config) -> Tier2Settings:
        envs = {dest: env for dest, _flag, env, _h in FLAGS}
        embedder = (_value(config, "skilleval_embedder", envs["skilleval_embedder"]) or "default").strip().lower()
        if embedder not in EMBEDDERS:
            raise pytest.UsageError(f"--skilleval-embedder: unknown embedder {embedder!r} (expected one of: {', '.join(EMBEDDERS)})")
        raw = _value(config, "skilleval_similarity_threshold", envs["skilleval_similarity_threshold"])
        try:
            threshold = 0.75 if raw is None else float(raw)
        except ValueError:
            raise pytest.UsageError(f"--skilleval-similarity-threshold: expected a number, got {raw!r}") from None
        if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
            raise pytest.UsageError("--skilleval-similarity-threshold must be between 0 and 1")
        compare = _value(config, "skilleval_compare_to", envs["skilleval_compare_to"])
        compare_path = (config.invocation_params.dir / compare).resolve() if compare else None
        if compare_path is not None and not compare_path.is_dir():
            raise pytest.UsageError(f"--skilleval-compare-to: {compare_path} is not a folder")
        no_block = config.getoption("skilleval_no_block_on_dedup", default=None)
        if no_block is None:
            no_block = config_mod.ini_value(config, "skilleval_no_block_on_dedup")
        if no_block is None:
            env = "SKILLEVAL_NO_BLOCK_ON_DEDUP"
            no_block = config_mod.parse_bool(os.environ.get(env, ""), f"environment variable {env}")
        return cls(embedder=embedder, compare_to=compare_path, show_threshold=threshold, block=not no_block)
