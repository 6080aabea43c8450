"""The ``skilleval`` console script: ``skilleval doctor``, ``--version`` and the report and authoring
commands listed in :data:`COMMANDS` (each in its own module).

``doctor`` answers "will my Tier 1 run be complete here?" before a CI run finds out the slow way.
It imports every module of :mod:`pytest_skilleval.tier1` (a check is a module there, so a new
check's scanners appear without touching this file), collects the ``tools`` of each check class,
and for each tool reports the resolved path, the version, and whether a real probe works.

A check class may declare, besides ``tools``:

* ``optional_tools``: names whose absence does not make the check INCOMPLETE (gitleaks, which
  ``secrets`` replaces with detect-secrets);
* ``libraries``: in-process engines as ``(distribution, module)`` pairs, checked by import;
* ``probe_args``: tool name → arguments of a cheap real run in an empty folder (exit 0 expected);
  without it the probe is the tool's version command.

A tool is *required* when a default-enabled check needs it; the exit status is 0 when every
required tool works, else 1. Tools of opt-in checks are listed but never fail the doctor.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

from pytest_skilleval import __version__, tools
from pytest_skilleval.checks import Check

PROBE_TIMEOUT_S = 60.0


@dataclass
class ToolStatus:
    name: str
    kind: str  # "executable" | "library"
    required: bool = False
    checks: list[str] = field(default_factory=list)
    install_hint: str = ""
    override_var: str | None = None
    path: str | None = None
    version: str | None = None
    status: str = "missing"  # ok | missing | broken
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class _Use:
    spec: tools.ToolSpec | None
    library: tuple[str, str] | None
    probe: tuple[str, ...] | None
    status: ToolStatus


def tier1_modules() -> tuple[list[ModuleType], list[str]]:
    """Every module of the tier1 package, and an error line for each one that fails to import."""
    from pytest_skilleval import tier1

    modules, errors = [], []
    for info in sorted(pkgutil.iter_modules(tier1.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        name = f"{tier1.__name__}.{info.name}"
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # a broken check module is reported, it does not stop the doctor
            errors.append(f"{name}: cannot import: {type(exc).__name__}: {exc}")
    return modules, errors


def check_classes(modules: Iterable[ModuleType]) -> list[type[Check]]:
    found: list[type[Check]] = []
    for module in modules:
        for obj in vars(module).values():
            if (inspect.isclass(obj) and issubclass(obj, Check) and obj.__module__ == module.__name__
                    and not inspect.isabstract(obj) and obj not in found):
                found.append(obj)
    return sorted(found, key=lambda c: c.name)


def collect(classes: Iterable[type[Check]]) -> list[_Use]:
    """One entry per tool name, merged over every check that uses it."""
    uses: dict[str, _Use] = {}
    for cls in classes:
        optional = set(getattr(cls, "optional_tools", ()))
        probes = dict(getattr(cls, "probe_args", {}) or {})
        label = cls.name if cls.default_enabled else f"{cls.name} (opt-in)"
        entries: list[tuple[str, tools.ToolSpec | None, tuple[str, str] | None]] = [
            (spec.name, spec, None) for spec in getattr(cls, "tools", ())]
        entries += [(dist, None, (dist, module)) for dist, module in getattr(cls, "libraries", ())]
        for name, spec, library in entries:
            use = uses.get(name)
            if use is None:
                hint = spec.install_hint if spec else f"pip install {name}"
                use = uses[name] = _Use(spec, library, None, ToolStatus(
                    name, "executable" if spec else "library", install_hint=hint,
                    override_var=spec.override_var if spec else None))
            use.probe = use.probe or (tuple(probes[name]) if name in probes else None)
            use.status.checks.append(label + (" (optional)" if name in optional else ""))
            use.status.required |= cls.default_enabled and name not in optional
    return sorted(uses.values(), key=lambda u: (not u.status.required, u.status.name))


def _probe_executable(use: _Use) -> None:
    spec, st = use.spec, use.status
    assert spec is not None
    st.path = tools.locate(spec)
    if st.path is None:
        st.detail = f"'{spec.executable}' not found on PATH or beside {sys.executable}; {spec.override_var} may name it"
        return
    env = tools.scanner_env(spec)
    try:
        proc = subprocess.run([st.path, *spec.version_args], capture_output=True, text=True, errors="replace",
                              timeout=PROBE_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
        match = re.search(spec.version_pattern, proc.stdout + proc.stderr)
        st.version = match.group(1) if match else None
        if proc.returncode != 0 or st.version is None:
            st.status, st.detail = "broken", f"'{' '.join(spec.version_args)}' exited {proc.returncode} without a version"
            return
        if use.probe is not None:
            with tempfile.TemporaryDirectory(prefix="skilleval-doctor-") as tmp:
                proc = subprocess.run([st.path, *use.probe], capture_output=True, text=True, errors="replace",
                                      timeout=PROBE_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL, cwd=tmp)
            if proc.returncode != 0:
                tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])[:300]
                st.status, st.detail = "broken", f"probe run exited {proc.returncode}: {tail}"
                return
    except (OSError, subprocess.TimeoutExpired) as exc:
        st.status, st.detail = "broken", f"could not run: {exc}"
        return
    st.status = "ok"


def _probe_library(use: _Use) -> None:
    st = use.status
    assert use.library is not None
    dist, module = use.library
    try:
        st.version = metadata.version(dist)
        mod = importlib.import_module(module)
    except metadata.PackageNotFoundError:
        st.detail = f"{dist} is not installed"
        return
    except Exception as exc:
        st.status, st.detail = "broken", f"import {module} failed: {type(exc).__name__}: {exc}"
        return
    st.path = getattr(mod, "__file__", None)
    st.status = "ok"


def doctor(modules: Sequence[ModuleType] | None = None) -> tuple[list[ToolStatus], list[str]]:
    errors: list[str] = []
    if modules is None:
        modules, errors = tier1_modules()
    uses = collect(check_classes(modules))
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(uses)))) as pool:  # semgrep alone takes ~1 s to answer
        list(pool.map(lambda u: _probe_executable(u) if u.spec else _probe_library(u), uses))
    return [u.status for u in uses], errors


def _render(statuses: Sequence[ToolStatus], errors: Sequence[str]) -> str:
    rows = [("tool", "status", "version", "required", "checks", "path")]
    for s in statuses:
        rows.append((s.name, s.status, s.version or "-", "yes" if s.required else "no", ", ".join(s.checks), s.path or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"skilleval {__version__}: scanners of the built-in Tier 1 checks", ""]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    problems = [s for s in statuses if not s.ok]
    if problems:
        lines.append("")
    for s in problems:
        effect = "its checks will be INCOMPLETE" if s.required else "optional"
        lines.append(f"  {s.name}: {s.status} ({effect}): {s.detail}")
        if s.status == "missing" or s.required:
            lines.append(f"    install: {s.install_hint}")
    lines += [f"  error: {e}" for e in errors]
    bad = [s.name for s in statuses if s.required and not s.ok]
    lines += ["", f"not ready: {', '.join(bad)} required but not working" if bad or errors else "ready: every required scanner works"]
    return "\n".join(lines)


#: Subcommands besides ``doctor``: name -> (module, help). Each module has ``add_arguments(parser)``
#: and ``run(args) -> int``; it is imported only when its command runs.
COMMANDS = {
    "html": ("pytest_skilleval.reports.html", "render index.html from a results.json (or a report dir)"),
    "aggregate": ("pytest_skilleval.catalog.aggregate", "catalog means of skill lift per dimension from BENCHMARK.md cards, "
                  "benchmarks.json or results.json, under each weighting"),
    "compare": ("pytest_skilleval.reports.compare", "what changed between two runs (results.json or report dirs), as Markdown; "
                "exit 1 on a regression"),
    "suggest-description": ("pytest_skilleval.triggers.suggest", "propose description rewrites from a skill's trigger-set misses, "
                            "scored with the model probe on a held-out split (needs a chat provider and --budget-usd)"),
    "merge": ("pytest_skilleval.reports.merge", "join the report dirs of a sharded run (--skilleval-shard K/N) into one report set"),
    "init": ("pytest_skilleval.authoring.scaffold", "scaffold a new skill folder (SKILL.md, licence, evals/evals.json, evals/triggers.json)"),
    "create-eval-dataset": ("pytest_skilleval.authoring.dataset", "draft eval cases in four buckets (explicit, implicit, contextual, "
                            "negative) through the chat provider, or from templates"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skilleval", description="pytest-skilleval helper commands; "
                                     "skills themselves are evaluated with: pytest --skills PATH")
    parser.add_argument("--version", action="version", version=f"skilleval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doc = sub.add_parser("doctor", help="list the scanners the checks use, their versions, and whether they work")
    doc.add_argument("--json", action="store_true", help="print a JSON document instead of a table")
    for name, (module, text) in COMMANDS.items():
        command = sub.add_parser(name, help=text, description=text)
        command.set_defaults(module=module)
        importlib.import_module(module).add_arguments(command)
    args = parser.parse_args(argv)
    if args.command in COMMANDS:
        return int(importlib.import_module(args.module).run(args))
    if args.command != "doctor":
        parser.print_help()
        return 2
    statuses, errors = doctor()
    ok = not errors and all(s.ok for s in statuses if s.required)
    if args.json:
        doc_out: dict[str, Any] = {"skilleval": __version__, "ok": ok, "tools": [asdict(s) for s in statuses],
                                   "errors": list(errors)}
        print(json.dumps(doc_out, indent=2))
    else:
        print(_render(statuses, errors))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
