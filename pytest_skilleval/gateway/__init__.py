"""The model gateway: one local server every agent CLI and SDK talks to (see docs/providers.md).

Plain-Python use::

    from pytest_skilleval.gateway import Gateway, GatewayConfig, Script

    with Gateway(GatewayConfig(mode="scripted")) as gw:
        with gw.trial("demo", script=Script.from_data({"steps": [{"text": "hi"}]})) as trial:
            run_agent(env=trial.agent_env())   # the agent sees only trial.token
        print(trial.summary())

In pytest, use the ``skilleval_gateway`` fixture (one gateway per session, i.e. per xdist worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_skilleval import lazyexports

if TYPE_CHECKING:
    from pytest_skilleval.gateway.config import GatewayConfig, Upstream, upstreams_from_env
    from pytest_skilleval.gateway.metering import BudgetExceeded, PriceTable
    from pytest_skilleval.gateway.script import Script, Step
    from pytest_skilleval.gateway.server import Gateway
    from pytest_skilleval.gateway.trial import KeyLeak, ReplayDivergence, Trial

#: Each public name and the module that defines it. Imported on first use: every pytest run reads the
#: gateway's options (``gateway.options``, which imports this package), and a run without Tier 3
#: must not pay for the server, metering and protocol modules.
_EXPORTS = {"GatewayConfig": "config", "Upstream": "config", "upstreams_from_env": "config",
            "BudgetExceeded": "metering", "PriceTable": "metering", "Script": "script", "Step": "script",
            "Gateway": "server", "KeyLeak": "trial", "ReplayDivergence": "trial", "Trial": "trial"}

__all__ = ["BudgetExceeded", "Gateway", "GatewayConfig", "KeyLeak", "PriceTable", "ReplayDivergence", "Script", "Step", "Trial",
           "Upstream", "upstreams_from_env"]


__getattr__ = lazyexports.exports(__name__, _EXPORTS)
