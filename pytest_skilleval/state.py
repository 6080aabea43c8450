"""Per-process run state, kept in ``config.stash``: settings, the check registry, loaded skills."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_skilleval import batch
    from pytest_skilleval.checks import Check, CheckRegistry
    from pytest_skilleval.config import Settings
    from pytest_skilleval.skill import Skill

# The modules a run state works with are imported when one is made (``plugin.py`` makes it once a run
# has skills): every pytest run reads ``RUN_STATE`` below, and most never make one.


class RunState:
    def __init__(self, config: pytest.Config, settings: Settings, registry: CheckRegistry) -> None:
        from pytest_skilleval import gate, safefs

        self.config = config
        self.settings = settings
        self.registry = registry
        self.policy = gate.Policy(fail_on=settings.fail_on, allow_incomplete=settings.allow_incomplete)
        self.limits = safefs.Limits(max_file_bytes=settings.max_file_bytes)
        self._selected: dict[int, list[Check]] = {}
        self._keys: dict[Path, str] = {}
        self._skills: dict[Path, Skill] = {}
        self.batcher = self._make_batcher()

    def _make_batcher(self) -> batch.Batcher:
        from pytest_skilleval import batch

        workerinput = getattr(self.config, "workerinput", None)
        cache_dir = self.settings.cache_dir
        index, count, coord = 0, 1, None
        if workerinput is not None:
            index = int(str(workerinput.get("workerid", "gw0")).lstrip("gw") or 0)
            count = int(workerinput.get("workercount", 1))
            if cache_dir is not None:
                coord = cache_dir / "runs" / str(workerinput.get("testrunuid", "run"))
        return batch.Batcher(load_skill=self.skill_for_batch, cache=batch.ResultCache(cache_dir) if cache_dir else None,
                             coord_dir=coord, worker_index=index, worker_count=count)

    def selected_checks(self, tier: int) -> list[Check]:
        if tier not in self._selected:
            self._selected[tier] = self.registry.select(self.settings.checks, tier=tier)
        return self._selected[tier]

    def register_skill(self, root: Path, nodeid: str) -> None:
        self._keys.setdefault(root, self._key_for(root, nodeid))

    def _key_for(self, root: Path, nodeid: str) -> str:
        """A stable, readable id: the path below the --skills root that holds the skill."""
        best: Path | None = None
        for base in self.settings.skill_paths:
            if root == base or base in root.parents:
                if best is None or len(base.parts) > len(best.parts):
                    best = base
        if best is not None:
            rel = root.relative_to(best)
            return rel.as_posix() if rel.parts else root.name
        rootpath = self.config.rootpath
        if rootpath in root.parents:
            return root.relative_to(rootpath).as_posix()
        rel = os.path.relpath(root, self.config.invocation_params.dir).replace(os.sep, "/")
        # '..' parts would name folders outside the report dir; the report writer drops them too.
        return "/".join(p for p in rel.split("/") if p not in ("", ".", "..")) or root.name

    def skill_key(self, root: Path) -> str:
        return self._keys.get(root) or self._key_for(root, "")

    def skill(self, root: Path) -> Skill:
        """The skill an item runs on, loaded once and kept until :meth:`release`."""
        if root not in self._skills:
            from pytest_skilleval.skill import Skill

            self._skills[root] = Skill(root=root, key=self.skill_key(root), limits=self.limits)
        return self._skills[root]

    def skill_for_batch(self, root: Path) -> Skill:
        """A skill for a scanner batch: the loaded one if an item holds it, else a copy that is not
        kept. A batch covers skills whose items may run on another worker: keeping them all would
        hold a whole share of the catalog (texts, parsed Markdown) for the rest of the session."""
        from pytest_skilleval.skill import Skill

        return self._skills.get(root) or Skill(root=root, key=self.skill_key(root), limits=self.limits)

    def loaded(self) -> list[Path]:
        """Roots of the skills held in memory right now."""
        return list(self._skills)

    def release(self, root: Path) -> None:
        """Forget a skill once its last item in this process has run: memory stays bounded by the
        skills in flight, not by the catalog. A later item of the same skill loads it again."""
        self._skills.pop(root, None)

    def skill_roots(self) -> list[Path]:
        return list(self._keys)


#: The run's settings, read (and checked) at ``pytest_configure`` in every run.
SETTINGS = pytest.StashKey["Settings"]()
#: The run state, once made (:func:`run_state`): a run that never meets a skill has none.
RUN_STATE = pytest.StashKey[RunState]()


def run_state(config: pytest.Config) -> RunState:
    """The run state, made on first need: at start-up when the run names skills or a check selection
    (``plugin.py``), else when collection meets the first skill folder. A pytest run of the project's own
    tests never imports the checks, the skill model and the batcher."""
    run = config.stash.get(RUN_STATE, None)
    if run is None:
        run = config.stash[RUN_STATE] = _make_run_state(config)
    return run


def is_check_item(item: pytest.Item) -> bool:
    """One of this plugin's check items (``collect.CheckItem``). No check item exists before ``collect.py``
    is imported, and a run that meets no skill never imports it: asked of every item, this imports nothing."""
    collect = sys.modules.get("pytest_skilleval.collect")
    return collect is not None and isinstance(item, collect.CheckItem)


def _builtin_check_modules() -> list[str]:
    """Every module of the ``tier1`` package is a check plugin: adding a check is adding a file."""
    from pytest_skilleval import tier1

    return sorted(f"{tier1.__name__}.{m.name}" for m in pkgutil.iter_modules(tier1.__path__) if not m.name.startswith("_")) + [
        "pytest_skilleval.tier2.checks"]


def _make_run_state(config: pytest.Config) -> RunState:
    """Register the built-in checks, gather every plugin's checks and validate the selection
    (``--skilleval-checks``); a bad selection or a clash of names is a usage error."""
    from pytest_skilleval.checks import CheckRegistry, UsageError

    for name in _builtin_check_modules():
        if not config.pluginmanager.has_plugin(name):
            config.pluginmanager.register(importlib.import_module(name), name)
    registry = CheckRegistry()
    try:
        for contributed in config.hook.pytest_skilleval_checks(config=config):
            for check in contributed or ():
                registry.add(check)
        run = RunState(config, config.stash[SETTINGS], registry)
        run.selected_checks(tier=1)  # validate --skilleval-checks before any item runs
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    return run
