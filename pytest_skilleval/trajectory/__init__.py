"""Trajectories: what an agent run did, parsed from any harness into one model.

    from pytest_skilleval.trajectory import load_trajectory
    traj = load_trajectory("run.jsonl", request_log="run.requests.jsonl")
    [s.name for s in traj.selections()]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilleval import lazyexports

if TYPE_CHECKING:
    from pytest_skilleval.trajectory.builder import TrajectoryBuilder
    from pytest_skilleval.trajectory.model import (
        CatalogSkill,
        InvocationMethod,
        InvocationStatus,
        Message,
        SkillCatalog,
        SkillInvocation,
        SkillSelection,
        ToolCall,
        Trajectory,
        TrajectoryParseError,
        Usage,
        skill_key,
    )
    from pytest_skilleval.trajectory.registry import ParserRegistry, TrajectoryParser, UnknownFormatError, sniff_objects
    from pytest_skilleval.trajectory.tools import ParseLimits

#: Each public name and the module that defines it. Imported on first use: the report model reads
#: ``trajectory.model`` (selection records), and a run that parses no transcript must not pay for the
#: builder, the registry and every harness's parser that importing them all here would cost.
_EXPORTS = {"TrajectoryBuilder": "builder",
            **dict.fromkeys(("CatalogSkill", "InvocationMethod", "InvocationStatus", "Message", "SkillCatalog", "SkillInvocation",
                             "SkillSelection", "ToolCall", "Trajectory", "TrajectoryParseError", "Usage", "skill_key"), "model"),
            **dict.fromkeys(("ParserRegistry", "TrajectoryParser", "UnknownFormatError", "sniff_objects"), "registry"),
            "ParseLimits": "tools"}


def default_registry() -> ParserRegistry:
    """The built-in parsers; the pytest plugin adds those contributed through the hook."""
    from pytest_skilleval.trajectory.parsers import BUILTIN_PARSERS
    from pytest_skilleval.trajectory.registry import ParserRegistry

    return ParserRegistry(p() for p in BUILTIN_PARSERS)


def load_trajectory(path: str | Path, *, format: str | None = None, request_log: str | Path | None = None,
                    registry: ParserRegistry | None = None, limits: ParseLimits | None = None) -> Trajectory:
    """Parse one transcript file (streamed). ``format``: a parser name, or None to sniff."""
    return (registry or default_registry()).parse_file(path, format=format, request_log=request_log, limits=limits)


__all__ = [
    "CatalogSkill", "InvocationMethod", "InvocationStatus", "Message", "ParseLimits", "ParserRegistry", "SkillCatalog",
    "SkillInvocation", "SkillSelection", "ToolCall", "Trajectory", "TrajectoryBuilder", "TrajectoryParseError", "TrajectoryParser",
    "UnknownFormatError", "Usage", "default_registry", "load_trajectory", "skill_key", "sniff_objects",
]


__getattr__ = lazyexports.exports(__name__, _EXPORTS)
