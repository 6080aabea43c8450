"""Sandbox backends and their registry.

Built in: ``local`` (bubblewrap, local.py), ``docker`` (container.py) and ``harbor`` (harbor/). Other backends plug in
through the ``pytest_skilleval_sandboxes`` hook and are chosen with ``--skilleval-sandbox NAME``::

    @pytest.hookimpl
    def pytest_skilleval_sandboxes(config):
        return [DockerSandbox()]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import lazyexports

if TYPE_CHECKING:
    from pytest_skilleval.tier3.sandboxes.base import RunResult, RunSpec, Sandbox, SandboxUnavailable
    from pytest_skilleval.tier3.sandboxes.container import DockerSandbox
    from pytest_skilleval.tier3.sandboxes.local import LocalSandbox

__all__ = ["DockerSandbox", "LocalSandbox", "RunResult", "RunSpec", "Sandbox", "SandboxRegistry", "SandboxUnavailable"]

#: Imported on first use: every pytest run reads this package's ``options`` module (its flags), and the
#: backends behind these names (images, bubblewrap, containers) are a trial run's business.
__getattr__ = lazyexports.exports(__name__, {**dict.fromkeys(("RunResult", "RunSpec", "Sandbox", "SandboxUnavailable"), "base"),
                                             "DockerSandbox": "container", "LocalSandbox": "local"})


class SandboxRegistry:
    def __init__(self, sandboxes: Iterable[Sandbox] = ()) -> None:
        self._by_name: dict[str, Sandbox] = {}
        for sandbox in sandboxes:
            self.add(sandbox)

    def add(self, sandbox: Sandbox) -> None:
        have = self._by_name.get(sandbox.name)
        if have is not None and type(have) is not type(sandbox):
            raise ValueError(f"two sandboxes are named {sandbox.name!r}: {type(have).__qualname__} and {type(sandbox).__qualname__}")
        self._by_name.setdefault(sandbox.name, sandbox)

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str) -> Sandbox:
        if name not in self._by_name:
            raise KeyError(f"unknown sandbox {name!r} (known: {', '.join(self._by_name)})")
        return self._by_name[name]


@pytest.hookimpl
def pytest_skilleval_sandboxes(config: pytest.Config) -> list[Sandbox]:
    from pytest_skilleval.tier3.sandboxes.container import docker_sandbox
    from pytest_skilleval.tier3.sandboxes.harbor import harbor_sandbox
    from pytest_skilleval.tier3.sandboxes.local import LocalSandbox

    return [LocalSandbox(), docker_sandbox(config), harbor_sandbox(config)]
