"""Gateway fixtures, registered as a plugin by ``pytest_skilleval.plugin`` at configure time.

- ``skilleval_gateway_config`` (session): the :class:`GatewayConfig` from options/ini/env.
- ``skilleval_gateway`` (session, so one per xdist worker): a started :class:`Gateway`.
- ``skilleval_gateway_trial`` (function): opens trials named after the test; closes (revokes)
  them at teardown.

Override any of them in ``conftest.py`` with a fixture of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilleval.gateway.options import GATEWAY_OPTIONS, config_from_pytest, read_options

# Registered in every run: the server is imported by the fixture that starts it.
if TYPE_CHECKING:
    from pytest_skilleval.gateway.config import GatewayConfig
    from pytest_skilleval.gateway.server import Gateway
    from pytest_skilleval.gateway.trial import Trial


def pytest_configure(config: pytest.Config) -> None:
    """The gateway options are checked here, once: a bad value ends the run before collection (exit 4)."""
    config.stash[GATEWAY_OPTIONS] = read_options(config)


@pytest.fixture(scope="session")
def skilleval_gateway_config(pytestconfig: pytest.Config) -> GatewayConfig:
    return config_from_pytest(pytestconfig)


@pytest.fixture(scope="session")
def skilleval_gateway(skilleval_gateway_config: GatewayConfig) -> Iterator[Gateway]:
    from pytest_skilleval.gateway.server import Gateway

    with Gateway(skilleval_gateway_config) as gateway:
        yield gateway


@pytest.fixture
def skilleval_gateway_trial(skilleval_gateway: Gateway, request: pytest.FixtureRequest) -> Iterator[Callable[..., Trial]]:
    """``open(script=..., name=None, **kw)`` → a live trial (default name: the test's node id)."""
    opened: list[Trial] = []

    def open_trial(name: str | None = None, **kwargs: Any) -> Trial:
        trial = skilleval_gateway.open_trial(name or request.node.nodeid, **kwargs)
        opened.append(trial)
        return trial

    yield open_trial
    for trial in opened:
        skilleval_gateway.close_trial(trial)
