"""Trajectories: what an agent run did, parsed from any harness into one model.

    from pytest_skilleval.trajectory import load_trajectory
    traj = load_trajectory("run.jsonl", request_log="run.requests.jsonl")
    [s.name for s in traj.selections()]
"""

from __future__ import annotations

from pathlib import Path

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


def default_registry() -> ParserRegistry:
    """The built-in parsers; the pytest plugin adds those contributed through the hook."""
    from pytest_skilleval.trajectory.parsers import BUILTIN_PARSERS

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
