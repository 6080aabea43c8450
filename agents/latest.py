"""``make test-latest``: the agent CLIs at their newest registry release, in their own folder, and which pass.

    python agents/latest.py install .cache/agents-latest     # package.json with every CLI of agents/package.json at "latest"
    python agents/latest.py report .cache/agents-latest JUNIT # per CLI: pinned, latest, tests passed/failed/skipped

The pinned set (agents/package.json, .cache/agents) is never touched: the CLIs move weekly, and this
says whether the newest ones still work with the gateway, the adapters and the parsers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI_OF = {"@anthropic-ai/claude-code": "claude-code", "@openai/codex": "codex", "opencode-ai": "opencode", "@google/gemini-cli": "gemini"}


def pinned() -> dict[str, str]:
    return dict(json.loads((HERE / "package.json").read_text())["dependencies"])


def install(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "pytest-skilleval-agents-latest", "private": True, "dependencies": {name: "latest" for name in pinned()}}
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return subprocess.call(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder)


def installed_version(folder: Path, package: str) -> str | None:
    try:
        return str(json.loads((folder / "node_modules" / package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def report(folder: Path, junit: Path) -> int:
    counts = {cli: {"passed": 0, "failed": 0, "skipped": 0} for cli in CLI_OF.values()}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        cli = next((c for c in sorted(counts, key=len, reverse=True) if re.search(rf"[\[-]{re.escape(c)}[\]-]", name)), None)
        if cli is None:
            continue
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else \
            "skipped" if case.find("skipped") is not None else "passed"
        counts[cli][outcome] += 1
    print(f"{'CLI':<12} {'pinned':<10} {'latest':<10} {'passed':>6} {'failed':>6} {'skipped':>7}  verdict")
    bad = 0
    for package, version in pinned().items():
        cli = CLI_OF.get(package, package)
        c = counts.get(cli, {"passed": 0, "failed": 0, "skipped": 0})
        ok = c["failed"] == 0 and c["passed"] > 0
        bad += not ok
        verdict = "PASS" if ok else "FAIL" if c["failed"] else "NOT RUN"
        print(f"{cli:<12} {version:<10} {installed_version(folder, package) or '?':<10} {c['passed']:>6} {c['failed']:>6} {c['skipped']:>7}  "
              f"{verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    command, folder = sys.argv[1], Path(sys.argv[2])
    sys.exit(install(folder) if command == "install" else report(folder, Path(sys.argv[3])))
