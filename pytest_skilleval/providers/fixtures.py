"""Provider fixtures, registered as a plugin by ``pytest_skilleval.plugin`` at configure time.

- ``skilleval_chat``: the configured :class:`ChatProvider` behind the disk cache, or **None** when no
  provider is configured. None rather than an error, so a test or a tier can degrade honestly
  (skip, or report INCOMPLETE with :data:`~pytest_skilleval.providers.select.NO_CHAT`) instead of
  failing a run that never needed a model. A *misconfiguration* (two keys and no choice, a chosen
  provider without its key) is an error at fixture setup, with the fix in the message.
- ``skilleval_embedder``: the remote embedder behind the cache, or else the offline default embedder
  (None until Tier 2 provides one).
- ``skilleval_provider_cache``: the run's cache, to put a user's own provider behind it:
  ``CachedChat(MyChat(), skilleval_provider_cache)``.

All are session-scoped; override any of them in ``conftest.py`` with a fixture of the same name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import state
from pytest_skilleval.config import Settings
from pytest_skilleval.providers import select
from pytest_skilleval.providers.options import ProviderSettings

if TYPE_CHECKING:  # the models behind these are imported with the first provider a run builds (select.py)
    from pytest_skilleval.providers.base import ChatProvider, Embedder
    from pytest_skilleval.providers.cache import ProviderCache

PROVIDER_SETTINGS = pytest.StashKey[ProviderSettings]()
_RUN_SETTINGS = pytest.StashKey[Settings]()


def pytest_configure(config: pytest.Config) -> None:
    settings = config.stash.get(state.SETTINGS, None) or Settings.from_config(config)  # the run state's, made now or later
    ps = ProviderSettings.from_config(config, settings.cache_dir)
    config.stash[PROVIDER_SETTINGS] = ps
    config.stash[_RUN_SETTINGS] = settings
    # Check items see only ``ctx.settings``; this lets chat_from_settings(ctx.settings) find the options.
    select.register(settings, ps)


def pytest_unconfigure(config: pytest.Config) -> None:
    settings = config.stash.get(_RUN_SETTINGS, None)
    if settings is not None:
        select.unregister(settings)


def pytest_report_header(config: pytest.Config) -> list[str]:
    ps = config.stash.get(PROVIDER_SETTINGS, None)
    return [select.describe(ps)] if ps is not None else []


def provider_settings(config: pytest.Config) -> ProviderSettings:
    return config.stash.get(PROVIDER_SETTINGS, None) or ProviderSettings.from_config(config, Settings.from_config(config).cache_dir)


@pytest.fixture(scope="session")
def skilleval_provider_cache(pytestconfig: pytest.Config) -> ProviderCache:
    return select.provider_cache(provider_settings(pytestconfig))


@pytest.fixture(scope="session")
def skilleval_chat(pytestconfig: pytest.Config) -> ChatProvider | None:
    return select.chat_from_settings(provider_settings(pytestconfig))


@pytest.fixture(scope="session")
def skilleval_embedder(pytestconfig: pytest.Config) -> Embedder | None:
    return select.embedder_from_settings(provider_settings(pytestconfig))
