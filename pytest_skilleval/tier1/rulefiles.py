"""The packaged rule files (``rules/*.yaml``), read with libyaml when PyYAML has it.

A Tier 1 run reads five of them at start-up: ~65 ms of CPU with PyYAML's pure-Python loader, ~9 ms
with libyaml's. Both are safe loaders with the same YAML 1.1 resolver (tests/unit/test_rulefiles.py
compares their data for every packaged file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(source: Path | bytes) -> Any:
    """A rule file's data, from its path or from its bytes (when they are hashed too)."""
    raw = source.read_bytes() if isinstance(source, Path) else source
    return yaml.load(raw, Loader=_LOADER)  # noqa: S506 - a safe loader, C or Python
