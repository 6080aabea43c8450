"""The model gateway: one local server every agent CLI and SDK talks to (see docs/providers.md).

Plain-Python use::

    from pytest_skilleval.gateway import Gateway, GatewayConfig, Script

    with Gateway(GatewayConfig(mode="scripted")) as gw:
        with gw.trial("demo", script=Script.from_data({"steps": [{"text": "hi"}]})) as trial:
            run_agent(env=trial.agent_env())   # the agent sees only trial.token
        print(trial.summary())

In pytest, use the ``skilleval_gateway`` fixture (one gateway per session, i.e. per xdist worker).
"""

from pytest_skilleval.gateway.config import GatewayConfig, Upstream, upstreams_from_env
from pytest_skilleval.gateway.metering import BudgetExceeded, PriceTable
from pytest_skilleval.gateway.script import Script, Step
from pytest_skilleval.gateway.server import Gateway
from pytest_skilleval.gateway.trial import KeyLeak, ReplayDivergence, Trial

__all__ = ["BudgetExceeded", "Gateway", "GatewayConfig", "KeyLeak", "PriceTable", "ReplayDivergence", "Script", "Step", "Trial",
           "Upstream", "upstreams_from_env"]
