"""The trajectory parsers of a run (built in, and those plugins contribute), built once, on first use.

Apart from ``plugin.py`` (its hooks, every run) and ``items.py`` (the collectors, only a run that parses
transcripts): both use it, and Tier 3 and trigger runs parse their agents' transcripts with it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the registry imports every harness's parser: built when a transcript is to be parsed
    from pytest_skilleval.trajectory.registry import ParserRegistry

REGISTRY = pytest.StashKey["ParserRegistry"]()


def parser_registry(config: pytest.Config) -> ParserRegistry:
    """The built-in trajectory parsers and those plugins contribute, built once, on first use."""
    registry = config.stash.get(REGISTRY, None)
    if registry is None:
        from pytest_skilleval.trajectory import default_registry

        registry = default_registry()
        for contributed in config.hook.pytest_skilleval_trajectory_parsers(config=config):
            for parser in contributed or ():
                registry.add(parser)
        config.stash[REGISTRY] = registry
    return registry
