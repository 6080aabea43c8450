"""What lives for the whole run leaves the cyclic garbage collector's full passes.

A full pass of CPython's collector walks every tracked object: after the imports of a run that is
some 200,000 (modules, classes, functions), after collecting 1,000 skills many more (13,000 items and
their nodes). pytest makes two such passes at the end of every run (to report unraisable exceptions)
and the interpreter makes more as a run allocates: they were 17 % of the CPU of a one-skill run and
24 % of collecting 1,000 skills. ``gc.freeze()`` moves what exists into a permanent generation the
passes skip (it only moves list heads); ``gc.unfreeze()`` in ``pytest_unconfigure``, after pytest's
first final pass, gives it all back, so the last pass still finds every cycle and every unraisable
exception, and nothing outlives the run. When the interpreter then exits, its own final collections
would walk it all again (over the corpus ~1.0 s of CPU after the last report was written): when the
run was the process's own pytest command (``pytest ...``, ``python -m pytest ...``: no caller's code
runs after it) and a frozen one, the heap is frozen again at exit (:func:`_freeze_at_exit`).

While items run, every ``FREEZE_EVERY`` items what they left behind and is still alive joins the
frozen (:func:`freeze_kept`).

Frozen only in a run of skills alone (skill trees named, no other test path): the imports at the
end of ``pytest_configure``, then the collected tree once collection is over. Any other run keeps the
collector as it was: the plugin is loaded by every pytest run in the environment, and a user's
conftests are imported before ``pytest_configure``, so their cycles and ``gc.get_objects()`` must
stay the collector's; and should collection bring an item that is not a skill check after all, what
was frozen is given back before the first item runs. Never in a run inside another run (pytester's
in-process runs: the outer run froze, the inner run's objects must be collected as usual), nor when
the collector is off or something else froze objects already.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

import pytest

#: Whether this run froze the heap (and so thaws it at the end).
FROZE = pytest.StashKey[bool]()

#: Runs configured and not yet unconfigured in this process: the collector is per process, so this is too.
_active = 0
#: Whether the last run of this process was a frozen one and the pytest command itself (so the heap is
#: frozen again at exit, :func:`_freeze_at_exit`).
_last_run_froze = False


def freeze_imports(config: pytest.Config, *, skills_only: bool) -> None:
    """At the end of ``pytest_configure``: the imports leave the full passes, in a run of skills alone."""
    global _active, _last_run_froze
    _active += 1
    _last_run_froze = False
    config.stash[FROZE] = False
    if skills_only and _active == 1 and gc.isenabled() and gc.get_freeze_count() == 0:
        gc.freeze()
        config.stash[FROZE] = True


def freeze_collected(session: pytest.Session, ours: type[pytest.Item]) -> None:
    """After collection: the collected tree too when every item is one of ``ours``; else everything back."""
    if not session.config.stash.get(FROZE, False):
        return
    if session.items and all(isinstance(i, ours) for i in session.items):
        gc.freeze()
    else:
        gc.unfreeze()
        session.config.stash[FROZE] = False


#: Items between two freezes of what a frozen run has kept so far (:func:`freeze_kept`).
FREEZE_EVERY = 500
_ITEMS_RUN = pytest.StashKey[int]()


def freeze_kept(config: pytest.Config) -> None:
    """After each item of a frozen run; every ``FREEZE_EVERY`` items what is still alive joins the frozen.

    A run keeps what its items leave (pytest's reports, above all), so each full pass walked more: over
    the corpus, 25 passes grew from 23 to 100 ms, 1.3 s of CPU. A full pass over what is not frozen
    (only what was made since the last freeze) first frees the garbage among it; what is frozen and
    dies later is freed by reference counting as ever, and a cycle among it at the thaw."""
    if not config.stash.get(FROZE, False):
        return
    done = config.stash[_ITEMS_RUN] = config.stash.get(_ITEMS_RUN, 0) + 1
    if done % FREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()


def thaw(config: pytest.Config) -> None:
    """In ``pytest_unconfigure``, last: everything frozen goes back to the collector's oldest generation."""
    global _active, _last_run_froze
    if FROZE not in config.stash:  # pytest_configure did not get this far
        return
    _active -= 1
    if config.stash[FROZE]:
        gc.unfreeze()
        config.stash[FROZE] = False
        _last_run_froze = _is_the_pytest_command(config)


def _is_the_pytest_command(config: pytest.Config) -> bool:
    """Whether this run is the process's own ``pytest`` command, run on its own arguments: after it comes
    only the exit. A script that calls ``pytest.main()`` goes on, and its later cycles must be collected."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    entry = spec.name if spec is not None else os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0]
    return entry in ("pytest.__main__", "py.test.__main__", "pytest", "py.test") and tuple(config.invocation_params.args) == tuple(sys.argv[1:])


def _freeze_at_exit() -> None:
    """At interpreter exit, after a frozen run: what is left stays out of the interpreter's final passes.

    Python does not promise finalizers of objects alive at exit; what the run needs done at exit is
    done by exit hooks (logging's flush, temporary directories), which all still run. Only when the
    last run of the process was a run of skills alone and the pytest command itself, and no run is
    still going: after a run with a user's tests, their cycles (a conftest's open file, say), and after
    a script's ``pytest.main()`` what the script made next, are collected at exit as ever."""
    if _last_run_froze and _active == 0:
        gc.freeze()


atexit.register(_freeze_at_exit)  # does nothing unless the last run asked for it (_last_run_froze)
