"""Every packaged rule file reads the same through libyaml as through PyYAML's own safe loader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_skilleval.tier1 import rulefiles

RULES = sorted((Path(rulefiles.__file__).parent / "rules").rglob("*.yaml"))


def test_libyaml_is_there() -> None:
    assert rulefiles._LOADER is yaml.CSafeLoader, "PyYAML was built without libyaml: every run starts ~55 ms slower"


@pytest.mark.parametrize("path", RULES, ids=[p.name for p in RULES])
def test_the_same_data_as_the_pure_python_loader(path: Path) -> None:
    assert rulefiles.load(path) == yaml.safe_load(path.read_text(encoding="utf-8"))
