"""Skill folders become pytest collectors; each Tier 1 check becomes an item under them.

Node ids read ``<skill path>::tier1::<check>``. Collection reads nothing but folder names, so it
stays cheap on every xdist worker; a skill is loaded once per process, when its first item runs.

A skill tree is untrusted (see ``roots.py``). pytest imports the ``conftest.py`` of every folder it
collects as a ``pytest.Directory``, so skill trees, skill folders and the folders on the way to them
are collected by file-system collectors that are *not* Directories (pytest never recurses into
them), and every node uses the rootdir's hooks: nothing in a tree is ever imported.
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from collections import Counter
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import gate, identity, state
from pytest_skilleval.checks import Check, CheckContext, unread_evidence
from pytest_skilleval.published import RESULT_PROPERTY as RESULT_PROPERTY  # re-exported (published.py: apart from this module)
from pytest_skilleval.results import CheckResult, Severity, Status, encodable
from pytest_skilleval.roots import ROOT_HOOKS, RootHooks, find_skills, is_skill_dir

__all__ = ["ROOT_HOOKS", "CheckItem", "RootHooks", "SkillDirectory", "SkillLinkWarning", "SkillPathway", "SkillTree", "is_skill_dir"]

#: Where a result's JSON dump may hide or hold a surrogate code point. ``json.dumps`` (ASCII escapes) writes
#: one as the escape backslash, ``ud``, 8-f and two hex digits, lower case, and only so; pydantic's JSON-mode
#: dump writes a dict key holding one as U+FFFD (each byte of its lossy UTF-8), which ``json.dumps`` writes as
#: backslash ``ufffd``. A character beyond the BMP (a pair of escapes), a U+FFFD of the skill's own text and a
#: literal backslash-u text match too: those take the exact path.
_MAY_ESCAPE_SURROGATE = re.compile(r"\\u(?:d[89a-f]|fffd)")


class _OutsideSkillHooks:
    """Mixin: hooks of the rootdir, the project's own, whatever folder the node lies in.

    ``session.gethookproxy(path)`` imports every ``conftest.py`` from ``path`` up to the confcutdir,
    and a node's default ``ihook`` is built from its own path: in a skill tree that would import the
    tree's files. The rootdir's conftests are the user's (pytest loaded them already)."""

    path: Path
    session: pytest.Session
    config: pytest.Config

    @property
    def skill_root(self) -> Path:
        raise NotImplementedError

    @property
    def ihook(self):  # type: ignore[no-untyped-def]
        hooks = self.config.stash.get(ROOT_HOOKS, None)
        return hooks.relay(self.session) if hooks is not None else self.session.gethookproxy(self.config.rootpath)


class _EncodableNodeId:
    """Mixin: a folder node whose path holds a surrogate (a name that is not valid UTF-8, decoded with
    ``surrogateescape``) or a backslash gets its name and node id escaped as the skill key is
    (:func:`pytest_skilleval.identity.escape`); ``path`` itself stays as it is, so the skill still loads. xdist's
    transport (execnet) cannot send a string that is not UTF-8 encodable: a worker's collected node ids holding
    one ended the whole run in INTERNALERROR with no report. A backslash is escaped too, so the escape stays
    injective (a folder named ``\\udcff`` is not the byte 0xff's); pytest 9's own id writes it as a ``/``.
    Other paths keep pytest's ids."""

    #: A skill folder that is the rootdir, or a named tree outside it, is named by its folder (see SkillDirectory).
    names_itself_at_the_top: bool = False

    def __init__(self, *, path: Path, parent: pytest.Collector, name: str | None = None, nodeid: str | None = None,
                 **kw: Any) -> None:
        if name is None and nodeid is None:
            if self.names_itself_at_the_top and _pytest_gives_no_path(parent, path):
                name = nodeid = identity.escape(path.name)
            elif identity.needs_escape(path.as_posix()):
                name, nodeid = _escaped_name_and_nodeid(parent, path)
        super().__init__(path=path, parent=parent, name=name, nodeid=nodeid, **kw)  # type: ignore[call-arg]


