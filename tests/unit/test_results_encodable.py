"""``CheckResult.encodable()``: every lone surrogate escaped, the result itself when there is none.

Every check result goes through it; a clean result is recognised from one JSON dump instead of a walk
of its data. Compared here with the walk itself (``encodable_data``) over results with surrogates in
each place a string can be, and with data the dump cannot write.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.results import CheckResult, Finding, Severity, encodable_data


def walked(result: CheckResult) -> CheckResult:
    data = result.model_dump(mode="python")
    clean = encodable_data(data)
    return result if clean == data else CheckResult.model_validate(clean)


def result(**kw: Any) -> CheckResult:
    return CheckResult(check="demo", findings=[Finding(rule="demo.rule", severity=Severity.HIGH, message="m", file="SKILL.md", line=1)], **kw)


CLEAN = [result(), result(metrics={"nested": {"list": ["a", ["b", 1]], 1: None, "nan": float("nan")}}),
         result(metrics={"a set": {"x\ud800"}, "bytes": b"\xed\xa0\x80"}),  # not walked: left as they are
         result(reason="ünïcödé ✓ and \U0001f600", tools={"ruff": "0.1"})]
DIRTY = [result(reason="bad \ud800"), result(metrics={"key\udfff": 1}), result(metrics={"deep": [[{"x": ("y\udc80",)}]]}),
         result(tools={"t": "v\ud83d"}),
         CheckResult(check="demo", findings=[Finding(rule="r", severity=Severity.LOW, message="m", evidence="e\udcff")]),
         result(metrics={"t": {("tuple", "key"): "v\ud800"}}),  # JSON cannot write a tuple key: the walk decides
         result(metrics={"list": ["a", ("b", 1)]})]  # no surrogate, but the walk gives the tuple back as a list


@pytest.mark.parametrize("r", CLEAN)
def test_a_clean_result_is_itself(r: CheckResult) -> None:
    assert r.encodable() is r and walked(r) is r


@pytest.mark.parametrize("r", DIRTY)
def test_a_result_with_surrogates_is_escaped_as_the_walk_does(r: CheckResult) -> None:
    out = r.encodable()
    assert out is not r
    assert out == walked(r) and out.metrics == walked(r).metrics
    out.to_json().encode("utf-8")  # encodable now
