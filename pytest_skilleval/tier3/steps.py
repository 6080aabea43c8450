"""A trial's trajectory as a reader follows it: messages, tool calls and skill loads in run order.

Bounded (head and tail of :data:`record.MAX_STEPS`, each text capped), because the steps ride in
``user_properties`` to the controller and end up in ``results.json`` and the HTML report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytest_skilleval.tier3.record import MAX_STEP_TEXT, MAX_STEPS, TrialStep

if TYPE_CHECKING:
    from pytest_skilleval.trajectory import Trajectory


def trial_steps(trajectory: Trajectory | None, paths: Mapping[str, str] | None = None) -> list[TrialStep]:
    """``paths``: trial folders to show by name (``<workspace>``), so a report does not depend on
    where pytest put its temporary files and two runs of the same thing read the same."""
    if trajectory is None:
        return []
    swaps = sorted((paths or {}).items(), key=lambda kv: -len(kv[0]))

    def _cap(text: str | None, limit: int = MAX_STEP_TEXT) -> str:
        text = (text or "").strip()
        for real, shown in swaps:
            text = text.replace(real, shown)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    ordered: list[tuple[int, int, TrialStep]] = []
    if trajectory.task and not any(m.role == "user" for m in trajectory.messages):
        ordered.append((-1, 0, TrialStep(kind="message", role="user", text=_cap(trajectory.task))))
    for m in trajectory.messages:
        ordered.append((m.position, 0, TrialStep(kind="message", role=m.role, text=_cap(m.text))))
    for c in trajectory.tool_calls:
        args = json.dumps(c.arguments, ensure_ascii=False, sort_keys=True) if c.arguments else ""
        ordered.append((c.position, 1, TrialStep(kind="tool", name=c.name, text=_cap(args), result=_cap(c.error or c.result) or None,
                                                  is_error=c.is_error)))
    for inv in trajectory.invocations:
        how = f"{inv.how.value} via {inv.tool}" if inv.tool else inv.how.value
        ordered.append((inv.position, 2, TrialStep(kind="skill", name=inv.name, text=f"{inv.status.value} ({how})",
                                                    is_error=inv.refused)))
    steps = [s for _, _, s in sorted(ordered, key=lambda t: (t[0], t[1]))]
    if len(steps) > MAX_STEPS:
        head, tail = MAX_STEPS // 2, MAX_STEPS - MAX_STEPS // 2 - 1
        gap = TrialStep(kind="gap", text=f"{len(steps) - head - tail} step(s) left out")
        steps = steps[:head] + [gap] + steps[-tail:]
    return steps
