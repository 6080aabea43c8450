"""Controller-side aggregation (placeholder, replaced below)."""
from __future__ import annotations
import pytest
class ReportSession:
    def __init__(self, config: pytest.Config, settings: object) -> None:
        self.config = config
