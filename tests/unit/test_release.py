"""release.py names the records items publish without importing the modules that publish them."""

from __future__ import annotations

from pytest_skilleval import release
from pytest_skilleval.collect import RESULT_PROPERTY
from pytest_skilleval.selection.report import SELECTION_PROPERTY
from pytest_skilleval.tier3.record import TRIAL_PROPERTY
from pytest_skilleval.triggers.record import TRIGGER_PROPERTY


def test_every_published_record_is_released() -> None:
    assert release.PUBLISHED == {RESULT_PROPERTY, TRIAL_PROPERTY, TRIGGER_PROPERTY, SELECTION_PROPERTY}
