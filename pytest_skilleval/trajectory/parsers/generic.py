"""Any agent: messages in a common shape (Anthropic, OpenAI Chat or Responses, Bedrock, Google parts).

The catch-all, sniffed last. It knows no harness specifics, so a skill counts when the agent calls a
known skill tool, or reads ``…/SKILL.md`` through a read or shell tool *and a body came back* — a
failed or empty read is not a load. Records may be bare messages or wrapped as ``{message: …}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects


class GenericParser(TrajectoryParser):
    name = "generic"
    aliases = ("messages", "openai", "anthropic", "any")
    description = "Common message shapes from any agent (the fallback)"
    priority = 1000

    def sniff(self, first_lines: Sequence[str]) -> bool:
        # Any JSON: whole objects per line, or the start of one (pretty-printed) JSON document.
        return bool(sniff_objects(first_lines)) or bool(first_lines and first_lines[0][:1] in "{[")

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        builder.fmt = "messages"
        for rec in records:
            msg = T.as_dict(rec.get("message")) if "role" not in rec and isinstance(rec.get("message"), dict) else rec
            msg = T.as_dict(msg.get("item")) or msg  # {"type": "item.completed", "item": {…}} style envelopes
            blocks.feed_message(builder, msg)
