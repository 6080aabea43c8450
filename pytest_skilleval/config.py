"""Options, ini keys and environment variables, read once into one frozen :class:`Settings`.

Precedence for every setting: command line > ini (``[tool.pytest.ini_options]``/``pytest.ini``)
> environment (``SKILLEVAL_*``) > built-in default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.levels import Severity

PROFILES = ("spec", "strict")


@dataclass(frozen=True)
class Option:
    name: str  # dest, also the ini key
    flag: str
    env: str | None
    default: Any
    help: str
    kind: str = "string"  # string | bool | int | float


OPTIONS = (
    Option("skilleval_checks", "--skilleval-checks", "SKILLEVAL_CHECKS", None,
           "Tier 1 checks to run: 'a,b' exactly, '+a' adds an opt-in check, '-a' drops one, 'all'."),
    Option("skilleval_profile", "--skilleval-profile", "SKILLEVAL_PROFILE", "spec",
           "Rule profile: 'spec' (the Agent Skills specification) or 'strict' (adds catalog rules: "
           "metadata.author, reserved words, recommended sections)."),
    Option("skilleval_fail_on", "--skilleval-fail-on", "SKILLEVAL_FAIL_ON", "high",
           "Lowest finding severity that fails a blocking check: critical, high, medium, low, info."),
    Option("skilleval_report_dir", "--skilleval-report-dir", "SKILLEVAL_REPORT_DIR", "skilleval-report",
           "Folder for BENCHMARK.md cards and results.json; '' disables reports."),
    Option("skilleval_allow_incomplete", "--skilleval-allow-incomplete", "SKILLEVAL_ALLOW_INCOMPLETE", False,
           "Report INCOMPLETE checks (missing scanner, crashed tool) as skipped instead of failed.", "bool"),
    Option("skilleval_cache_dir", "--skilleval-cache-dir", "SKILLEVAL_CACHE_DIR", ".skilleval-cache",
           "Folder (relative to rootdir) caching scanner results by content hash; '' disables the cache."),
    Option("skilleval_min_quality", "--skilleval-min-quality", "SKILLEVAL_MIN_QUALITY", 70.0,
           "Pass mark of the quality score (0-100).", "float"),
    Option("skilleval_min_rubric", "--skilleval-min-rubric", "SKILLEVAL_MIN_RUBRIC", 70.0,
           "Pass mark of the opt-in LLM rubric (0-100); every criterion must also score at least 7/10.", "float"),
    Option("skilleval_max_file_size", "--skilleval-max-file-size", "SKILLEVAL_MAX_FILE_SIZE", 1024 * 1024,
           "Largest skill file read, in bytes; larger files are findings and are not read.", "int"),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("skilleval", "skill evaluation (pytest-skilleval)")
    group.addoption("--skills", action="append", default=[], metavar="PATH", dest="skilleval_skills",
                    help="A skill folder, or a folder holding skills at any depth (repeatable).")
    parser.addini("skilleval_paths", "Skill folders or folders of skills, relative to the ini file.", type="paths", default=[])
    register(parser, OPTIONS)


def register(parser: pytest.Parser, options: tuple[Option, ...]) -> None:
    """Add each option as a command-line flag and an ini key; subsystems call this with their own list."""
    group = parser.getgroup("skilleval", "skill evaluation (pytest-skilleval)")
    for opt in options:
        if opt.kind == "bool":
            group.addoption(opt.flag, action="store_true", default=None, dest=opt.name, help=opt.help)
            parser.addini(opt.name, opt.help, type="bool", default=None)
        else:
            group.addoption(opt.flag, action="store", default=None, dest=opt.name, metavar="VALUE", help=opt.help)
            parser.addini(opt.name, opt.help, type="string", default=None)


def parse_bool(value: Any, source: str) -> bool:
    """A boolean option's value, as every subsystem reads one from a string (the environment); anything else is
    a usage error naming ``source`` (``environment variable SKILLEVAL_...``), never a silent false."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{source}: expected a boolean, got {value!r}")


def _cast(opt: Option, value: Any, source: str) -> Any:
    """``value`` as the option's kind; ``source`` names where it was set, for the usage error."""
    if opt.kind == "bool":
        return parse_bool(value, source)
    if opt.kind in ("int", "float"):
        try:
            return int(value) if opt.kind == "int" else float(value)
        except (TypeError, ValueError):
            raise pytest.UsageError(f"{source}: expected a number, got {value!r}") from None
    return value


def ini_value(config: pytest.Config, name: str) -> Any:
    """``config.getini(name)``, its usage error naming the key: pytest's own conversion of a bool key says only
    ``invalid truth value 'maybe'``."""
    try:
        return config.getini(name)
    except pytest.UsageError as exc:
        raise pytest.UsageError(f"ini key {name}: {exc}") from None


def value(config: pytest.Config, opt: Option) -> Any:
    """The option's value: command line > ini > environment > default, cast to its kind."""
    cli = config.getoption(opt.name, default=None)
    if cli is not None:
        return _cast(opt, cli, opt.flag)
    ini = ini_value(config, opt.name)
    if ini not in (None, "", []):
        return _cast(opt, ini, f"ini key {opt.name}")
    if opt.env and os.environ.get(opt.env) not in (None, ""):
        return _cast(opt, os.environ[opt.env], f"environment variable {opt.env}")
    return opt.default


@dataclass(frozen=True)
class Settings:
    skill_paths: tuple[Path, ...]
    checks: str | None
    profile: str
    fail_on: Severity
    report_dir: Path | None
    cache_dir: Path | None
    allow_incomplete: bool
    min_quality: float
    min_rubric: float
    max_file_bytes: int

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        values = {opt.name: value(config, opt) for opt in OPTIONS}
        profile = str(values["skilleval_profile"]).strip().lower()
        if profile not in PROFILES:
            raise pytest.UsageError(f"--skilleval-profile: unknown profile {profile!r} (expected one of: {', '.join(PROFILES)})")
        try:
            fail_on = Severity.parse(str(values["skilleval_fail_on"]))
        except ValueError as exc:
            raise pytest.UsageError(f"--skilleval-fail-on: {exc}") from None
        min_quality = values["skilleval_min_quality"]
        if not 0 <= min_quality <= 100:
            raise pytest.UsageError("--skilleval-min-quality must be between 0 and 100")
        if not 0 <= values["skilleval_min_rubric"] <= 100:
            raise pytest.UsageError("--skilleval-min-rubric must be between 0 and 100")
        if values["skilleval_max_file_size"] <= 0:
            raise pytest.UsageError("--skilleval-max-file-size must be positive")
        report_dir = values["skilleval_report_dir"]
        cache_dir = values["skilleval_cache_dir"]
        invocation_dir = config.invocation_params.dir
        paths = [invocation_dir / p for p in config.getoption("skilleval_skills") or []]
        paths += [Path(p) for p in config.getini("skilleval_paths") or []]
        return cls(
            skill_paths=tuple(Path(os.path.abspath(p)) for p in paths),
            checks=values["skilleval_checks"] or None,
            profile=profile,
            fail_on=fail_on,
            report_dir=(invocation_dir / report_dir) if report_dir else None,
            cache_dir=(config.rootpath / cache_dir) if cache_dir else None,
            allow_incomplete=bool(values["skilleval_allow_incomplete"]),
            min_quality=float(min_quality),
            min_rubric=float(values["skilleval_min_rubric"]),
            max_file_bytes=int(values["skilleval_max_file_size"]),
        )
