"""Fixtures for the real-CLI trials: one scripted gateway per worker, and a private sandbox per trial.

Not a ``conftest.py`` on purpose: the test tree has no packages, so a second ``conftest`` module
would replace ``tests/conftest.py`` in ``sys.modules`` for every ``from conftest import ...``. The
test modules import these fixtures by name instead.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig


def have(program: str) -> bool:
    return shutil.which(program) is not None


@pytest.fixture(scope="module", name="gateway")
def gateway_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    config = GatewayConfig(mode="scripted", log_dir=tmp_path_factory.mktemp("gateway-logs"))
    with Gateway(config) as gw:
        yield gw


@dataclass(frozen=True)
class Sandbox:
    root: Path
    home: Path  # private HOME (and every CLI config dir under it)
    workspace: Path  # the project the agent works in
    tmp: Path  # TMPDIR; deliberately not an ancestor of CODEX_HOME (Codex refuses helpers under TMPDIR)


def make_sandbox(root: Path) -> Sandbox:
    box = Sandbox(root, root / "home", root / "workspace", root / "tmp")
    for folder in (box.home, box.workspace, box.tmp):
        folder.mkdir(parents=True)
    return box


@pytest.fixture(name="sandbox")
def sandbox_fixture(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)
