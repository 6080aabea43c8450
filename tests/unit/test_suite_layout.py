"""The test tree has no packages (pytest's default "prepend" import mode), so two test modules with the
same file name in different folders make collection fail with "import file mismatch"."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_test_module_names_are_unique_across_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name != "conftest.py")
    assert sorted(n for n, c in names.items() if c > 1) == []


def test_a_child_started_for_ctrl_c_gets_sigint_at_default_even_when_the_suite_ignores_it() -> None:
    """A suite launched as a background job of a non-interactive shell inherits SIGINT ignored; a child
    pytest started from it must still turn a Ctrl-C into KeyboardInterrupt (see conftest.sigint_at_default)."""
    import signal
    import subprocess
    import sys

    from conftest import sigint_at_default

    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `bash -c '(pytest &)'` starts the suite
    try:
        inherited = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
        reset = subprocess.run(probe, capture_output=True, text=True, check=True, preexec_fn=sigint_at_default).stdout.strip()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (inherited, reset) == ("False", "True")


def test_every_test_that_sends_sigint_to_a_child_starts_it_with_sigint_at_default() -> None:
    senders = [p for p in TESTS.rglob("test_*.py") if "signal.SIGINT" in p.read_text(encoding="utf-8") and p.name != Path(__file__).name]
    assert senders and [p.name for p in senders if "preexec_fn=sigint_at_default" not in p.read_text(encoding="utf-8")] == []


def test_modules_are_dealt_heaviest_first_unmeasured_before_all_and_each_stays_together() -> None:
    from conftest import deal_order

    nodeids = ["tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/c.py::t1", "tests/d.py::t1", "tests/b.py::t2",
               "tests/e.py::t1"]
    seconds = {"tests/a.py": 1.0, "tests/b.py": 30.0, "tests/c.py": 1.0, "tests/e.py": 5.0}  # d.py is new: not measured
    assert [nodeids[i] for i in deal_order(nodeids, seconds)] == [
        "tests/d.py::t1", "tests/b.py::t1", "tests/b.py::t2", "tests/e.py::t1", "tests/a.py::t1", "tests/a.py::t2", "tests/c.py::t1"]


def test_the_measured_durations_name_only_test_modules_that_exist() -> None:
    from conftest import module_seconds

    seconds = module_seconds()
    assert len(seconds) > 50 and [m for m in seconds if not (TESTS.parent / m).is_file()] == []


def test_the_dealing_is_for_this_suite_only(pytester) -> None:  # type: ignore[no-untyped-def]
    """Not for a skill run from the repo root (`make eval`: testpaths loads this conftest), nor when a
    developer picks the scheduling (--dist) or asks for failed or new tests first (--ff, --nf)."""
    from conftest import dealing_applies

    assert dealing_applies(pytester.parseconfig("-n", "2"))
    for args in (("--skills", "example_skills"), ("--dist", "load"), ("--dist=loadgroup",), ("--ff",), ("--nf",)):
        assert not dealing_applies(pytester.parseconfig("-n", "2", *args)), args


def test_a_skill_run_from_the_repo_root_keeps_xdists_scheduling(tmp_path: Path) -> None:
    import subprocess
    import sys

    def scheduler(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-v", *args],
                             cwd=TESTS.parent, capture_output=True, text=True, timeout=300).stdout
        return next((line.split()[-1] for line in out.splitlines() if line.startswith("scheduling tests via")), out[-2000:])

    assert scheduler("--skills", "example_skills", "-m", "tier1", "--skilleval-checks=schema",
                     f"--skilleval-report-dir={tmp_path}/report") == "LoadScheduling"
    assert scheduler("tests/unit/test_suite_layout.py", "-k", "unique") == "LoadFileScheduling"
