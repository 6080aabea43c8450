"""Rivals: the other skills a trigger trial installs beside the skill under test.

An agent chooses among the skills it is offered, so a trigger is measured among rivals: the other
collected skills, or a catalog folder (``--skilleval-trigger-rivals DIR``). Beyond
``--skilleval-trigger-rivals-max`` (default 20) the nearest by description similarity are kept —
``name: description`` embedded with the Tier 2 short-text embedder — so the rivals most likely to
steal a query are always present. ``0`` installs none. The set is identified by a digest over the
rivals' names and content digests, recorded with every trial.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilleval.skill import Skill
from pytest_skilleval.trajectory import skill_key

if TYPE_CHECKING:
    import numpy as np

Embed = Callable[[Sequence[str]], "np.ndarray"]


@dataclass(frozen=True)
class RivalSet:
    skills: tuple[Skill, ...] = ()
    pool: int = 0  # how many candidates there were before the cap
    ranked_by: str | None = None  # the embedder's id when the cap chose by similarity

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    @property
    def digest(self) -> str:
        payload = sorted((s.name, s.content_digest) for s in self.skills)
        return "sha256:" + hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def catalog_skills(folder: Path, limit: int = 5000) -> list[Path]:
    """Skill folders (holding a SKILL.md) at any depth under ``folder``; hidden and node_modules skipped."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        if "SKILL.md" in filenames or "skill.md" in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []  # a skill's own folders are not more skills
            if len(found) >= limit:
                break
    return found


def choose_rivals(skill: Skill, pool: Iterable[Skill], max_rivals: int, embed: Embed | None = None,
                  embedder_id: str | None = None) -> RivalSet:
    """The rivals of ``skill`` from ``pool``: never itself or a skill of the same name (only one of them could
    be installed), at most ``max_rivals``, nearest descriptions first when there are more."""
    mine = skill_key(skill.name)
    seen: set[str] = {mine}
    candidates: list[Skill] = []
    for other in pool:
        key = skill_key(other.name)
        if other.root == skill.root or key in seen or not other.name:
            continue
        seen.add(key)
        candidates.append(other)
    if max_rivals <= 0:
        return RivalSet((), len(candidates))
    if len(candidates) <= max_rivals or embed is None:
        return RivalSet(tuple(sorted(candidates, key=lambda s: s.name)[:max_rivals]), len(candidates))
    import numpy as np  # here, not at the top: every run imports this module, few rank rivals

    texts = [f"{s.name}: {s.description}" for s in (skill, *candidates)]
    vectors = np.asarray(embed(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    scores = vectors[1:] @ vectors[0]
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].name))
    return RivalSet(tuple(candidates[i] for i in order[:max_rivals]), len(candidates), embedder_id)
