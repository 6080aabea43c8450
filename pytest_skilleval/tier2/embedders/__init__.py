"""Embedding backends for Tier 2, and the choice between them.

Tier 2 embeds two kinds of text, with different needs:

* **short texts** - one ``name: description`` per skill. Few (one per skill), and where the static
  model ranks pairs least like the transformer (Spearman 0.45 on the corpus), so the default is
  the MiniLM transformer, in its int8 build (``dq8``: ~2x faster, Spearman 0.99 with the float
  reference on the corpus descriptions).
* **chunks** - every paragraph, list item and code block: ~100 per skill, 75k on the corpus. Here
  the default is the static model, ~100x faster; its candidates are verified by the chat model
  (intra-skill) or pooled over a whole body, where it agrees better with the transformer (0.75).

Every score carries the ``model_id`` of the backend that produced it, and the bands are calibrated
per backend (:mod:`pytest_skilleval.tier2.calibration`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pytest_skilleval.providers.base import Embedder


@dataclass(frozen=True)
class EmbedderPair:
    short: Embedder  # names + descriptions
    chunks: Embedder  # chunks of bodies and reference files


@functools.cache
def load_static() -> Embedder:
    from pytest_skilleval.tier2.embedders.static import StaticEmbedder

    return StaticEmbedder()


@functools.cache
def load_minilm() -> Embedder:
    from pytest_skilleval.tier2.embedders.onnx_minilm import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


@functools.cache
def load_minilm_dq8() -> Embedder:
    from pytest_skilleval.tier2.embedders.onnx_minilm import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(build="dq8")


def default_embedder() -> Embedder:
    """The offline embedder the provider layer's ``skilleval_embedder`` fixture falls back to: the
    transformer, since a fixture user embeds a handful of texts and wants the better ranking."""
    return load_minilm()


def select(name: str, remote: Embedder | None = None) -> EmbedderPair:
    """Backends for ``--skilleval-embedder``, or ``remote`` (the provider layer's embeddings endpoint,
    when one is configured) for both kinds. Raises ProviderError when a backend cannot be loaded."""
    if remote is not None:
        return EmbedderPair(remote, remote)
    if name == "static":
        return EmbedderPair(load_static(), load_static())
    if name == "minilm":
        return EmbedderPair(load_minilm(), load_minilm())
    return EmbedderPair(load_minilm_dq8(), load_static())
