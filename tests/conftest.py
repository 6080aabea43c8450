"""Shared test helpers: build small skills on disk and run one check on them."""

from __future__ import annotations

import os
import signal
import socket
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
