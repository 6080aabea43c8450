"""Batched scanners: one scanner process per worker over many skills, results cached by content.

Starting bandit or semgrep costs far more than scanning one small skill (semgrep: ~1.5 s of
startup), so a :class:`BatchedCheck` scans many skills per process and hands each item its part.

Under xdist every worker collects every item but runs only some. The skills that have an item
for a check are split into one *share* per worker; a worker that needs a skill claims that
skill's share (an exclusive file create) and scans the whole share at once, or, when another
worker has claimed it, waits for that worker's results to land in the cache. So each skill is
scanned once per run, in as many parallel processes as there are workers.

Results are cached on disk by a fingerprint of the skill's bytes, the tool versions and the
rules, so an unchanged skill costs nothing on the next run. INCOMPLETE results are not cached.

One bad skill must not cost the others their result. When a scan of several skills leaves some of
them without evidence because a scanner run failed as a whole (it crashed, timed out, hit its
resource limits, printed garbage) or the check raised, those skills are scanned again in halves,
down to one skill per scan, so only the culprit keeps the failure, with its cause. A missing tool is
not retried (it fails every skill alike), nor is evidence missing for one skill only.
"""

from __future__ import annotations

import abc
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from pytest_skilleval import atomic, processes, tools
from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.results import CheckResult, Status
from pytest_skilleval.skill import Skill

#: How long a worker waits for another worker's share before scanning the skill itself.
SHARE_WAIT_S = 900.0
#: Skills handed to one scanner run, unless the check says otherwise (``BatchedCheck.batch_skills``).
MAX_BATCH_SKILLS = 200
#: Bytes of skill files handed to one scanner run, whatever the check: their texts are all in memory
#: (and staged) while it runs.
MAX_BATCH_BYTES = 64 * 1024 * 1024
#: Extra scans a batch may spend isolating the skills that broke it, per MAX_BATCH_SKILLS skills it
#: holds (about 2·log2 of its size per culprit, and a larger batch — gitleaks takes a whole run's
#: skills in one — holds more culprits); past it the remaining suspects keep the batch's failure.
MAX_ISOLATION_SCANS = 32


