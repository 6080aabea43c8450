"""The chat model that classifies intra-skill clusters: where it comes from.

The provider layer decides (``--skilleval-provider`` and friends, or exactly one API key in the
environment; docs/providers.md), through :func:`providers.select.chat_from_settings`, the same path
every check item takes. A ``conftest.py`` or plugin may instead install a provider of its own for
Tier 2 with :func:`set_chat_provider` (in ``pytest_configure``); ``None`` there forces
embeddings-only. A misconfiguration (two keys, no choice) surfaces as ProviderError when the first
cluster needs classifying, and the check reports it as an ERROR result.
"""

from __future__ import annotations

import pytest

from pytest_skilleval.config import Settings
from pytest_skilleval.providers import select
from pytest_skilleval.providers.base import ChatProvider

CHAT_PROVIDER = pytest.StashKey[ChatProvider | None]()


def set_chat_provider(config: pytest.Config, provider: ChatProvider | None) -> None:
    """Use ``provider`` for Tier 2 classification in this run (None: embeddings-only)."""
    config.stash[CHAT_PROVIDER] = provider


def resolve(config: pytest.Config, settings: Settings) -> ChatProvider | None:
    if CHAT_PROVIDER in config.stash:
        return config.stash[CHAT_PROVIDER]
    return select.chat_from_settings(settings)
