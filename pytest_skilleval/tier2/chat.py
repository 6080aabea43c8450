"""The chat model that classifies intra-skill clusters: where it comes from.

The provider layer decides (``--skilleval-provider`` and friends, or exactly one API key in the
environment; docs/providers.md), through :mod:`providers.select`, the same path
every check item takes (cached by the provider layer's cache). A ``conftest.py`` or plugin may instead install a provider of its own for
Tier 2 with :func:`set_chat_provider` (in ``pytest_configure``); ``None`` there forces
embeddings-only. Two provider keys and no choice make the labels optional, not an error: dedup runs
embeddings-only and its note names the option that settles it; any other misconfiguration surfaces
as ProviderError when the first cluster needs classifying, and the check reports it as an ERROR.
"""

from __future__ import annotations

import pytest

from pytest_skilleval.providers import select
from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.providers.cache import CachedChat
from pytest_skilleval.providers.options import ProviderSettings

CHAT_PROVIDER = pytest.StashKey[ChatProvider | None]()


def set_chat_provider(config: pytest.Config, provider: ChatProvider | None) -> None:
    """Use ``provider`` for Tier 2 classification in this run (None: embeddings-only)."""
    config.stash[CHAT_PROVIDER] = provider


def resolve(config: pytest.Config, ps: ProviderSettings) -> ChatProvider | None:
    """The provider for this run, built once. Assembled from the provider layer's parts rather than
    through ``select.chat_from_settings``, whose memo lock is not re-entrant (it deadlocks when it
    builds the cache it wraps the provider in)."""
    if CHAT_PROVIDER not in config.stash:
        target = select.chat_target(ps)
        config.stash[CHAT_PROVIDER] = None if target is None else CachedChat(select.build_chat(target, ps), select.provider_cache(ps))
    return config.stash[CHAT_PROVIDER]
