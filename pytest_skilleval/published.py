"""The names under which this plugin's items publish records on ``user_properties``, for the
controller's report session (``reports/session.py``), JUnit and ``release.py``.

Kept apart from the models they name (``collect.py``'s check results, Tier 3's trial records,
trigger records, selection records), which re-export them: the report session compares every report's
properties with these names, and a run with no such record must not import those models to do it.
"""

from __future__ import annotations

#: A check's result envelope (JSON), published by ``collect.CheckItem``.
RESULT_PROPERTY = "skilleval.result"
#: A Tier 3 trial's record (``tier3/record.py``).
TRIAL_PROPERTY = "skilleval.trial"
#: A trigger trial's record (``triggers/record.py``).
TRIGGER_PROPERTY = "skilleval.trigger"
#: A skill-selection verdict (``selection/report.py``).
SELECTION_PROPERTY = "skilleval.selection"
#: Every record an item publishes for the controller.
PUBLISHED = frozenset({RESULT_PROPERTY, TRIAL_PROPERTY, TRIGGER_PROPERTY, SELECTION_PROPERTY})
