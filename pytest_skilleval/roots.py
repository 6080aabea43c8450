"""Skill trees: which paths are untrusted, and keeping pytest's own machinery out of them.

pytest imports code from the folders it is pointed at: the *initial conftests* of every path
argument (before any plugin hook about collection runs), the ``conftest.py`` of every folder it
collects as a ``pytest.Directory``, and every ``test_*.py`` module it collects. A skill tree — a
skill folder, or a folder holding skills at any depth — is untrusted, so none of that may happen
in one:

* ``--skills PATH`` and ini ``skilleval_paths`` name skill trees;
* a path argument is a skill tree when it is a skill folder, lies inside one, or holds skills
  (and is not the project itself: the rootdir, the invocation folder or one of their ancestors).
  It is taken away from pytest's initial-conftest loading (:func:`take_over_arguments`) and
  collected like ``--skills``;
* a skill tree is collected only by this plugin's collectors (``collect.py``), which walk it
  themselves and are never ``Directory`` nodes, and every node in or on the way to a tree uses the
  rootdir's hooks: no ``conftest.py`` at or below a tree is imported, no module in it is collected.

The project's own folders (the rootdir, the invocation folder, test paths the user names) keep
pytest's normal behaviour: their ``conftest.py`` files are the user's code.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SKILL_FILES = ("SKILL.md", "skill.md")
#: Folders never searched for skills (and never entered by the walk).
SKIPPED_NAMES = ("node_modules", "__pycache__")


def is_skill_dir(path: Path) -> bool:
    """A real folder with an entry named SKILL.md (of any kind: a FIFO or a folder named SKILL.md
    still makes a skill, which the ``files`` check then fails with the reason)."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    return any(os.path.lexists(path / name) for name in SKILL_FILES)


def skipped_name(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_NAMES


def enclosing_skill(path: Path) -> Path | None:
    """The skill folder that is ``path`` or holds it, or None."""
    for candidate in (path, *path.parents):
        if is_skill_dir(candidate):
            return candidate
    return None


def find_skills(root: Path, ignore: Callable[[Path], bool] = lambda _p: False,
                linked: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Skill folders under ``root`` (``root`` itself included), in name order, without entering a
    skill, a hidden folder, ``node_modules`` or a symbolic link (each link met is passed to ``linked``).
    Iterative: depth costs no stack."""
    stack = [root]
    while stack:
        folder = stack.pop()
        if is_skill_dir(folder):
            yield folder
            continue
        try:
            with os.scandir(folder) as entries:
                listed = [e for e in entries if not skipped_name(e.name)]
        except OSError:
            continue
        subdirs = sorted(Path(e.path) for e in listed if e.is_dir(follow_symlinks=False))
        if linked is not None:
            for e in sorted((e for e in listed if e.is_symlink()), key=lambda e: e.name):
                linked(Path(e.path))
        stack.extend(p for p in reversed(subdirs) if not ignore(p))


def holds_skills(root: Path) -> bool:
    return next(find_skills(root), None) is not None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass(frozen=True)
class Project:
    """The folders that are the user's own: the rootdir, the invocation folder and their ancestors."""

    rootpath: Path
    invocation_dir: Path

    def owns(self, path: Path) -> bool:
        return any(_within(anchor, path) for anchor in (self.rootpath, self.invocation_dir))


def skill_tree_of_argument(path: Path, project: Project) -> Path | None:
    """The skill tree a path argument names (to be collected like ``--skills``), or None for an
    ordinary pytest path. Inside a skill: that skill, even when it is where pytest was started."""
    if not os.path.lexists(path):
        return None
    skill = enclosing_skill(path)
    if skill is not None:
        return skill
    if project.owns(path) or not path.is_dir():
        return None
    return path if holds_skills(path) else None


def linked_skill_tree(path: Path) -> Path | None:
    """Where ``path`` reaches a skill only through a symbolic link (it is one, or a folder on its way is): the
    real path there, or None. A skill is never read through a link (``safefs`` opens its root with
    ``O_NOFOLLOW``; docs/security.md), so such a path is refused with this name, not run as an ordinary
    pytest path (whose conftests pytest would import) nor searched and found empty."""
    real = Path(os.path.realpath(path))
    if real == path or not os.path.isdir(real):
        return None
    return real if enclosing_skill(real) is not None or holds_skills(real) else None


def link_refusal(path: Path, real: Path) -> str:
    return (f"{path} leads to skills only through a symbolic link ({real}); links are not followed into skills "
            f"(docs/security.md): name {real} instead")


def argument_path(invocation_dir: Path, arg: str) -> Path:
    """The file-system part of a collection argument (``path::node::parts``), absolute, links kept."""
    return Path(os.path.abspath(invocation_dir / arg.split("::", 1)[0]))


def take_over_arguments(early_config: pytest.Config) -> None:
    """Before pytest loads the initial conftests: drop skill trees from the arguments it anchors
    them on, and load no conftest at all when pytest was started inside a skill folder.

    Only the early namespace changes; the arguments themselves stay, so ``path::tier1::check``
    still selects items, and ``plugin.py`` routes them to this plugin's collectors."""
    namespace = early_config.known_args_namespace
    if getattr(namespace, "pyargs", False):
        return
    invocation_dir = early_config.invocation_params.dir
    project = Project(early_config.rootpath, invocation_dir)
    if enclosing_skill(invocation_dir) is not None:
        namespace.noconftest = True  # the invocation folder's conftest.py would be the skill's own
    args = list(getattr(namespace, "file_or_dir", None) or [])
    kept = []
    for arg in args:
        path = argument_path(invocation_dir, str(arg))
        if skill_tree_of_argument(path, project) is not None:
            continue
        real = None if project.owns(path) else linked_skill_tree(path)
        if real is not None:  # refused before pytest imports the conftests of the skill it leads to
            raise pytest.UsageError(link_refusal(path, real))
        kept.append(arg)
    if len(kept) != len(args):
        namespace.file_or_dir = kept


class RootHooks:
    """The rootdir's hooks (``session.gethookproxy(rootpath)``) for every node of a skill tree, kept until
    the next plugin, a conftest say, is registered: pytest's lookup stats the path and compares the loaded
    conftests on every call (and, when one does not apply, makes a new proxy whose hook callers are made
    again on each use), and an item asks for its hooks about a dozen times."""

    def __init__(self) -> None:
        self._relay: Any = None

    def relay(self, session: pytest.Session) -> Any:
        if self._relay is None:
            self._relay = session.gethookproxy(session.config.rootpath)
        return self._relay

    def pytest_plugin_registered(self) -> None:
        self._relay = None


#: The run's :class:`RootHooks` (registered as a plugin by ``plugin.py``, so that it sees registrations).
ROOT_HOOKS = pytest.StashKey[RootHooks]()
