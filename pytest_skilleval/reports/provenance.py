"""Where a run's numbers came from: the plugin's version and commit, Python and NumPy (results.json's
``tool`` and the card's metadata), so a card can be reproduced or told apart from another build's."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from pytest_skilleval import __version__

GIT_TIMEOUT_S = 5.0


def tool_info() -> dict[str, str]:
    return {"name": "pytest-skilleval", "version": __version__, "commit": plugin_commit() or "unknown",
            "python": platform.python_version(), "numpy": _numpy_version()}


def _numpy_version() -> str:
    """NumPy's version without importing it (~70 ms) when the run did not: its installed metadata."""
    loaded = sys.modules.get("numpy")
    if loaded is not None:
        return str(loaded.__version__)
    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=1)
def plugin_commit() -> str | None:
    """The commit the plugin was installed from (pip's direct_url.json for a VCS install), else the
    commit of the git checkout it runs from (an editable install), with ``-dirty`` for local changes."""
    try:
        direct = metadata.distribution("pytest-skilleval").read_text("direct_url.json")
        commit = json.loads(direct).get("vcs_info", {}).get("commit_id") if direct else None
        if commit:
            return str(commit)
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        pass
    source = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no", "--", "."],
                               capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
