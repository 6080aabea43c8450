"""What one of this plugin's items lets go of once its reports are out.

pytest keeps every item for the whole session (``session.items``), in each xdist worker as in a
plain run, so whatever stays on an item grows with the catalog. Two things did, ~330 KB a skill in a
worker (1.4 GB over a 5,000-skill fuzz catalog):

- the records an item publishes on ``user_properties`` for the controller (a check's result, a
  trial, a trigger run, a selection verdict): pytest copies them into each report, the controller
  and JUnit read them there, and nothing reads them on the item afterwards;
- the ExceptionInfo of each failed phase, which pytest-rerunfailures keeps on the item to decide
  reruns: its traceback's frames hold the loaded skill (its parsed Markdown), the check result and,
  up the stack, every report of the item. Once the item's protocol is over (its reruns included)
  nothing asks for them again;
- in an xdist worker, the reports themselves: the worker's terminal reporter prints nothing, yet
  filed every report (results, failure texts) to the end of the session. Once xdist has sent a
  report to the controller, it leaves those lists (:class:`WorkerReports`).

The user's own tests in the same session are left alone.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_skilleval import state, terminalstats
from pytest_skilleval.published import PUBLISHED
from pytest_skilleval.terminalstats import MARKER

#: Where pytest-rerunfailures keeps each failed phase's ExceptionInfo on the item.
RERUN_EXCINFOS = "_rerun_condition_excinfos"


def after_item(item: pytest.Item) -> None:
    """Called once the item's protocol is over: every report is out, every rerun done."""
    if not state.is_check_item(item) and item.get_closest_marker(MARKER) is None:  # a check item always has it
        return
    item.user_properties[:] = [(k, v) for k, v in item.user_properties if k not in PUBLISHED]
    kept = getattr(item, RERUN_EXCINFOS, None)
    if isinstance(kept, dict):
        kept.clear()


class WorkerReports:
    """Registered in xdist workers only: this plugin's reports leave the worker's terminal stats."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        try:
            return (yield)  # xdist sends the report to the controller in here
        finally:
            if MARKER in report.keywords:
                terminalstats.forget(self.config, report)
