"""Per-process Tier 2 state: the embedders (behind the disk cache), the chat model, the catalog index.

Built lazily, on the first Tier 2 item a process runs, so a run that deselects Tier 2 never loads
a model. Under xdist every worker has its own engine; the embedding cache on disk is what they
share, so each text is embedded once per run (and never again while it is unchanged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import state
from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.providers.fixtures import provider_settings
from pytest_skilleval.tier2.options import Tier2Settings

if TYPE_CHECKING:  # imported where used: every run registers the Tier 2 checks, few run them (numpy, models)
    from pytest_skilleval.tier2 import embedders
    from pytest_skilleval.tier2.inter import CatalogIndex


class EmbeddingsOff(Exception):
    """The user turned embeddings off: Tier 2 items are skipped, saying so."""


class Tier2Engine:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.settings = Tier2Settings.from_config(config)
        self._pair: embedders.EmbedderPair | None = None
        self._index: CatalogIndex | None = None
        self._positions: dict[str, int] = {}

    @property
    def run(self) -> state.RunState:
        return state.run_state(self.config)

    def embedders(self) -> embedders.EmbedderPair:
        """The selected backends behind the Tier 2 cache. Raises ProviderError when one cannot load,
        EmbeddingsOff when the user turned embeddings off (``--skilleval-embedding-provider=none``)."""
        if self._pair is None:
            from pytest_skilleval.providers import select
            from pytest_skilleval.tier2 import embedders
            from pytest_skilleval.tier2.cache import CachedEmbedder, EmbeddingCache

            ps = provider_settings(self.config)
            target = select.embedding_target(ps)
            if target is None:
                raise EmbeddingsOff("embeddings are turned off (--skilleval-embedding-provider=none)")
            # built directly (not select.embedder_from_settings: its memo lock deadlocks); the Tier 2 cache wraps it
            remote = select.build_embedder(target, ps) if isinstance(target, select.Target) else None
            raw = embedders.select(self.settings.embedder, remote)
            cache_dir = self.run.settings.cache_dir if ps.cache != "off" else None
            wrapped: dict[str, CachedEmbedder] = {}
            for inner in (raw.short, raw.chunks):
                if inner.model_id not in wrapped:
                    store = EmbeddingCache(cache_dir, inner.model_id, read_only=ps.cache == "read") if cache_dir else None
                    wrapped[inner.model_id] = CachedEmbedder(inner, store)
            self._pair = embedders.EmbedderPair(wrapped[raw.short.model_id], wrapped[raw.chunks.model_id])
        return self._pair

    def chat(self) -> ChatProvider | None:
        from pytest_skilleval.tier2 import chat as chat_mod

        return chat_mod.resolve(self.config, provider_settings(self.config))

    def index(self) -> CatalogIndex:
        """Every collected skill (and the reference catalog), embedded once for this process."""
        if self._index is None:
            from pytest_skilleval.tier2.inter import CatalogIndex, SkillText, discover

            run = self.run
            # not kept in the run state: the index needs a few texts of every skill, not every skill loaded
            # nor every skill at once: each is loaded for its texts and let go
            texts = [SkillText.of(run.skill_for_batch(root)) for root in run.skill_roots()]
            roots = {root.resolve() for root in run.skill_roots()}
            reference = discover(self.settings.compare_to, run.limits, roots) if self.settings.compare_to else []
            self._positions = {t.key: i for i, t in enumerate(texts)}
            workerinput = getattr(self.config, "workerinput", None) or {}
            worker = (int(str(workerinput.get("workerid", "gw0")).lstrip("gw") or 0), int(workerinput.get("workercount", 1)))
            self._index = CatalogIndex(texts, [SkillText.of(s, "reference") for s in reference], self.embedders(), worker=worker)
        return self._index

    def position(self, key: str) -> int | None:
        self.index()
        return self._positions.get(key)


ENGINE = pytest.StashKey[Tier2Engine]()


def engine(config: pytest.Config) -> Tier2Engine:
    if ENGINE not in config.stash:
        config.stash[ENGINE] = Tier2Engine(config)
    return config.stash[ENGINE]
