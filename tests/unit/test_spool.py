"""The report session's spool: records found again by group and name, whatever the order of adds and reads."""

from __future__ import annotations

from pytest_skilleval.reports.spool import Spool


def test_adds_between_reads_land_at_the_end_and_reads_find_every_record() -> None:
    spool = Spool()
    expected: dict[str, dict[str, str]] = {}
    for n in range(300):
        group, name, text = f"g{n % 7}", f"c{n % 11}", f"record {n} é✓ " + "x" * (n * 37 % 5000)
        spool.add(group, name, text)
        expected.setdefault(group, {})[name] = text  # a later record replaces an earlier one
        if n % 13 == 0:  # read part of a group, add in the middle of it, read on
            reading = spool.read(f"g{n % 7}")
            first = next(reading)
            spool.add("late", f"l{n}", f"late {n}")
            expected.setdefault("late", {})[f"l{n}"] = f"late {n}"
            assert [first, *reading] == list(expected[f"g{n % 7}"].values())
    assert spool.groups() == list(expected)
    for group, records in expected.items():
        assert list(spool.read(group)) == list(records.values())
    spool.close()
    assert not spool and list(spool.read("g0")) == []
    spool.add("again", "x", "after close")
    assert list(spool.read("again")) == ["after close"]
