"""The built-in trajectory parsers, one module per harness."""

from __future__ import annotations

from pytest_skilleval.trajectory.parsers.claude_code import ClaudeCodeParser
from pytest_skilleval.trajectory.parsers.codex import CodexParser
from pytest_skilleval.trajectory.parsers.gemini_cli import GeminiCliParser
from pytest_skilleval.trajectory.parsers.generic import GenericParser
from pytest_skilleval.trajectory.parsers.google_adk import GoogleAdkParser
from pytest_skilleval.trajectory.parsers.opencode import OpenCodeParser
from pytest_skilleval.trajectory.parsers.openhands import OpenHandsParser
from pytest_skilleval.trajectory.parsers.strands import StrandsParser
from pytest_skilleval.trajectory.registry import TrajectoryParser

BUILTIN_PARSERS: tuple[type[TrajectoryParser], ...] = (
    ClaudeCodeParser, CodexParser, OpenCodeParser, GoogleAdkParser, GeminiCliParser, OpenHandsParser, StrandsParser, GenericParser,
)

__all__ = ["BUILTIN_PARSERS", "ClaudeCodeParser", "CodexParser", "GeminiCliParser", "GenericParser", "GoogleAdkParser",
           "OpenCodeParser", "OpenHandsParser", "StrandsParser"]
