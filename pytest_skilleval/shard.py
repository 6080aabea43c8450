"""``--skilleval-shard K/N``: run one share of the skills, for a CI matrix of N jobs.

Every job still *collects* every skill folder (collection only looks at folder names), so each
knows the whole catalog: Tier 2 similarity compares a skill with every other skill exactly as a
single run does. Then the items of skills outside this share are deselected. Shares are dealt
round-robin over the skills' report keys in sorted order — deterministic, balanced to within one
skill, and the same on every job of the matrix. ``skilleval merge`` joins the jobs' report dirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.config import Option

if TYPE_CHECKING:
    from pytest_skilleval.collect import SkillDirectory

OPTIONS = (
    Option("skilleval_shard", "--skilleval-shard", "SKILLEVAL_SHARD", None,
           "K/N: run only the K-th of N shares of the skills (1-based; round-robin over sorted skill keys); "
           "join the jobs' report dirs with `skilleval merge`."),
)
SHARD = pytest.StashKey[tuple[int, int] | None]()


def add_options(parser: pytest.Parser) -> None:
    config_mod.register(parser, OPTIONS)


def parse(text: str | None) -> tuple[int, int] | None:
    if text in (None, ""):
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise pytest.UsageError(f"--skilleval-shard: expected K/N with 1 <= K <= N, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def configure(config: pytest.Config) -> None:
    config.stash[SHARD] = parse(config_mod.value(config, OPTIONS[0]))


def current(config: pytest.Config) -> tuple[int, int] | None:
    return config.stash.get(SHARD, None)


def share(keys: list[str], k: int, n: int) -> set[str]:
    """The keys of share ``k`` of ``n``: every n-th key of the sorted list, starting at the k-th."""
    return set(sorted(set(keys))[k - 1::n])


def _skill_node(item: pytest.Item) -> SkillDirectory | None:
    from pytest_skilleval.collect import SkillDirectory  # here: options and configure run in every pytest run

    return next((node for node in item.listchain() if isinstance(node, SkillDirectory)), None)


def deselect(config: pytest.Config, items: list[pytest.Item], key_of: Callable[[Path], str]) -> None:
    """Drop (and report as deselected) the items of skills outside this shard; items that belong to
    no skill (ordinary tests, trajectory items) stay."""
    shard = current(config)
    if shard is None:
        return
    owners = {item: (node.path if (node := _skill_node(item)) is not None else None) for item in items}
    mine = share([key_of(p) for p in owners.values() if p is not None], *shard)
    keep = [i for i in items if owners[i] is None or key_of(owners[i]) in mine]  # type: ignore[arg-type]
    kept = set(keep)
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
