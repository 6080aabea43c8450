"""Scripted mode: answer from a :class:`Script` — the keyless mode CI drives the real CLIs with."""

from __future__ import annotations

from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.script import Script


class ScriptedMode(Mode):
    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script

    def handle(self, ex: Exchange) -> None:
        req = ex.request
        if req.kind == "count_tokens":
            ex.note = "count_tokens"
            ex.send_json(200, ex.protocol.render_count(self.script.usage.input))
            return
        # Serialising a 100 KB body costs time: only variants need the request text.
        text = ex.request_text if self.script.variants else ""
        reply, ex.note = self.script.reply_for(req, text, ex.protocol.tool_id_prefix)
        ex.usage = reply.usage
        if req.stream:
            ex.send_events(ex.protocol.render_events(reply, req))
        else:
            ex.send_json(200, ex.protocol.render_json(reply, req))
