"""Keep pytest's end-of-run failure summary linear in the number of items.

For each failure, pytest's terminal reporter looks for that item's teardown output in the list of
every passing setup and teardown report of the run: O(failures x items). Over a 754-skill catalog
(9,800 items, 369 failures) that was 7 million comparisons, about 6 s of a 40 s run. The setup and
teardown of a skill's check item never print anything (a check is pure), so those reports leave the
list before the summary is printed; reports that carry output, and every report of the user's own
tests, stay.
"""

from __future__ import annotations

import pytest

MARKER = "skilleval"


def drop_silent_setup_teardown(config: pytest.Config) -> int:
    """Remove this plugin's passing, output-free setup/teardown reports from the terminal reporter's
    stats; the number removed. Nothing else reads them: they count toward no total."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None)
    if not isinstance(stats, dict) or not stats.get(""):
        return 0
    before = len(stats[""])
    stats[""] = [r for r in stats[""] if not _silent_setup_teardown(r)]
    return before - len(stats[""])


def drop_if_silent(config: pytest.Config, report: pytest.TestReport) -> bool:
    """The same for one report as it arrives, once the terminal has filed it (it is then the last of its
    list): a run over thousands of skills does not keep two reports per item to the end. True if dropped."""
    return _silent_setup_teardown(report) and forget(config, report)


def _silent_setup_teardown(report: object) -> bool:
    return (isinstance(report, pytest.TestReport) and report.when in ("setup", "teardown") and report.passed
            and not report.sections and MARKER in report.keywords)


def forget(config: pytest.Config, report: pytest.TestReport) -> bool:
    """Remove ``report`` from the terminal reporter's stats, once the terminal has filed it (it is then
    the last of its list). True if removed."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for kept in getattr(reporter, "stats", {}).values():
        if isinstance(kept, list) and kept and kept[-1] is report:
            kept.pop()
            return True
    return False
