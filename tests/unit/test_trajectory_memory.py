"""A 50 MB transcript parses streamed, in bounded memory (benchmarks/trajectory_parse.py has the figures)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from selection_support import REPO

PEAK_LIMIT_MB = 16.0  # measured ~3.7 MB for 50 MB; the point is that it does not scale with the file


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trajectory_parse", REPO / "benchmarks" / "trajectory_parse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_a_50_mb_transcript_parses_in_bounded_memory(tmp_path: Path, harness: str) -> None:
    b = bench()
    path = tmp_path / "big.jsonl"
    lines = b.write_transcript(path, 50, harness)
    assert path.stat().st_size >= 50 * 1024 * 1024
    peak_mb, traj = b.traced_parse(path)
    assert peak_mb < PEAK_LIMIT_MB, f"parsing 50 MB peaked at {peak_mb:.1f} MB of Python memory"
    assert traj.lines == lines and traj.omitted_messages > 10_000 and len(traj.messages) == 400
    assert len(traj.invocations) >= 30 and all(i.status.value == "loaded" and i.body for i in traj.invocations)
    assert traj.selections()[0].name == "skill-0"
