"""`.ci/venv-install` (what `make venv` and `make harbor` install with): uv under pip's configuration.

uv reads none of pip's configuration; a machine whose pip is pointed at a mirror, a find-links folder
or constraints must get packages from there, not from wherever uv would look by itself. A local
find-links folder with no index stands for such a configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "venv-install"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A find-links folder holding uv (as the script pins it) and one small package, from the registry."""
    folder = tmp_path_factory.mktemp("wheels")
    pin = next(line.split('"')[1] for line in SCRIPT.read_text().splitlines() if line.startswith("UV = "))
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(folder),
                    pin, "six==1.17.0"], check=True)
    return folder


def install(tmp_path: Path, wheels: Path, *packages: str, **pip_env: str) -> subprocess.CompletedProcess[str]:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    # pip's configuration: this folder only, no index (PIP_CONFIG_FILE=os.devnull: no machine-wide pip.conf)
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels), PIP_DISABLE_PIP_VERSION_CHECK="1", **pip_env)
    return subprocess.run([sys.executable, str(SCRIPT), str(venv), *packages], env=env, capture_output=True, text=True, timeout=300)


def test_uv_installs_from_pips_find_links(tmp_path: Path, wheels: Path) -> None:
    done = install(tmp_path, wheels, "six==1.17.0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installing with pip" not in done.stdout, done.stdout  # uv did it, with pip's find-links and no index
    assert (tmp_path / "venv" / "bin" / "uv").exists()
    listed = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", "import six; print(six.__version__)"],
                            capture_output=True, text=True, check=True)
    assert listed.stdout.strip() == "1.17.0"


def test_a_package_pips_configuration_cannot_reach_is_not_fetched_elsewhere(tmp_path: Path, wheels: Path) -> None:
    """idna is on PyPI but not in the folder: with no index configured, neither uv nor pip may fetch it."""
    done = install(tmp_path, wheels, "idna")
    assert done.returncode != 0, done.stdout + done.stderr
    assert not list((tmp_path / "venv").glob("lib/python*/site-packages/idna"))


def test_an_option_uv_cannot_take_makes_pip_install(tmp_path: Path, wheels: Path) -> None:
    done = install(tmp_path, wheels, "six==1.17.0", PIP_PRE="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "'pre', which uv has no option for: installing with pip" in done.stdout
    assert not (tmp_path / "venv" / "bin" / "uv").exists()