class BatchedCheck(Check):
    """A check backed by external scanners that are run over many skills at once."""

    tools: ClassVar[tuple[tools.ToolSpec, ...]] = ()
    #: Bump when the rules or the result mapping change, to invalidate cached results.
    cache_version: ClassVar[str] = "1"
    #: Tools whose absence does not make the check INCOMPLETE (another engine takes over).
    optional_tools: ClassVar[frozenset[str]] = frozenset()
    #: In-process engines as (distribution, module) pairs; ``skilleval doctor`` imports them.
    libraries: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: tool name -> arguments of a cheap real run in an empty folder (exit 0), for ``skilleval doctor``.
    probe_args: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: Skills per scanner run at most (``MAX_BATCH_BYTES`` bounds a run's bytes too). A scanner whose
    #: start-up outweighs its memory per skill (gitleaks) raises it.
    batch_skills: ClassVar[int] = MAX_BATCH_SKILLS

    @abc.abstractmethod
    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        """Scan every skill, keyed by ``skill.root``. Raise ToolError when evidence is missing."""

    def needs_scan(self, skill: Skill) -> bool:
        """False when the skill has nothing for the scanners (e.g. no scripts): then ``scan`` is
        called for it alone, and no tool starts, not even for a version number."""
        return True

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        if not self.needs_scan(skill):
            return self._scan_now([skill], ctx)[skill.root]
        if ctx.batcher is None:
            return self._scan_now([skill], ctx)[skill.root]
        return ctx.batcher.result(self, skill, ctx)

    def _scan_now(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        results = self._scan_once(skills, ctx)
        self._isolate(list(skills), results, ctx, [MAX_ISOLATION_SCANS * -(-len(skills) // MAX_BATCH_SKILLS)])
        return results

    def _scan_once(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        try:
            results = dict(self.scan(skills, ctx))
        except tools.ToolError as exc:
            return {s.root: CheckResult.incomplete(self.name, str(exc), tier=self.tier,
                                                    tools={exc.tool.name: "missing" if exc.kind == "missing" else "failed"})
                    for s in skills}
        except Exception as exc:  # noqa: BLE001 - a check's bug on one skill is an ERROR, isolated below
            return {s.root: CheckResult.error(self.name, f"check crashed: {type(exc).__name__}: {exc}", tier=self.tier)
                    for s in skills}
        missing = [s for s in skills if s.root not in results]
        for s in missing:
            results[s.root] = CheckResult.incomplete(self.name, "scanner returned no result for this skill", tier=self.tier)
        return results

    def _isolate(self, skills: list[Skill], results: dict[Path, CheckResult], ctx: CheckContext, budget: list[int]) -> None:
        """Scan again, in halves, the skills a failed batch left without evidence (see module docstring)."""
        suspects = [s for s in skills if _retryable(results[s.root])]
        if len(skills) < 2 or not suspects:
            return
        halves = [suspects] if len(suspects) < len(skills) else [suspects[:len(suspects) // 2], suspects[len(suspects) // 2:]]
        for half in halves:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            again = self._scan_once(half, ctx)
            self._isolate(half, again, ctx, budget)
            results.update(again)

    def tool_versions(self) -> dict[str, str]:
        return {t.name: tools.version(t) or "missing" for t in self.tools}


def fingerprint(check: BatchedCheck, skill: Skill, ctx: CheckContext) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([check.name, check.cache_version, ctx.settings.profile, check.tool_versions()],
                        sort_keys=True).encode())
    h.update(skill.content_digest.encode())
    return h.hexdigest()


class ResultCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, check: str, fp: str) -> Path:
        return self.root / "results" / check / fp[:2] / f"{fp}.json"

    def get(self, check: str, fp: str) -> CheckResult | None:
        try:
            return CheckResult.model_validate_json(self._path(check, fp).read_text("utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, check: str, fp: str, result: CheckResult) -> None:
        try:
            atomic.write_atomic(self._path(check, fp), result.model_dump_json(), durable=False)  # a torn entry is a miss
        except OSError:
            pass  # a cache that cannot be written only costs speed


class Batcher:
    """Per-process coordinator; see the module docstring for the share protocol."""

    def __init__(self, *, load_skill: Callable[[Path], Skill], cache: ResultCache | None, coord_dir: Path | None,
                 worker_index: int = 0, worker_count: int = 1) -> None:
        self.load_skill = load_skill
        self.cache = cache
        self.coord_dir = coord_dir
        self.worker_index = worker_index
        self.worker_count = max(worker_count, 1)
        self.targets: dict[str, list[Path]] = {}
        self._memo: dict[tuple[str, Path], CheckResult] = {}
        self._fps: dict[tuple[str, Path], str] = {}
        self.scanned = 0  # skills actually handed to a scanner in this process

    def set_targets(self, check: str, roots: Sequence[Path]) -> None:
        self.targets[check] = list(dict.fromkeys(roots))

    def result(self, check: BatchedCheck, skill: Skill, ctx: CheckContext) -> CheckResult:
        key = (check.name, skill.root)
        if key in self._memo:
            return self._memo[key]
        roots = self.targets.get(check.name) or [skill.root]
        if skill.root not in roots:
            roots = [skill.root]
        if self.worker_count == 1 or self.coord_dir is None or self.cache is None:
            self._scan(check, roots, ctx)
        else:
            shares = [roots[i::self.worker_count] for i in range(self.worker_count)]
            self._try_share(check, self.worker_index % len(shares), shares, ctx)  # own share first: parallelism
            wanted = next(i for i, share in enumerate(shares) if skill.root in share)
            if key not in self._memo and not self._try_share(check, wanted, shares, ctx):
                self._await_share(check, wanted, shares[wanted], ctx)
        if key not in self._memo:  # the other worker died or its share lost this skill
            self._scan(check, [skill.root], ctx)
        return self._memo[key]

    def _share_file(self, check: str, index: int, suffix: str) -> Path:
        assert self.coord_dir is not None
        return self.coord_dir / check / f"share-{index}.{suffix}"

    def _try_share(self, check: BatchedCheck, index: int, shares: list[list[Path]], ctx: CheckContext) -> bool:
        if not shares[index] or not atomic.create_exclusive(self._share_file(check.name, index, "claim"), str(os.getpid())):
            return False
        try:
            self._scan(check, shares[index], ctx)
        finally:
            atomic.write_atomic(self._share_file(check.name, index, "done"), "")
        return True

    def _await_share(self, check: BatchedCheck, index: int, share: list[Path], ctx: CheckContext) -> None:
        done = self._share_file(check.name, index, "done")
        claim = self._share_file(check.name, index, "claim")
        deadline = time.monotonic() + SHARE_WAIT_S
        while not done.exists() and time.monotonic() < deadline:
            if not _claimant_alive(claim):
                break
            time.sleep(0.05)
        for root in share:
            self._from_cache(check, root, ctx)

    def _fingerprint(self, check: BatchedCheck, root: Path, ctx: CheckContext) -> str:
        key = (check.name, root)
        if key not in self._fps:
            self._fps[key] = fingerprint(check, self.load_skill(root), ctx)
        return self._fps[key]

    def _from_cache(self, check: BatchedCheck, root: Path, ctx: CheckContext) -> bool:
        if self.cache is None:
            return False
        try:
            fp = self._fingerprint(check, root, ctx)
        except Exception:  # noqa: BLE001 - a skill that cannot be loaded is scanned (and fails) alone
            return False
        cached = self.cache.get(check.name, fp)
        if cached is not None:
            self._memo[(check.name, root)] = cached
        return cached is not None

    def _scan(self, check: BatchedCheck, roots: Sequence[Path], ctx: CheckContext) -> None:
        """Scan the skills of ``roots`` not answered yet, in batches of at most ``check.batch_skills``
        skills and ``MAX_BATCH_BYTES`` bytes of files (a skill bigger than that alone is one batch)."""
        group: list[Skill] = []
        size = 0
        for root in roots:
            skill = self._needing_scan(check, root, ctx)
            if skill is None:
                continue
            weight = sum(e.size for e in skill.files(include_eval_dirs=True))
            if group and (len(group) >= check.batch_skills or size + weight > MAX_BATCH_BYTES):
                self._scan_batch(check, group, ctx)
                group, size = [], 0
            group.append(skill)
            size += weight
        if group:
            self._scan_batch(check, group, ctx)

    def _needing_scan(self, check: BatchedCheck, root: Path, ctx: CheckContext) -> Skill | None:
        """The skill when a scanner must see it; None when it is answered already or without one (no
        scan needed, a cached result, or a skill that cannot even be loaded)."""
        if (check.name, root) in self._memo:
            return None
        try:
            skill = self.load_skill(root)
            if not check.needs_scan(skill):  # answered without a tool, a fingerprint or a cache entry
                self._memo[(check.name, root)] = check._scan_now([skill], ctx)[root]
                return None
        except Exception as exc:  # noqa: BLE001 - a skill that cannot even be loaded fails alone
            self._memo[(check.name, root)] = CheckResult.error(
                check.name, f"skill could not be loaded: {type(exc).__name__}: {exc}", tier=check.tier)
            return None
        return None if self._from_cache(check, root, ctx) else skill

    def _scan_batch(self, check: BatchedCheck, skills: Sequence[Skill], ctx: CheckContext) -> None:
        self.scanned += len(skills)
        for root, result in check._scan_now(skills, ctx).items():
            self._memo[(check.name, root)] = result
            if self.cache is not None and result.status is Status.PASSED:
                self.cache.put(check.name, self._fingerprint(check, root, ctx), result)


def _retryable(result: CheckResult) -> bool:
    """A failure of the whole scanner run (a tool marked "failed", or the check raised), which one skill
    of the batch may have caused. Not a missing tool, nor evidence missing for this skill alone (a file
    the scanner skipped, a service that answered for none of its pins): a rescan would say the same."""
    return result.status is Status.ERROR or (result.status is Status.INCOMPLETE and "failed" in result.tools.values())


def _claimant_alive(claim: Path) -> bool:
    try:
        pid = int(claim.read_text().strip() or "0")
    except (OSError, ValueError):
        return True  # claim being written right now
    return processes.alive(pid)
