"""Shared test helpers: build small skills on disk and run one check on them."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_skilleval.batch import Batcher
from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.config import Settings
from pytest_skilleval.results import CheckResult, Severity
from pytest_skilleval.skill import Skill

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("SKILLEVAL_CORPUS", REPO.parent / "shared" / "corpus"))
#: Measured seconds per test module (every phase of every test, summed): the order `-n 2` deals modules in.
#: Refresh it with a whole run: SKILLEVAL_SUITE_DURATIONS=tests/durations.json .venv/bin/pytest -n 2
DURATIONS = Path(__file__).with_name("durations.json")
DURATIONS_OUT = os.environ.get("SKILLEVAL_SUITE_DURATIONS", "")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(condition: bool, message: str) -> None:
    """Skip locally, fail in CI: a CI run that silently skipped a component it needs would prove nothing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"{message} (CI=true: a missing component is a failure; run `make test` to install it)")
    pytest.skip(message)


def sigint_at_default() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT (Ctrl-C): the child starts with SIGINT at its
    default disposition, however the suite was launched. A shell starts a background job of a non-interactive
    shell with SIGINT ignored, children inherit that, and Python installs its KeyboardInterrupt handler only
    when SIGINT is not ignored at start: the child would sleep through the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse name resolution for anything but loopback, so no provider test can reach the internet."""
    real = socket.getaddrinfo

    def guarded(host: object, *args: object, **kw: object) -> object:
        if str(host) not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"provider tests stay on loopback; refused to resolve {host!r}")
        return real(host, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = dict(skill_paths=(), checks=None, profile="spec", fail_on=Severity.HIGH, report_dir=None, cache_dir=None,
                                     allow_incomplete=False, min_quality=70.0, min_rubric=70.0, max_file_bytes=1024 * 1024)
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def write_skill(base: Path, name: str, files: dict[str, str | bytes]) -> Path:
    """Write a skill folder ``base/name`` holding ``files`` (relative path -> text or bytes)."""
    root = base / name
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    return root


def manifest(name: str = "demo-skill", description: str = "Use when the user asks to demo things.", extra: str = "",
             body: str = "# Demo\n\nUse this skill to demo things.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


@pytest.fixture
def make_skill(tmp_path: Path) -> Callable[..., Skill]:
    def factory(files: dict[str, str | bytes] | None = None, name: str = "demo-skill") -> Skill:
        root = write_skill(tmp_path, name, files if files is not None else {"SKILL.md": manifest(name)})
        return Skill(root=root, key=name)

    return factory


def run_check(check: Check, skill: Skill, **settings: object) -> CheckResult:
    return check.run(skill, CheckContext(settings=make_settings(**settings)))


def run_batched(check: Check, skills: list[Skill]) -> tuple[list[CheckResult], Batcher]:
    """Each skill through ``check.run`` with one real Batcher over them all, as a worker runs a catalog."""
    by_root = {s.root: s for s in skills}
    batcher = Batcher(load_skill=by_root.__getitem__, cache=None, coord_dir=None)
    batcher.set_targets(check.name, list(by_root))
    ctx = CheckContext(settings=make_settings(), batcher=batcher)
    return [check.run(s, ctx) for s in skills], batcher


def rules(result: CheckResult) -> set[str]:
    return {f.rule for f in result.findings}


# -- packing the two workers of `make test` (-n 2) ---------------------------------------------------------
# xdist's default "load" scheduling first hands each worker a quarter of the collection in one piece; the
# suite collects tests/e2e and tests/integration first, so one worker got every trial and real-CLI run
# (1,240 of the 1,620 worker-seconds of a measured run) and the other idled for half the run. Here whole
# modules are dealt one at a time (a module stays on one worker, so its module-scoped fixtures, e.g. one
# example run or one built image, are set up once), heaviest first by tests/durations.json: longest-first
# packing leaves only small modules for the end.


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def module_seconds() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def deal_order(nodeids: list[str], seconds: dict[str, float]) -> list[int]:
    """Indices of ``nodeids`` in the order to deal them: modules heaviest first, a module not measured yet
    before all (a new heavy module dealt last would leave the other worker idle; a light one costs nothing
    early), each module's tests together and in their order, equal weights in file order."""
    first: dict[str, int] = {}
    for index, nodeid in enumerate(nodeids):
        first.setdefault(module_of(nodeid), index)

    def key(index: int) -> tuple[float, int]:
        module = module_of(nodeids[index])
        return -seconds.get(module, math.inf), first[module]

    return sorted(range(len(nodeids)), key=key)  # stable


def dealing_applies(config: pytest.Config) -> bool:
    """Whether this run's modules are dealt as above: not a skill run from the repo root (`make eval`; the
    testpaths setting loads this conftest), nor a run whose developer picked the scheduling (--dist) or
    asked for failed or new tests first (--ff, --nf: the cache plugin's order stands)."""
    if config.getoption("skilleval_skills", None) or config.getoption("failedfirst", False) or config.getoption("newfirst", False):
        return False
    return not any(arg == "--dist" or arg.startswith("--dist=") for arg in config.invocation_params.args)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput") or not dealing_applies(config):
        return  # a plain run keeps the file order; the workers must all collect the same order, and do
    seconds = module_seconds()
    if seconds:
        order = deal_order([item.nodeid for item in items], seconds)
        items[:] = [items[i] for i in order]


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "load" or not dealing_applies(config) or not module_seconds():
        return None  # xdist's own choice
    from xdist.scheduler import LoadFileScheduling  # units are files (LoadScopeScheduling's would split a class or a '::' id)

    config.option.loadscopereorder = False  # deal units in the collection's order (heaviest first), not by size
    return LoadFileScheduling(config, log)  # type: ignore[arg-type]


_seconds_by_module: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if DURATIONS_OUT:
        _seconds_by_module[module_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if DURATIONS_OUT and not hasattr(session.config, "workerinput") and _seconds_by_module:
        ranked = sorted(_seconds_by_module.items(), key=lambda kv: -kv[1])
        Path(DURATIONS_OUT).write_text(json.dumps({k: round(v, 1) for k, v in ranked}, indent=1) + "\n", encoding="utf-8")
