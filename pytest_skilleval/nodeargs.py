"""A skill item's node id given as a path argument (``skills/pdf-tools::tier1::schema``) selects that item.

pytest prints node ids in its failure lines, and running one again is how a user looks at a failure twice.
pytest 9 refuses ``::`` parts on a directory argument, and a skill is a folder: such an argument is routed to
its skill folder without the parts (:func:`route`), and once collected, the skill's items the parts do not
name are deselected (:func:`deselect`), as ``-k`` would. Arguments add up as pytest's do: a skill also named
whole, by itself or by a tree holding it, runs whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

#: skill folder -> the node-id parts below it that arguments named, with each argument as written
ITEM_ARGUMENTS = pytest.StashKey[dict[Path, dict[tuple[str, ...], str]]]()


def parts_of(arg: str) -> tuple[str, ...]:
    """The node-id parts after a path argument's file-system part (``a/b::tier1::x`` -> ``("tier1", "x")``)."""
    return tuple(arg.split("::")[1:])


def route(config: pytest.Config, skill: Path, arg: str) -> str:
    """The argument to collect for ``arg``, which names the skill folder ``skill`` with node-id parts: its path
    alone. What the parts name is kept for :func:`deselect`."""
    config.stash.setdefault(ITEM_ARGUMENTS, {}).setdefault(skill, {})[parts_of(arg)] = arg
    return arg.split("::", 1)[0]


def settle(config: pytest.Config, whole: Iterable[Path]) -> None:
    """Forget the item choices of every skill that a whole argument (the skill, or a tree above it) also names."""
    chosen = config.stash.get(ITEM_ARGUMENTS, {})
    roots = set(whole)
    for skill in [s for s in chosen if s in roots or not roots.isdisjoint(s.parents)]:
        del chosen[skill]


def _parts_below(item: pytest.Item, skill: Path) -> tuple[str, ...] | None:
    """The item's node-id parts below the node of the skill folder ``skill``; None when it is not that skill's."""
    for node in item.listchain():
        if isinstance(node, pytest.Collector) and node.path == skill and item.nodeid.startswith(node.nodeid + "::"):
            return tuple(item.nodeid[len(node.nodeid) + 2:].split("::"))
    return None


def deselect(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the items of a skill chosen by node id that no such argument names; an argument that names no
    item at all is a usage error, as pytest's ``not found`` is for a test file."""
    chosen = config.stash.get(ITEM_ARGUMENTS, {})
    if not chosen:
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    matched: set[str] = set()
    for item in items:
        for skill, wanted in chosen.items():
            below = _parts_below(item, skill)
            if below is not None:
                hits = [arg for parts, arg in wanted.items() if below[:len(parts)] == parts]
                matched.update(hits)
                (kept if hits else dropped).append(item)
                break
        else:
            kept.append(item)
    missing = [arg for wanted in chosen.values() for arg in wanted.values() if arg not in matched]
    if missing:
        raise pytest.UsageError(f"not found: {', '.join(missing)} (no item of that skill has this node id)")
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