def _pytest_gives_no_path(parent: pytest.Collector, path: Path) -> bool:
    """Whether pytest's node id of the folder ``path`` would hold no path: ``.`` for the rootdir itself, and an
    empty one for a path argument outside the rootdir (its ids are relative to the argument)."""
    rootpath = parent.config.rootpath
    if path == rootpath:
        return True
    return rootpath not in path.parents and parent.session.isinitpath(path)


def _escaped_name_and_nodeid(parent: pytest.Collector, path: Path) -> tuple[str, str]:
    """What pytest would name the folder node ``path`` under ``parent`` (its path below the parent's, and its
    path below the rootdir as node id, else the parent's id and the name), escaped as an identity. Each raw part
    is escaped once: the parent's id is escaped already, and the escape of an escape is another name."""
    name = identity.escape(path.relative_to(parent.path).as_posix() if parent.path in path.parents else path.name)
    try:
        return name, identity.escape(path.relative_to(parent.config.rootpath).as_posix())
    except ValueError:
        base = parent.nodeid
        return name, f"{base}{'::' if '::' in base else '/'}{name}" if base else name


class SkillTree(_EncodableNodeId, _OutsideSkillHooks, pytest.File):
    """A folder holding skills at any depth, walked by this plugin (not pytest): only skill folders
    become nodes; its other files, ``conftest.py`` included, are never imported or collected."""

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Collector]:
        def ignored(path: Path) -> bool:  # --ignore, norecursedirs, the project's pytest_ignore_collect
            return bool(self.ihook.pytest_ignore_collect(collection_path=path, config=self.config))

        links: list[Path] = []
        for skill in find_skills(self.path, ignored, links.append):
            yield SkillDirectory.from_parent(self, path=skill)
        if getattr(self.config, "workerinput", {}).get("workerid", "gw0") != "gw0":
            return  # every xdist worker collects the same tree: one of them says it
        for link in links:  # not followed (a skill is never read through a link), but not passed over in silence
            real = Path(os.path.realpath(link))
            if is_skill_dir(real):
                self.warn(SkillLinkWarning(f"{link.relative_to(self.config.rootpath) if self.config.rootpath in link.parents else link} "
                                           f"is a symbolic link to the skill folder {real}: not evaluated (links are not followed "
                                           f"into skills, docs/security.md); name {real} to evaluate it"))


class SkillLinkWarning(pytest.PytestWarning):
    """A skill folder a catalog links to: the link is not followed, so the skill is not evaluated."""


class SkillPathway(_EncodableNodeId, _OutsideSkillHooks, pytest.File):
    """A folder between the project and a skill tree outside it: yields only the next folder on the
    way to each tree, so pytest never collects (or imports) anything else around the tree."""

    def __init__(self, *, trees: tuple[Path, ...], **kw: Any) -> None:
        super().__init__(**kw)
        self.trees = trees

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Collector]:
        steps = sorted({self.path / t.relative_to(self.path).parts[0] for t in self.trees if self.path in t.parents})
        for step in steps:
            if step in self.trees:
                yield (SkillDirectory if is_skill_dir(step) else SkillTree).from_parent(self, path=step)
            else:
                yield SkillPathway.from_parent(self, path=step, trees=self.trees)


class SkillDirectory(_EncodableNodeId, _OutsideSkillHooks, pytest.File):
    """One skill folder; its children are one collector per tier. A ``File`` on purpose: see above.

    A skill that is the rootdir (``cd skill; pytest --skills=.``) or a path argument outside it
    (``--skills=/abs/skill``) would get the node id ``.`` or an empty one, and its items ``.::tier1::schema``:
    its id is its folder's name, which is also its skill key, card folder and JUnit class."""

    names_itself_at_the_top = True

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        try:
            run = state.run_state(self.config)
        except pytest.UsageError:  # kept: the run ends with it once collection is over (state.end_on_usage_error)
            return []
        run.register_skill(self.path, self.nodeid)
        for tier in (1, 2):
            checks = run.selected_checks(tier=tier)
            if checks:
                yield TierCollector.from_parent(self, name=f"tier{tier}", tier=tier, checks=checks)
        # More tiers plug in here (Tier 3 when opted in), so this module never imports them.
        for contributed in self.ihook.pytest_skilleval_skill_collectors(parent=self):
            yield from contributed or ()


