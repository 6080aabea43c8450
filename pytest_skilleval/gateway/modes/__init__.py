"""How requests are answered: scripted, proxy, record, replay."""

from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.modes.proxy import ProxyMode
from pytest_skilleval.gateway.modes.record import RecordMode
from pytest_skilleval.gateway.modes.replay import ReplayMode
from pytest_skilleval.gateway.modes.scripted import ScriptedMode

__all__ = ["Mode", "ProxyMode", "RecordMode", "ReplayMode", "ScriptedMode"]
