"""Metering: cost from a price table, the per-trial request log, and the per-run budget.

Under ``-n 8`` every worker runs its own gateway, but the budget is per run: spend is appended to
one ledger file per run id (each line a small O_APPEND write, which POSIX keeps whole), and every
worker sums it before starting a trial.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_skilleval.atomic import ensure_dir
from pytest_skilleval.gateway.protocols.base import Usage

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class Price:
    input: float  # USD per million uncached input tokens
    cached_input: float
    output: float


class PriceTable:
    def __init__(self, models: dict[str, Price]) -> None:
        if "default" not in models:
            raise ValueError("a price table needs a 'default' entry for unknown models")
        self.models = models

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        if path:
            text = Path(path).read_text(encoding="utf-8")
        else:
            text = resources.files("pytest_skilleval.gateway").joinpath("prices.json").read_text(encoding="utf-8")
        raw = json.loads(text)["models"]
        return cls({name: Price(float(p["input"]), float(p.get("cached_input", p["input"])), float(p["output"]))
                    for name, p in raw.items()})

    def lookup(self, model: str) -> tuple[str, Price]:
        """The longest table key that prefixes the model name (``gpt-4o-mini-2024…`` → ``gpt-4o-mini``)."""
        name = model.rsplit("/", 1)[-1].lower()  # "models/gemini-…", "anthropic/claude-…"
        keys = [k for k in self.models if k != "default" and name.startswith(k)]
        key = max(keys, key=len) if keys else "default"
        return key, self.models[key]

    def cost(self, model: str, usage: Usage) -> tuple[float, str]:
        key, price = self.lookup(model)
        fresh = max(usage.input_tokens - usage.cached_tokens, 0)
        usd = (fresh * price.input + usage.cached_tokens * price.cached_input + usage.output_tokens * price.output) / 1e6
        return round(usd, 8), key


class BudgetExceeded(RuntimeError):
    """Raised when a trial is opened after the run's budget is spent."""


class Budget:
    def __init__(self, limit_usd: float | None, ledger: Path | None = None) -> None:
        self.limit_usd = limit_usd
        self.ledger = ledger
        self._local = 0.0
        self._lock = threading.Lock()

    def charge(self, usd: float) -> None:
        if usd <= 0:
            return
        with self._lock:
            self._local += usd
            if self.ledger is not None:
                ensure_dir(self.ledger.parent)
                fd = os.open(self.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
                try:
                    os.write(fd, (json.dumps({"usd": usd, "pid": os.getpid()}) + "\n").encode())
                finally:
                    os.close(fd)

    def spent(self) -> float:
        if self.ledger is None or not self.ledger.exists():
            return self._local
        total = 0.0
        for line in self.ledger.read_text(encoding="utf-8").splitlines():
            try:
                total += float(json.loads(line)["usd"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn line from a crashed writer costs nothing
        return total

    def check(self, trial: str) -> None:
        if self.limit_usd is None:
            return
        spent = self.spent()
        if spent >= self.limit_usd:
            raise BudgetExceeded(f"budget spent: ${spent:.4f} of ${self.limit_usd:.4f} (--skilleval-budget-usd); "
                                 f"trial {trial!r} not started")


class RequestLog:
    """One trial's JSON-lines log: one line per request, flushed as it happens (a crash keeps it)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            ensure_dir(path.parent)

    def write(self, entry: dict[str, Any]) -> None:
        if self.path is None:
            return
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