#: Per tier, the marks of its collector, made once a run (by name each was a lookup in pytest's registered markers, twice a skill).
TIER_MARKS = pytest.StashKey[dict[int, tuple[pytest.MarkDecorator, ...]]]()


def _tier_marks(config: pytest.Config, tier: int) -> tuple[pytest.MarkDecorator, ...]:
    made = config.stash.setdefault(TIER_MARKS, {})
    if tier not in made:
        made[tier] = (pytest.mark.skilleval, getattr(pytest.mark, f"tier{tier}"))
    return made[tier]


class TierCollector(_OutsideSkillHooks, pytest.Collector):
    def __init__(self, *, tier: int, checks: list[Check], **kw: Any) -> None:
        super().__init__(**kw)
        self.tier = tier
        self.checks = checks
        for mark in _tier_marks(self.config, tier):
            self.add_marker(mark)

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Item]:
        for check in self.checks:
            yield CheckItem.from_parent(self, name=check.name, check=check)


class CheckFailed(Exception):
    """Raised by a check item whose result the gate failed; rendered without a traceback."""

    def __init__(self, result: CheckResult, verdict: gate.Verdict, details: str = "") -> None:
        super().__init__(verdict.reason)
        self.result, self.verdict, self.details = result, verdict, details


#: On a skill's collector: the rootdir-relative path of its SKILL.md, as pytest's ``Item.location`` gives it.
SKILL_FILE_LOCATION = pytest.StashKey[str]()


