"""The test tree has no packages (pytest's default "prepend" import mode), so two test modules with the
same file name in different folders make collection fail with "import file mismatch"."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_test_module_names_are_unique_across_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name != "conftest.py")
    assert sorted(n for n, c in names.items() if c > 1) == []
