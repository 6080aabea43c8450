"""At the session's end the report session reads each published check result (collect.py's envelope:
``json.dumps(..., sort_keys=True)``) back from its spool as a record, parsed and validated in one step: exactly
the record ``json.loads`` of the envelope and ``CheckRecord(...)`` of its parts give, whatever the strings and
metrics hold (a crashed item's record, spooled as ``CheckRecord.model_dump_json()``, too)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_publish_clean import CLEAN, ESCAPED

from pytest_skilleval.reports.model import CheckRecord
from pytest_skilleval.reports.session import envelope_record
from pytest_skilleval.results import CheckResult

#: Names and paths a skill may have: quotes, backslashes, the envelope's own key text, other scripts.
NAMES = ['plain', 'a "quoted" name', 'back\\slash\\', '", "skill": "x', 'x", "skill_name": "y', 'ünïcödé ✓ — “q”',
         'smile \U0001f600', '\\u0000', '', '{"blocking": true, "result": {"check": "fake"}}']


def envelope(result: CheckResult, skill: str = "cat/demo", name: str = "demo", path: str = "/x/cat/demo",
             blocking: bool = True) -> str:
    """As collect.py publishes a result (both of its paths write this shape)."""
    data = result.encodable().model_dump(mode="json")
    return json.dumps({"skill": skill, "skill_name": name, "skill_path": path, "blocking": blocking, "result": data}, sort_keys=True)


def assert_same(text: str) -> None:
    data = json.loads(text)
    record = CheckRecord(blocking=data["blocking"], result=data["result"])
    got = envelope_record(text)
    assert got == record and got.model_dump_json() == record.model_dump_json(), text


def test_every_published_result_reads_as_its_full_parse() -> None:
    metrics_like_the_envelope = CheckResult(check="demo", metrics={"skill": "inner", "skill_name": "n", "skill_path": "p",
                                                                   "result": {"check": "inner", "skill": {"skill": 1}}})
    for result in [*CLEAN, *ESCAPED, metrics_like_the_envelope, CheckResult(check='a "quoted" check \\ name')]:
        for name in NAMES:
            for blocking in (True, False):
                assert_same(envelope(result, skill=name, name=name[::-1], path=f"/x/{name}", blocking=blocking))


def test_a_crashed_items_record_reads_as_itself() -> None:
    for result in [*CLEAN, CheckResult.incomplete("demo", "no result: worker 'gw0' crashed (killed, or out of memory)")]:
        record = CheckRecord(blocking=True, result=result.encodable())
        assert_same(record.model_dump_json())
        assert envelope_record(record.model_dump_json()) == CheckRecord.model_validate_json(record.model_dump_json())


text = st.text(st.characters(codec="utf-8"), max_size=12)
values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(skill=text, name=text, path=text, check=text, reason=st.none() | text, metrics=st.dictionaries(text, values, max_size=4),
       score=st.none() | st.floats(allow_nan=False, allow_infinity=False), blocking=st.booleans())
def test_generated_envelopes_read_as_their_full_parse(skill: str, name: str, path: str, check: str, reason: str | None,
                                                      metrics: dict[str, Any], score: float | None, blocking: bool) -> None:
    result = CheckResult(check=check, reason=reason, metrics=metrics, score=score)
    assert_same(envelope(result, skill=skill, name=name, path=path, blocking=blocking))
