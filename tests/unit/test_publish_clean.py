"""A check item publishes its result from one dump when no string of it can hold a surrogate, and the
publication is exactly the escaping path's: the same ``user_properties`` (the result's JSON for the
controller and JUnit, its status, score and finding counts), the same verdict, the same final result
when the item fails. Real items of a real collection; only the results are made up."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import manifest, write_skill
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skilleval import state
from pytest_skilleval.collect import CheckItem
from pytest_skilleval.results import CheckResult, Deduction, Finding, Severity, Status


def finding(severity: Severity = Severity.HIGH, message: str = "m", **kw: Any) -> Finding:
    return Finding(rule="demo.rule", severity=severity, message=message, file="SKILL.md", line=3, **kw)


CLEAN = [
    CheckResult(check="demo"),
    CheckResult(check="demo", findings=[finding(), finding(Severity.LOW), finding(Severity.LOW, suggestion="do x")]),
    CheckResult(check="demo", score=64.5, min_score=70, deductions=[Deduction(dimension="d", rule="r", points=5, reason="why")]),
    CheckResult(check="demo", score=90.0, min_score=70, findings=[finding(Severity.INFO)]),
    CheckResult.incomplete("demo", "scanner missing"),
    CheckResult.skipped("demo", "no scripts"),
    CheckResult.error("demo", "check crashed: ValueError: x"),
    CheckResult(check="demo", reason="a reason a passing result drops", metrics={"nested": {"list": ["a", ("b", 1)], 1: None}},
                tools={"ruff": "0.1"}),
    CheckResult(check="demo", findings=[finding(Severity.CRITICAL, "ünïcödé ✓ — “quoted”", evidence="é")]),
]
#: What takes the escaping path: a surrogate anywhere, a character beyond the BMP, a literal backslash-u text.
ESCAPED = [
    CheckResult(check="demo", reason="bad \ud800", status=Status.INCOMPLETE),
    CheckResult(check="demo", findings=[finding(message="m \udfff")]),
    CheckResult(check="demo", metrics={"key\udc80": 1}),  # pydantic's JSON dump writes the key as U+FFFD
    CheckResult(check="demo", metrics={"deep": [{"k\ud800": {"x": ("y", 1)}}]}),
    CheckResult(check="demo", tools={"t\udc00": "v"}),
    CheckResult(check="demo", findings=[finding(message="the skill's own U+FFFD \ufffd")]),
    CheckResult(check="demo", findings=[finding(evidence="smile \U0001f600")]),
    CheckResult(check="demo", findings=[finding(message=r"a literal \ud83d in the text")]),
    CheckResult.skipped("demo", "skipped \ud800"),
]


@pytest.fixture
def item(pytester: pytest.Pytester) -> CheckItem:
    write_skill(pytester.path / "skills", "demo-skill", {"SKILL.md": manifest()})
    items, _ = pytester.inline_genitems("--skills", "skills", "--skilleval-checks=schema", "-p", "no:cacheprovider", "-n", "0")
    (found,) = [i for i in items if isinstance(i, CheckItem)]
    return found


def published(item: CheckItem, publish: Any, result: CheckResult) -> tuple[Any, list[tuple[str, object]]]:
    item.user_properties.clear()
    out = publish(state.run_state(item.config), None, result, 0.25)
    return out, list(item.user_properties)


@pytest.mark.parametrize("blocking", [True, False])
def test_a_clean_result_is_published_as_the_escaping_path_publishes_it(item: CheckItem, blocking: bool) -> None:
    item.check.blocking = blocking
    for result in CLEAN:
        fast, fast_props = published(item, item._publish_clean, result)
        exact, exact_props = published(item, item._publish_escaped, result)
        assert fast is not None, result
        assert fast_props == exact_props
        assert fast[1] == exact[1]
        if exact[1].outcome == "failed":  # the failure's text is made from the final result
            assert fast[0] == exact[0]


def test_a_result_that_may_hold_a_surrogate_takes_the_escaping_path(item: CheckItem) -> None:
    for result in ESCAPED:
        fast, fast_props = published(item, item._publish_clean, result)
        assert fast is None and fast_props == [], result
        _, exact_props = published(item, item._publish_escaped, result)
        dict(exact_props)["skilleval.result"].encode("ascii")  # escaped: it travels


def test_a_failing_item_reports_its_findings_and_the_controller_gets_its_result(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills", "Bad_Name", {"SKILL.md": manifest("other-name")})
    result = pytester.runpytest("--skills", "skills", "--skilleval-checks=schema", "-p", "no:cacheprovider", "-n", "0",
                                "--skilleval-report-dir=rep", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*schema: FAILED*", "*HIGH*SKILL.md*"])
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="skilleval.status" value="FAILED"' in junit and "skilleval.findings.high" in junit
    assert '"status": "FAILED"' in (pytester.path / "rep" / "results.json").read_text()


#: Characters that make the difference: surrogates, beyond the BMP, U+FFFD, the parts of a backslash-u text.
TEXT = st.text(st.sampled_from(["a", "é", "\ud800", "\udfff", "\udc80", "\U0001f600", "\ufffd", "\\", "u", "d", "8"]), max_size=6)
JSON = st.recursive(st.none() | st.integers() | TEXT, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reason=st.none() | TEXT, message=TEXT, metrics=st.dictionaries(TEXT, JSON, max_size=3), tools=st.dictionaries(TEXT, TEXT, max_size=2),
       status=st.sampled_from([Status.PASSED, Status.INCOMPLETE, Status.SKIPPED, Status.ERROR]), severity=st.sampled_from(list(Severity)))
def test_whatever_the_text_the_clean_path_publishes_what_the_escaping_path_does_or_nothing(
        item: CheckItem, reason: str | None, message: str, metrics: dict[str, Any], tools: dict[str, str], status: Status,
        severity: Severity) -> None:
    result = CheckResult(check="demo", status=status, reason=reason, findings=[finding(severity, message, evidence=message)],
                         metrics=metrics, tools=tools)
    fast, fast_props = published(item, item._publish_clean, result)
    exact, exact_props = published(item, item._publish_escaped, result)
    if fast is not None:
        assert fast_props == exact_props and fast[1] == exact[1]
    dict(exact_props)["skilleval.result"].encode("ascii")
