"""Streamed trajectory parsing: peak memory and time on large transcripts.

Generates Claude Code stream-json and Codex exec --json transcripts of a target size (default
5 MB and 50 MB), with skill loads spread through them, and parses each one:

* **tracemalloc peak**: the most Python memory allocated at once while parsing — what "bounded"
  means here: it must not grow with the file;
* **peak RSS** of a fresh process that imports and parses, next to one that only imports, for the
  whole-process view;
* wall time and throughput without tracing.

    python benchmarks/trajectory_parse.py [--sizes 5,50] [--harness claude-code,codex] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

OUTPUT = "\n".join(f"row {n:04d}: " + "value " * 12 for n in range(30))  # ~2.3 KB of tool output per call
BODY = "# Big skill\n\n" + "Follow these steps carefully.\n" * 40


def _claude_cycle(n: int) -> list[dict[str, Any]]:
    mid, tid = f"msg_{n:08d}", f"toolu_{n:08d}"
    usage = {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 0}
    lines: list[dict[str, Any]] = [
        {"type": "assistant", "message": {"id": mid, "role": "assistant", "model": "m", "usage": usage,
                                          "content": [{"type": "text", "text": f"Step {n}: running the next command."}]}, "session_id": "s"},
        {"type": "assistant", "message": {"id": mid, "role": "assistant", "model": "m", "usage": usage,
                                          "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"run --step {n}"}}]},
         "session_id": "s"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": OUTPUT}]},
         "session_id": "s"},
    ]
    if n % 500 == 0:  # a skill load now and then, so the skill path is exercised all the way through
        sid = f"toolu_s{n:08d}"
        lines += [
            {"type": "assistant", "message": {"id": mid + "s", "role": "assistant", "content": [
                {"type": "tool_use", "id": sid, "name": "Skill", "input": {"skill": f"skill-{n % 7}"}}]}, "session_id": "s"},
            {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": sid,
                                                                      "content": f"Launching skill: skill-{n % 7}"}]}, "session_id": "s"},
            {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text":
                f"Base directory for this skill: /s/skill-{n % 7}\n\n{BODY}"}]}, "isSynthetic": True, "session_id": "s"},
        ]
    return lines


def _codex_cycle(n: int) -> list[dict[str, Any]]:
    path = f"/p/.agents/skills/skill-{n % 7}/SKILL.md" if n % 500 == 0 else f"data/{n}.txt"
    out = f"---\nname: skill-{n % 7}\n---\n{BODY}" if n % 500 == 0 else OUTPUT
    item = {"id": f"item_{n}", "type": "command_execution", "command": f"/bin/bash -lc 'cat {path}'", "aggregated_output": out,
            "exit_code": 0, "status": "completed"}
    return [{"type": "item.started", "item": {**item, "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
            {"type": "item.completed", "item": item},
            {"type": "item.completed", "item": {"id": f"item_{n}m", "type": "agent_message", "text": f"Step {n} done."}}]


def write_transcript(path: Path, target_mb: float, harness: str = "claude-code") -> int:
    """Write a transcript of about ``target_mb`` MB; returns the number of lines."""
    target = int(target_mb * 1024 * 1024)
    cycle = _claude_cycle if harness == "claude-code" else _codex_cycle
    lines = 0
    with path.open("w", encoding="utf-8") as fh:
        head = ({"type": "system", "subtype": "init", "session_id": "s", "model": "m", "skills": ["skill-0"]}
                if harness == "claude-code" else {"type": "thread.started", "thread_id": "t"})
        fh.write(json.dumps(head) + "\n")
        n = 0
        while fh.tell() < target:
            for rec in cycle(n):
                fh.write(json.dumps(rec) + "\n")
                lines += 1
            n += 1
        tail = ({"type": "result", "subtype": "success", "result": "done", "num_turns": n, "total_cost_usd": 1.0, "duration_ms": 1}
                if harness == "claude-code" else {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}})
        fh.write(json.dumps(tail) + "\n")
    return lines + 2


def traced_parse(path: Path) -> tuple[float, Any]:
    """(peak MB of Python allocations while parsing, the trajectory)."""
    from pytest_skilleval.trajectory import load_trajectory

    tracemalloc.start()
    try:
        traj = load_trajectory(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1024 / 1024, traj


def _child_rss(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    return float(out.stdout.strip().splitlines()[-1])


RSS = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"


def measure(path: Path) -> dict[str, Any]:
    from pytest_skilleval.trajectory import load_trajectory

    started = time.perf_counter()
    traj = load_trajectory(path)
    seconds = time.perf_counter() - started
    peak, _ = traced_parse(path)
    imports = "import pytest_skilleval.trajectory as t; t.default_registry()\n"
    base = _child_rss(imports + RSS)
    parsed = _child_rss(imports + f"t.load_trajectory({str(path)!r})\n" + RSS)
    size = path.stat().st_size / 1024 / 1024
    return {"file_mb": round(size, 1), "lines": traj.lines, "seconds": round(seconds, 2), "mb_per_s": round(size / seconds, 1),
            "tracemalloc_peak_mb": round(peak, 2), "peak_rss_import_only_mb": round(base, 1), "peak_rss_parse_mb": round(parsed, 1),
            "skills_loaded": len(traj.invocations), "messages_kept": len(traj.messages), "messages_omitted": traj.omitted_messages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5,50", help="transcript sizes in MB, comma-separated")
    ap.add_argument("--harness", default="claude-code,codex")
    ap.add_argument("--keep", type=Path, default=None, help="write the transcripts here instead of a temp dir")
    args = ap.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="trajectory-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, max RSS of this process so far "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; files in {workdir}")
    for harness in args.harness.split(","):
        for size in (float(s) for s in args.sizes.split(",")):
            path = workdir / f"{harness}-{size:g}mb.jsonl"
            write_transcript(path, size, harness)
            print(json.dumps({"harness": harness, **measure(path)}))
            if args.keep is None:
                path.unlink()


if __name__ == "__main__":
    main()
