"""The ``harbor`` sandbox backend (backend.py): trials run as Harbor jobs, one per arm."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.tier3.sandboxes.container import docker_sandbox
from pytest_skilleval.tier3.sandboxes.harbor.backend import HarborSandbox
from pytest_skilleval.tier3.sandboxes.options import HARBOR_OPTIONS

__all__ = ["HarborSandbox", "harbor_sandbox"]


def harbor_sandbox(config: pytest.Config) -> HarborSandbox:
    """The backend as this process's configuration asks for it (called from ``pytest_skilleval_sandboxes``)."""
    values = {opt.name: config_mod.value(config, opt) for opt in HARBOR_OPTIONS}
    harbor = str(values["skilleval_harbor"])
    path = Path(harbor) if os.path.isabs(harbor) else config.rootpath / harbor
    executable = str(path) if path.exists() else (shutil.which("harbor") or str(path))
    return HarborSandbox(harbor=executable, environment=str(values["skilleval_harbor_env"]).strip(),
                         concurrency=int(values["skilleval_harbor_concurrency"]), retries=int(values["skilleval_harbor_retries"]),
                         docker=docker_sandbox(config))
