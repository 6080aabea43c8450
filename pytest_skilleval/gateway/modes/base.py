"""A mode decides how a model request is answered; the server does everything around it."""

from __future__ import annotations

import abc
from typing import ClassVar

from pytest_skilleval.gateway.exchange import Exchange


class Mode(abc.ABC):
    name: ClassVar[str]
    billed: ClassVar[bool] = False  # whether its costs are real money (and count against the budget)

    @abc.abstractmethod
    def handle(self, ex: Exchange) -> None:
        """Answer one request through ``ex`` and fill in its usage/note/error."""

    def close(self) -> list[str]:
        """Finish the trial (write a cassette, ...); returns problems to report as divergences."""
        return []
