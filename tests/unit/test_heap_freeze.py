"""A run's long-lived objects leave the garbage collector's full passes, and come back at its end (heap.py).

Real pytest runs in a fresh interpreter; a probe plugin reads ``gc.get_freeze_count()`` while items run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

RUN = """
import gc, json, os, sys
import pytest
import pytest_skilleval.heap

if os.environ.get("FREEZE_EVERY"):
    pytest_skilleval.heap.FREEZE_EVERY = int(os.environ["FREEZE_EVERY"])
seen = []

class Probe:
    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        seen.append(("configure", gc.get_freeze_count()))

    def pytest_runtest_setup(self, item):
        seen.append(("item", gc.get_freeze_count()))
        if os.environ.get("COUNT_OBJECTS"):
            seen.append(("walked", len(gc.get_objects())))

code = pytest.main(sys.argv[1:], plugins=[Probe()])
seen.append(("after", gc.get_freeze_count()))
print("SEEN " + json.dumps(seen))
raise SystemExit(code)
"""


def skills(tmp_path: Path, names: tuple[str, ...] = ("alpha", "beta")) -> Path:
    for name in names:
        skill = tmp_path / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does {name}. Use when {name} is asked for.\n---\n\n# {name}\n",
                                        encoding="utf-8")
    return tmp_path / "skills"


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[list[tuple[str, int]], str]:
    proc = subprocess.run([sys.executable, "-c", RUN, "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--rootdir={tmp_path}",
                           "--skilleval-report-dir=", "--skilleval-cache-dir=", "-n", "0", "--skilleval-checks=version", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    line = next((x for x in proc.stdout.splitlines() if x.startswith("SEEN ")), None)
    assert line is not None and proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [tuple(x) for x in json.loads(line.removeprefix("SEEN "))], proc.stdout


def test_a_catalog_run_freezes_imports_and_the_collected_tree_then_thaws(tmp_path: Path) -> None:
    seen, _ = run(tmp_path, f"--skills={skills(tmp_path)}")
    at_configure = dict(seen)["configure"]
    during = [n for what, n in seen if what == "item"]
    assert at_configure == 0 and len(during) == 2
    assert min(during) > 10_000  # the imports and the tree (frozen objects freed since leave the count)
    assert dict(seen)["after"] == 0  # nothing stays frozen after the run


EXIT_PROBE = """
import atexit, gc

