"""What a check is, and the registry that holds the checks every plugin contributes."""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pytest_skilleval import gate
from pytest_skilleval.results import CheckResult, Finding, Status

if TYPE_CHECKING:
    from pytest_skilleval.config import Settings
    from pytest_skilleval.skill import Skill


class ScanCoordinator(Protocol):
    """What a check may ask of the scanner batcher (``batch.Batcher`` is one): the result of a
    batched check for one skill. Named here because ``batch`` builds on ``Check``, not the reverse."""

    def result(self, check: Any, skill: Skill, ctx: CheckContext) -> CheckResult: ...


@dataclass
class CheckContext:
    """What a check may know beyond the skill: the run's settings and the scanner batcher."""

    settings: Settings
    #: Coordinates batched scanners across skills and xdist workers (None: scan one skill at a time).
    batcher: ScanCoordinator | None = None


@dataclass(frozen=True)
class Reads:
    """The files of a skill a check reads as text, as :meth:`Skill.text_files` selects them: ``suffixes``
    (suffixes or whole names; None: every file whose suffix says text) and whether eval folders too;
    ``accepts``, when the check reads only some of those (scripts/ only, files named requirements*.txt,
    Markdown that SKILL.md links to): whether it reads the file at this path of this skill."""

    suffixes: frozenset[str] | None = None
    include_eval_dirs: bool = False
    accepts: Callable[[Skill, str], bool] | None = None


class Check(abc.ABC):
    """A named, stateless examination of one skill.

    ``run`` must not raise on bad input: malformed content is a finding. An exception escaping
    ``run`` is reported as an ERROR result with the traceback, never as a pass.
    """

    name: ClassVar[str]
    tier: ClassVar[int] = 1
    description: ClassVar[str] = ""
    #: Part of the default selection; opt-in checks are added with ``--skilleval-checks=+name``.
    default_enabled: ClassVar[bool] = True
    #: Advisory checks report findings but never fail the run.
    blocking: ClassVar[bool] = True

    #: The files this check reads beyond SKILL.md. When one of them could not be read, its completed result
    #: becomes INCOMPLETE in one place (:func:`unread_evidence`): a check never passes on bytes it did not see.
    reads: ClassVar[Reads | None] = None

    @abc.abstractmethod
    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult: ...

    def files_read(self, ctx: CheckContext) -> Reads | None:
        """:attr:`reads`; a check whose files depend on the run's settings or rules says so here."""
        return self.reads

    def result(self, findings: Iterable[Finding] = (), **kw: object) -> CheckResult:
        """A completed result of this check; the gate decides PASSED or FAILED."""
        return CheckResult(check=self.name, tier=self.tier, findings=list(findings), **kw)  # type: ignore[arg-type]


#: Unread files named in an INCOMPLETE reason; the rest are counted.
MAX_UNREAD_NAMED = 5


def unread_evidence(check: Check, skill: Skill, ctx: CheckContext, result: CheckResult, policy: gate.Policy) -> CheckResult:
    """``result``, or, when it would pass but files the check reads could not be read, the same result
    INCOMPLETE (its findings kept) with a reason that names those files, why, and the fix. Only a pass is
    undecided without them: a result that fails on what was read stays failed (an INCOMPLETE would let
    ``--skilleval-allow-incomplete`` wave through a finding that one big file beside it hid)."""
    reads = check.files_read(ctx)
    if reads is None or result.status is not Status.PASSED or gate.final_status(result, policy)[0] is not Status.PASSED:
        return result
    accepts = reads.accepts
    unread = skill.unread_files(reads.suffixes, include_eval_dirs=reads.include_eval_dirs,
                                accepts=None if accepts is None else functools.partial(accepts, skill))
    if not unread:
        return result
    named = "; ".join(f"{rel}: {why}" for rel, why in unread[:MAX_UNREAD_NAMED])
    more = f"; and {len(unread) - MAX_UNREAD_NAMED} more" if len(unread) > MAX_UNREAD_NAMED else ""
    return result.model_copy(update={
        "status": Status.INCOMPLETE, "metrics": {**result.metrics, "unread_files": len(unread)},
        "reason": f"{len(unread)} file(s) this check reads could not be read, so it is undecided — {named}{more}"})


class UsageError(Exception):
    """Bad check selection or clashing check names; shown to the user without a traceback."""


class CheckRegistry:
    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}
        self._order: list[str] = []

    def add(self, check: Check) -> None:
        name = check.name
        if name in self._checks and type(self._checks[name]) is not type(check):
            other = type(self._checks[name])
            raise UsageError(f"two plugins provide a check named {name!r}: "
                             f"{other.__module__}.{other.__qualname__} and {type(check).__module__}.{type(check).__qualname__}")
        if name not in self._checks:
            self._order.append(name)
        self._checks[name] = check

    def __getitem__(self, name: str) -> Check:
        return self._checks[name]

    def __contains__(self, name: object) -> bool:
        return name in self._checks

    def all(self) -> list[Check]:
        """Checks by tier, then name: a deterministic order for collection under xdist."""
        return sorted(self._checks.values(), key=lambda c: (c.tier, c.name))

    def select(self, spec: str | None, tier: int = 1) -> list[Check]:
        """Resolve ``--skilleval-checks``.

        ``a,b`` selects exactly those; ``+a`` adds to the defaults; ``-a`` removes from them.
        Unknown names are a usage error that lists the known ones.
        """
        candidates = [c for c in self.all() if c.tier == tier]
        chosen = {c.name for c in candidates if c.default_enabled}
        if spec:
            items = [s.strip() for s in spec.split(",") if s.strip()]
            exact = [s for s in items if not s.startswith(("+", "-"))]
            if exact:
                chosen = set()
            for item in items:
                op, name = (item[0], item[1:]) if item[0] in "+-" else ("=", item)
                if name == "all":
                    names = {c.name for c in candidates}
                else:
                    if name not in self._checks:
                        known = ", ".join(c.name for c in self.all())
                        raise UsageError(f"unknown check {name!r} in --skilleval-checks (known: {known})")
                    names = {name}
                if op == "-":
                    chosen -= names
                else:
                    chosen |= names
        return [c for c in candidates if c.name in chosen]
