"""The rootdir and ini file pytest chose before it knew this plugin's options.

pytest chooses its rootdir and ini file from the path arguments *before* it loads plugins (``Config.parse``:
``determine_setup`` first, entry-point plugins after). Then ``--skills`` is an unknown option, so in
``--skills PATH`` (with a space) PATH is taken for a test path: a PATH outside the project moves the rootdir
and ini file there, and the project's ini settings, the cache folder and the agents folder (both
rootdir-relative) silently change. ``--skills=PATH`` is one token, never a path. A plugin cannot choose the
configuration again (the ini file's ``addopts``, ``pythonpath`` and ``-p`` plugins are applied by then), so
:func:`refuse_misread_configuration` ends such a run with a usage error naming the ini file that was not
read; a space that changed nothing (``--skills ./skills`` inside the project) is no error.

:func:`pytest_setup` repeats pytest's search (pytest 9's file names, order and fallbacks) for the arguments
pytest would have seen had it known the options.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

import iniconfig
import pytest

#: The files pytest reads its configuration from, in its order of precedence in one folder.
CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _holds_pytest_config(path: Path) -> bool:
    """Whether pytest takes ``path`` as its ini file (a file it cannot parse counts: pytest would stop on it)."""
    # Imported here: only a run that wrote an option with a space pays for it.
    import tomllib
    try:
        if path.name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
            return True
        if path.name == "pyproject.toml":
            tool_pytest = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
            return isinstance(tool_pytest, dict) and ("ini_options" in tool_pytest or bool(tool_pytest))
        sections = iniconfig.IniConfig(str(path)).sections
        return ("pytest" in sections) if path.name == "tox.ini" else ("tool:pytest" in sections or "pytest" in sections)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, iniconfig.ParseError):
        return True


def _locate_config(args: Iterable[Path]) -> tuple[Path | None, Path | None]:
    """(rootdir, ini file) as pytest's ``locate_config``: the first folder, from each argument up, holding a
    config file; else the first pyproject.toml met, as an empty config."""
    first_pyproject: Path | None = None
    for arg in args:
        for base in (arg, *arg.parents):
            for name in CONFIG_NAMES:
                candidate = base / name
                if candidate.is_file():
                    if name == "pyproject.toml" and first_pyproject is None:
                        first_pyproject = candidate
                    if _holds_pytest_config(candidate):
                        return base, candidate
    if first_pyproject is not None:
        return first_pyproject.parent, first_pyproject
    return None, None


def _common_ancestor(invocation_dir: Path, paths: Iterable[Path]) -> Path:
    ancestor: Path | None = None
    for path in paths:
        if not path.exists():
            continue
        if ancestor is None:
            ancestor = path
        elif not (ancestor in path.parents or path == ancestor):
            if path in ancestor.parents:
                ancestor = path
            else:
                try:
                    ancestor = Path(os.path.commonpath((path, ancestor)))
                except ValueError:
                    pass
    if ancestor is None:
        return invocation_dir
    return ancestor.parent if ancestor.is_file() else ancestor


def _dirs_of(args: Iterable[str]) -> list[Path]:
    paths = (Path(os.path.abspath(arg.split("::", 1)[0])) for arg in args if not arg.startswith("-"))
    existing = []
    for path in paths:
        try:
            if path.exists():
                existing.append(path if path.is_dir() else path.parent)
        except OSError:
            continue
    return existing


def pytest_setup(invocation_dir: Path, args: Sequence[str]) -> tuple[Path, Path | None]:
    """(rootdir, ini file) pytest chooses for these free arguments, with no ``-c`` and no ``--rootdir``."""
    dirs = _dirs_of(args)
    ancestor = _common_ancestor(invocation_dir, dirs)
    rootdir, inipath = _locate_config([ancestor])
    if rootdir is not None:
        return rootdir, inipath
    for candidate in (ancestor, *ancestor.parents):
        if (candidate / "setup.py").is_file():
            return candidate, None
    if dirs != [ancestor]:
        rootdir, inipath = _locate_config(dirs)
        if rootdir is not None:
            return rootdir, inipath
    rootdir = _common_ancestor(invocation_dir, [invocation_dir, ancestor])
    return (ancestor if os.path.splitdrive(str(rootdir))[1] == os.sep else rootdir), None


def value_options(parser: pytest.Parser) -> frozenset[str]:
    """This plugin's options that take a value (those a space separates from it)."""
    group = parser.getgroup("skilleval")
    return frozenset(name for option in group.options if option.attrs().get("nargs") != 0
                     for name in option.names() if name.startswith("--"))


def spaced_values(tokens: Sequence[str], options: frozenset[str]) -> list[tuple[str, str]]:
    """(option, value) for each of ``options`` written ``--option VALUE``, before any ``--``."""
    found = []
    for token, following in zip(tokens, tokens[1:], strict=False):
        if token == "--":
            break
        if token in options and not following.startswith("-"):
            found.append((token, following))
    return found


def refuse_misread_configuration(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """A usage error when an option of this plugin written with a space made pytest choose another rootdir or
    ini file than the one it chooses with the option written ``--option=VALUE``."""
    invocation = early_config.invocation_params
    tokens = shlex.split(os.environ.get("PYTEST_ADDOPTS", "")) + [str(a) for a in invocation.args]
    spaced = spaced_values(tokens, value_options(parser))
    namespace = early_config.known_args_namespace
    if not spaced or getattr(namespace, "inifilename", None):  # -c names the ini file, whatever the arguments
        return
    # The free arguments pytest sees once it knows the options: the misread values are no longer among them.
    free = [str(a) for a in getattr(namespace, "file_or_dir", None) or []]
    rootdir, inipath = pytest_setup(invocation.dir, free)
    rootdir_fixed = bool(getattr(namespace, "rootdir", None))
    if inipath == early_config.inipath and (rootdir_fixed or rootdir == early_config.rootpath):
        return
    options = ", ".join(f"{option} {value}" for option, value in spaced)
    read = f"the ini file {early_config.inipath}" if early_config.inipath else "no ini file"
    meant = f"the ini file {inipath}" if inipath else "no ini file"
    joined = " ".join(f"{option}={shlex.quote(value)}" for option, value in spaced)
    raise pytest.UsageError(
        f"{options}: written with a space, pytest took the value for a test path when it chose its configuration "
        f"(it does so before it knows plugin options), and read {read} (rootdir {early_config.rootpath}) instead of "
        f"{meant} (rootdir {rootdir}). Write {joined}.")