# imported before the run (-p), so this runs after whatever the run registers (atexit: last in, first out)
atexit.register(lambda: print(f"AT EXIT frozen={gc.get_freeze_count()}", flush=True))
"""


def frozen_at_exit(tmp_path: Path, *args: str) -> int:
    """The heap's frozen count when the interpreter exits after ``python -m pytest ARGS`` (the pytest command)."""
    (tmp_path / "exitprobe.py").write_text(EXIT_PROBE, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "exitprobe", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           f"--rootdir={tmp_path}", "--skilleval-report-dir=", "--skilleval-cache-dir=", "-n", "0",
                           "--skilleval-checks=version", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return int(next(x for x in proc.stdout.splitlines() if x.startswith("AT EXIT ")).split("frozen=")[1])


def test_a_catalog_run_freezes_the_heap_again_when_the_interpreter_exits(tmp_path: Path) -> None:
    """The interpreter's own final collections walked every object the run had thawed: over the corpus
    ~1.0 s of CPU after the last report was written. At exit nothing but those passes would look."""
    assert frozen_at_exit(tmp_path, f"--skills={skills(tmp_path)}") > 10_000


@pytest.mark.parametrize("with_skills", [False, True], ids=["tests-only", "skills-and-tests"])
def test_a_run_with_the_users_tests_leaves_the_heap_thawed_at_exit(tmp_path: Path, with_skills: bool) -> None:
    """Their objects' finalizers (a cycle holding an open file, say) still run when the interpreter exits."""
    (tmp_path / "test_mine.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    args = [f"--skills={skills(tmp_path)}"] if with_skills else []
    assert frozen_at_exit(tmp_path, *args, str(tmp_path / "test_mine.py")) == 0


AFTER_MAIN = """
import sys, tempfile
import pytest

code = pytest.main(sys.argv[1:] + ["--skills=skills"])


class Cycle:
    def __init__(self):
        self.me = self
        self.tmp = tempfile.NamedTemporaryFile(prefix="skilleval-cycle-", dir=".", delete=True)

    def __del__(self):
        print("finalizer ran", flush=True)


Cycle()
raise SystemExit(code)
"""


def test_a_script_that_goes_on_after_pytest_main_keeps_its_finalizers_at_exit(tmp_path: Path) -> None:
    """Only the pytest command itself (nothing of a caller runs after it) freezes at exit: a script that
    runs a skills-only pytest.main() and then makes a cycle still has the cycle collected when it exits."""
    skills(tmp_path)
    (tmp_path / "after_main.py").write_text(AFTER_MAIN, encoding="utf-8")
    proc = subprocess.run([sys.executable, "after_main.py", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--rootdir={tmp_path}",
                           "--skilleval-report-dir=", "--skilleval-cache-dir=", "-n", "0", "--skilleval-checks=version"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "finalizer ran" in proc.stdout
    assert not list(tmp_path.glob("skilleval-cycle-*"))  # the temporary file was deleted


def test_what_the_items_leave_behind_leaves_the_full_passes_too(tmp_path: Path) -> None:
    """pytest keeps every item's reports for its summary: left unfrozen, each full pass of the collector
    walked them all again (over the corpus, 25 passes grew from 23 to 100 ms)."""
    names = tuple(f"skill-{n:03d}" for n in range(160))
    seen, _ = run(tmp_path, f"--skills={skills(tmp_path, names)}", env={"FREEZE_EVERY": "20", "COUNT_OBJECTS": "1"})
    walked = [n for what, n in seen if what == "walked"]
    assert len(walked) == 160
    # items 50 to 150 (each 10 past a freeze) leave 100 items' reports behind: ~850 more objects in
    # each pass when they stay unfrozen, the same count when they are frozen
    assert walked[149] - walked[49] < 300, (walked[49], walked[99], walked[149])


def test_the_users_tests_keep_the_collector_as_it_was(tmp_path: Path) -> None:
    """A cycle made when the user's test module is imported is collected by gc.collect() in the test."""
    (tmp_path / "test_mine.py").write_text('''
import gc, weakref

class Node:
    pass

a, b = Node(), Node()
a.other, b.other = b, a
ref = weakref.ref(a)

def test_cycle_is_collected():
    global a, b
    del a, b
    gc.collect()
    assert ref() is None
''', encoding="utf-8")
    seen, out = run(tmp_path, f"--skills={skills(tmp_path)}", str(tmp_path / "test_mine.py"))
    assert "3 passed" in out


CONFTEST_CYCLE = """
import gc, weakref

class Node:
    pass

a, b = Node(), Node()
a.other, b.other = b, a
ref = weakref.ref(a)
kept = [Node()]
"""

TEST_CONFTEST_CYCLE = """
import gc
import conftest

def test_conftest_cycle_is_collected():
    del conftest.a, conftest.b
    gc.collect()
    assert conftest.ref() is None

def test_conftest_objects_are_seen_by_gc():
    assert any(o is conftest.kept for o in gc.get_objects())
"""


@pytest.mark.parametrize("with_skills", [False, True], ids=["no-skills", "skills-and-tests"])
def test_a_cycle_made_in_the_users_conftest_is_collected(tmp_path: Path, with_skills: bool) -> None:
    """Conftests are imported before pytest_configure: a run that is not only skill checks must not
    freeze them (a plain run where the plugin is merely installed, or skills named beside tests)."""
    (tmp_path / "conftest.py").write_text(CONFTEST_CYCLE, encoding="utf-8")
    (tmp_path / "test_theirs.py").write_text(TEST_CONFTEST_CYCLE, encoding="utf-8")
    args = [f"--skills={skills(tmp_path)}"] if with_skills else []
    seen, out = run(tmp_path, *args, str(tmp_path / "test_theirs.py"))
    assert ("4 passed" if with_skills else "2 passed") in out, out
    assert all(n == 0 for what, n in seen if what == "item"), seen  # nothing frozen while any item runs


def test_a_run_inside_a_run_freezes_nothing(pytester: pytest.Pytester) -> None:
    import gc

    before = gc.get_freeze_count()
    skills(pytester.path)
    pytester.makeconftest("""
import gc, pathlib

def pytest_runtest_setup(item):
    with open(pathlib.Path(__file__).parent / "counts.txt", "a") as fh:
        fh.write(f"{gc.get_freeze_count()}\\n")
""")
    result = pytester.runpytest_inprocess("--skills=skills", "-p", "no:cacheprovider", "--skilleval-report-dir=", "--skilleval-cache-dir=",
                                          "--skilleval-checks=version")
    result.assert_outcomes(passed=2)
    during = [int(x) for x in (pytester.path / "counts.txt").read_text().split()]
    assert len(during) == 2 and max(during) <= before  # the outer run's freeze only (what it froze may have been freed)
    assert gc.get_freeze_count() <= before
