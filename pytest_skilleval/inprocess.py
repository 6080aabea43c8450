"""pytester's in-process runs, several in one process: the plugin's modules are imported up front.

Each ``pytester.runpytest_inprocess`` puts ``sys.modules`` back as it found it when the run ends. A
plugin that imports its machinery when a run first needs it (``state.run_state``, the report writers,
the Tier 3 and selection records) would have it imported again by every such run, and some of it cannot
be: yaml's C loader is set up once per process (a second import makes checks crash with a
ConstructorError), and a pydantic model imported twice is two classes (a record made by one fails
validation against the other). Where pytester is loaded (a plugin author's tests, this project's own),
every module of the package is imported with it, before the first in-process run, as the plugin's
start-up did before it became lazy; a plain pytest run never loads pytester and pays nothing.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types

_done = False


def import_every_module() -> None:
    """Import each module of ``pytest_skilleval`` (scripts' ``__main__`` aside), once per process."""
    global _done
    if _done:
        return
    _done = True
    import pytest_skilleval

    for module in pkgutil.walk_packages(pytest_skilleval.__path__, f"{pytest_skilleval.__name__}."):
        if not module.name.endswith(".__main__"):
            importlib.import_module(module.name)
            _restore_export(module.name)


def _restore_export(name: str) -> None:
    """Importing a submodule sets its package's attribute of that name to the module. A package that
    exports a function named like one of its modules (``tier3.grading`` exports ``grade`` from its module
    ``grade``, lazyexports.py) gets the export back at once, before a module imported next takes the
    submodule for the function (``from pytest_skilleval.tier3.grading import grade`` in ``tier3.trial``)."""
    parent, _, attr = name.rpartition(".")
    package = sys.modules.get(parent)
    if attr in (getattr(package, "_EXPORTS", None) or {}) and isinstance(getattr(package, attr, None), types.ModuleType):
        delattr(package, attr)
        getattr(package, attr)  # the package's own __getattr__ (lazyexports.exports) imports and sets the export
