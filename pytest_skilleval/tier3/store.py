"""What Tier 3 keeps between runs, under ``<--skilleval-cache-dir>/tier3/``: baseline records for reuse,
and each case's last metered usage for the cost estimate printed before a run.

- ``baseline/<key>.json``: a without_skill :class:`TrialRecord` that was PASSED, FAILED or NOT_SCORED
  (never an ERROR), keyed by everything that decides a baseline — the case's digest including its
  input files, the agent and its version, the model, the gateway mode, the sandbox backend, and the
  attempt and execution index. The skill is not in the key: the without_skill arm never sees it, so
  editing SKILL.md leaves every key unchanged and ``--skilleval-reuse-baseline`` runs only the
  with_skill arm.
- ``usage/<key>.json``: the last metered tokens and dollars of a case × agent × arm × gateway mode,
  for :mod:`pytest_skilleval.tier3.plan`.

Workers write one small file per key with an atomic replace, so xdist workers never collide.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_skilleval.atomic import write_atomic
from pytest_skilleval.tier3.record import TrialRecord

STORE_VERSION = 1
REUSABLE = frozenset({"PASSED", "FAILED", "NOT_SCORED"})  # an ERROR is no evidence: it is run again


@dataclass(frozen=True)
class BaselineKey:
    case_digest: str
    agent: str
    agent_version: str | None
    model: str | None
    mode: str
    sandbox: str  # the backend's name (local, docker, …), not its description
    attempt: int
    execution: int = 1

    def file_name(self) -> str:
        text = json.dumps({"v": STORE_VERSION, **self.__dict__}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32] + ".json"


def usage_key(skill_dir: str, case_id: str, agent: str, arm: str, mode: str) -> str:
    """By the skill folder's name as a node id shows it (escaped: identity.py), so the xdist controller can look it up too."""
    return hashlib.sha256(json.dumps([STORE_VERSION, skill_dir, case_id, agent, arm, mode]).encode()).hexdigest()[:32] + ".json"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class TrialStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    # -- baselines ------------------------------------------------------------------------------
    def baseline(self, key: BaselineKey) -> tuple[TrialRecord, str] | None:
        """The stored record for ``key`` and when it was stored, or None."""
        data = self._read(self.root / "baseline" / key.file_name())
        if data is None:
            return None
        try:
            return TrialRecord.model_validate(data["record"]), str(data["stored_at"])
        except (ValidationError, KeyError, TypeError):
            return None  # from another version of the plugin: run it again

    def keep_baseline(self, key: BaselineKey, record: TrialRecord) -> None:
        if record.arm != "without_skill" or record.status not in REUSABLE or record.reused_from:
            return
        self._write(self.root / "baseline" / key.file_name(), {"key": key.__dict__, "stored_at": _now(),
                                                              "record": record.model_dump(mode="json")})

    # -- usage, for estimates ---------------------------------------------------------------------
    def keep_usage(self, record: TrialRecord) -> None:
        if record.status == "SKIPPED" or record.reused_from or record.requests == 0:
            return
        # the folder's name as the skill key writes it (identity.py), as the node id the plan reads it from does; not
        # from skill_path, whose escape for JSON makes a folder named '\\udcff' and one named by the byte 0xff one name
        folder = record.skill.rsplit("/", 1)[-1]
        self._write(self.root / "usage" / usage_key(folder, record.case_id, record.agent, record.arm, record.mode),
                    {"tokens_in": record.tokens_in, "tokens_out": record.tokens_out, "cost_usd": record.cost_usd,
                     "recorded_at": _now()})

    def usage(self, skill_dir: str, case_id: str, agent: str, arm: str, mode: str) -> dict[str, Any] | None:
        return self._read(self.root / "usage" / usage_key(skill_dir, case_id, agent, arm, mode))

    # -- files ----------------------------------------------------------------------------------
    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @staticmethod
    def _write(path: Path, data: dict[str, Any]) -> None:
        try:
            write_atomic(path, json.dumps(data, ensure_ascii=False, sort_keys=True))
        except OSError:
            pass  # a cache that cannot be written costs a rerun later, never the trial
