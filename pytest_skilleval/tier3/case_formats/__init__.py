"""The shapes of eval files found in real skills, one module per family, and the dispatcher.

A shape only finds the case objects in a parsed file and the file-level facts (which skill the
file is for, what environment it needs); turning a case object into an :class:`EvalCase` is the
same for every shape and lives in :mod:`.normalise`. Adding a shape is adding a module and a line
to :data:`SHAPES`.
"""

from __future__ import annotations

from typing import Any

from pytest_skilleval.tier3.case_formats import agentskills, legacy, scenarios
from pytest_skilleval.tier3.case_formats.base import RawCase, Shape, Split

#: Tried in order; the first whose ``matches`` accepts the parsed data reads the file.
SHAPES: tuple[Shape, ...] = (agentskills.SHAPE, scenarios.SHAPE, *legacy.SHAPES)
#: Every shape name a file can be counted under (``jsonl`` is a list shape read line by line).
SHAPE_NAMES = tuple(s.name for s in SHAPES) + ("jsonl",)

__all__ = ["SHAPES", "SHAPE_NAMES", "RawCase", "Shape", "Split", "detect"]


def detect(data: Any) -> Shape | None:
    return next((shape for shape in SHAPES if shape.matches(data)), None)