class CheckItem(_OutsideSkillHooks, pytest.Item):
    def __init__(self, *, check: Check, **kw: Any) -> None:
        super().__init__(**kw)
        self.check = check
        # "skilleval" and "tierN" come from the TierCollector above (markers and keywords are inherited);
        # marking each item again was 30,000 add_marker calls for 1,000 skills.

    @property
    def skill_root(self) -> Path:
        return self.path

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path / "SKILL.md", None, f"{self.parent.parent.name}::tier{self.check.tier}::{self.check.name}"  # type: ignore[union-attr]

    @cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's own location, its file part worked out once per skill: every item of a skill names the
        same SKILL.md, and pytest made the path absolute and relative to the rootdir again for each item
        (0.18 s of CPU over the corpus's 9,802 items)."""
        skill = self.parent.parent  # type: ignore[union-attr]
        where = skill.stash.get(SKILL_FILE_LOCATION, None)
        if where is None:
            pytests_own = getattr(pytest.Item.location, "func", None)  # a functools.cached_property in pytest 7-9
            if pytests_own is None:  # cached some other way: take it as it is, per item
                where, line, domain = super().location
                return encodable(where), line, domain
            # escaped: a folder name that is not UTF-8 would cost an xdist run every report (see _EncodableNodeId)
            where = skill.stash[SKILL_FILE_LOCATION] = encodable(pytests_own(self)[0])
        return where, None, f"{skill.name}::tier{self.check.tier}::{self.check.name}"

    def runtest(self) -> None:
        run = state.run_state(self.config)
        ctx = CheckContext(settings=run.settings, batcher=run.batcher)
        started = time.perf_counter()
        details = ""
        skill = None
        try:
            skill = run.skill(self.path)
            result = unread_evidence(self.check, skill, ctx, self.check.run(skill, ctx), run.policy)
        except Exception as exc:  # a broken check is an ERROR result with its traceback, never a pass
            details = encodable(traceback.format_exc())
            what = "check crashed" if skill is not None else "skill could not be loaded"
            result = CheckResult.error(self.check.name, f"{what}: {type(exc).__name__}: {exc}", tier=self.check.tier)
        duration_s = round(time.perf_counter() - started, 6)
        final, verdict = self._publish_clean(run, skill, result, duration_s) or self._publish_escaped(run, skill, result, duration_s)
        if details:
            self.add_report_section("call", "traceback", details)
        if verdict.outcome == "failed":
            raise CheckFailed(final, verdict, details)
        if verdict.outcome == "skipped":
            pytest.skip(verdict.reason)

    def _publish_escaped(self, run: state.RunState, skill: Any, result: CheckResult,
                         duration_s: float) -> tuple[CheckResult, gate.Verdict]:
        """Decide and publish ``result`` made encodable first: a string no codec can encode would cost the
        whole run its reports (xdist, report writers). The final result and the verdict."""
        result = result.encodable().model_copy(update={"duration_s": duration_s})
        verdict = gate.decide(result, blocking=self.check.blocking, policy=run.policy)
        final = result.model_copy(update={"status": verdict.status,
                                          "reason": result.reason if verdict.status is not Status.PASSED else None})
        self._publish(run, skill, final, verdict)
        return final, verdict

    def _publish_clean(self, run: state.RunState, skill: Any, result: CheckResult,
                       duration_s: float) -> tuple[CheckResult, gate.Verdict] | None:
        """What :meth:`_publish_escaped` publishes, from one dump of the result, when no string of it can hold a
        surrogate (nearly always; the escaping's own dump, walk and copies were a third of this plugin's CPU
        per item): the final result and the verdict, the final result made only when the item fails (its
        text is made from it; else the result as the check gave it). None, having published nothing, when a
        string may hold one (or the result does not dump): :meth:`_publish_escaped` then does it all."""
        verdict = gate.decide(result, blocking=self.check.blocking, policy=run.policy)
        reason = result.reason if verdict.status is not Status.PASSED else None
        try:
            data = result.model_dump(mode="json")
            data.update(duration_s=duration_s, status=verdict.status.value, reason=reason)
            envelope = {"skill": run.skill_key(self.path), "skill_name": skill.name if skill is not None else self.path.name,
                        "skill_path": str(self.path), "blocking": verdict.blocking, "result": data}
            text = json.dumps(envelope, sort_keys=True)
        except Exception:  # noqa: BLE001 - the exact path below meets (and reports) whatever this was
            return None
        if _MAY_ESCAPE_SURROGATE.search(text) is not None:
            return None
        properties = self.user_properties
        properties.append((RESULT_PROPERTY, text))
        properties.append(("skilleval.status", verdict.status.value))
        if result.score is not None:
            properties.append(("skilleval.score", f"{result.score:g}"))
        if result.findings:
            counts = Counter(f.severity for f in result.findings)
            properties.extend((f"skilleval.findings.{sev.value.lower()}", str(counts[sev])) for sev in Severity if counts[sev])
        if verdict.outcome != "failed":
            return result, verdict
        return result.model_copy(update={"duration_s": duration_s, "status": verdict.status, "reason": reason}), verdict

    def _publish(self, run: state.RunState, skill: Any, result: CheckResult, verdict: gate.Verdict) -> None:
        """Put the result where the xdist controller (and JUnit) can see it: user_properties."""
        counts = result.severity_counts()
        envelope = {
            "skill": run.skill_key(self.path),  # escaped where it is made (state.RunState._key_for)
            "skill_name": encodable(skill.name if skill is not None else self.path.name),
            "skill_path": encodable(str(self.path)),
            "blocking": verdict.blocking,
            "result": result.model_dump(mode="json"),
        }
        self.user_properties.append((RESULT_PROPERTY, json.dumps(envelope, sort_keys=True)))
        self.user_properties.append(("skilleval.status", result.status.value))
        if result.score is not None:
            self.user_properties.append(("skilleval.score", f"{result.score:g}"))
        for sev, n in counts.items():
            if n:
                self.user_properties.append((f"skilleval.findings.{sev}", str(n)))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return format_failure(excinfo.value.result, excinfo.value.verdict, excinfo.value.details)
        return encodable(str(super().repr_failure(excinfo, style=style)))


def format_failure(result: CheckResult, verdict: gate.Verdict, details: str = "") -> str:
    lines = [f"{result.check}: {verdict.status.value} — {verdict.reason}"]
    if result.reason and result.reason not in verdict.reason:
        lines.append(f"  {result.reason}")
    for f in result.sorted_findings():
        lines.append("  " + f.format_line().replace("\n", "\n  "))
    for d in result.deductions:
        lines.append(f"  -{d.points:<3} {d.dimension}: {d.reason} [{d.rule}]")
    if details:
        lines.append(details.rstrip())
    return "\n".join(lines)
