"""Per-process run state, kept in ``config.stash``: settings, the check registry, loaded skills."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import identity

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
        """A stable, readable id: the path below the --skills root that holds the skill, escaped as an identity
        (identity.py): every report, record and card folder takes it from here, so none escapes it another way."""
        return identity.escape(self._path_key(root))

    def _path_key(self, root: Path) -> str:
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


#: A usage error met when the run state was made while collecting: the run ends with it once collection is over.
USAGE_ERROR = pytest.StashKey[str]()


def run_state(config: pytest.Config, *, at_startup: bool = False) -> RunState:
    """The run state, made on first need: at start-up when the run names skills or a check selection
    (``plugin.py``, ``at_startup``), else when collection meets the first skill folder. A pytest run of the
    project's own tests never imports the checks, the skill model and the batcher.

    A bad check selection or a clash of check names is a usage error either way: at start-up pytest's
    own; met while collecting, it is kept, every later call raises it again without trying anew, and
    :func:`end_on_usage_error` ends the run with it once collection is over."""
    run = config.stash.get(RUN_STATE, None)
    if run is None:
        if USAGE_ERROR in config.stash:
            raise pytest.UsageError(config.stash[USAGE_ERROR])
        try:
            run = config.stash[RUN_STATE] = _make_run_state(config)
        except pytest.UsageError as exc:
            if not at_startup:
                config.stash[USAGE_ERROR] = str(exc)
            raise
    return run


def end_on_usage_error(config: pytest.Config) -> None:
    """After collection: a usage error met while collecting ends the run as it would have at start-up
    (exit code 4, the message), not as one collection error per skill folder."""
    if USAGE_ERROR in config.stash:
        pytest.exit(f"ERROR: {config.stash[USAGE_ERROR]}", returncode=pytest.ExitCode.USAGE_ERROR)


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


#: The plugins registered when collection began (ids). The checks are theirs (and the built-in ones), as
#: when the run state is made at start-up: not those of a conftest collection has met by the time it
#: meets the first skill, which would depend on how folders sort.
PLUGINS_BEFORE_COLLECTION = pytest.StashKey[frozenset[int]]()


def note_plugins_before_collection(config: pytest.Config) -> None:
    """At the start of collection, unless the run state is made already."""
    if RUN_STATE not in config.stash:
        config.stash[PLUGINS_BEFORE_COLLECTION] = frozenset(id(p) for p in config.pluginmanager.get_plugins())


def _make_run_state(config: pytest.Config) -> RunState:
    """Register the built-in checks, gather every plugin's checks and validate the selection
    (``--skilleval-checks``); a bad selection or a clash of names is a usage error."""
    from pytest_skilleval.checks import CheckRegistry, UsageError

    builtin = _builtin_check_modules()
    for name in builtin:
        if not config.pluginmanager.has_plugin(name):
            config.pluginmanager.register(importlib.import_module(name), name)
    checks_hook = config.hook.pytest_skilleval_checks
    before = config.stash.get(PLUGINS_BEFORE_COLLECTION, None)
    if before is not None:  # made while collecting: the conftests collection has met since contribute nothing
        ours = {id(config.pluginmanager.get_plugin(name)) for name in builtin}
        late = [p for p in config.pluginmanager.get_plugins() if id(p) not in before and id(p) not in ours]
        if late:
            checks_hook = config.pluginmanager.subset_hook_caller("pytest_skilleval_checks", late)
    registry = CheckRegistry()
    try:
        for contributed in checks_hook(config=config):
            for check in contributed or ():
                registry.add(check)
        run = RunState(config, config.stash[SETTINGS], registry)
        run.selected_checks(tier=1)  # validate --skilleval-checks before any item runs
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    return run
