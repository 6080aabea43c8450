"""The page's compiled template is kept beside the package's bytecode and reused (reports/templatecache.py).

Compiling ``report.html.j2`` was the largest single cost of writing a small run's report; each run
did it again. Real Jinja, real files; the one fake is a compiler that fails, to prove the second page
came from the cache.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jinja2
import pytest
from jinja2.bccache import bc_magic

from pytest_skilleval.reports import html

DOC = {"schema_version": "1.1", "overall_status": "PASS", "skills": [{"key": "demo", "name": "demo", "verdict": "PASS", "checks": []}]}


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Python's bytecode (and so the compiled template) under a fresh ``sys.pycache_prefix``; a fresh environment."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(html, "_ENV", None)
    return tmp_path / "pycache"


def test_the_second_page_loads_the_compiled_template(prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = html.render(DOC)
    cached = list(prefix.rglob("__jinja2_*.cache"))
    assert len(cached) == 1 and cached[0].parent.name == "templates"

    def no_compiling(*args: object, **kw: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(html, "_ENV", None)
    monkeypatch.setattr(jinja2.Environment, "compile", no_compiling)
    assert html.render(DOC) == first


def test_other_environment_options_do_not_load_it(prefix: Path) -> None:
    html.render(DOC)
    env = html._environment()
    other = html.CompiledTemplates(Path(html.__file__).parent / "templates", "something else")
    assert env.bytecode_cache is not None
    key = env.bytecode_cache.get_bucket(env, html.TEMPLATE, None, "")
    assert other._get_cache_filename(key) != env.bytecode_cache._get_cache_filename(key)


def test_nothing_is_written_without_bytecode(prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    first = html.render(DOC)
    assert not prefix.exists() or not list(prefix.rglob("__jinja2_*"))
    assert first.startswith("<!doctype html>") or "<html" in first


def test_a_folder_that_cannot_be_written_costs_only_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "pycache"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setattr(sys, "pycache_prefix", str(blocker))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(html, "_ENV", None)
    assert "<html" in html.render(DOC)


@pytest.mark.parametrize("damage", ["cut-after-the-header", "garbage-after-the-header", "cut-in-the-code"])
def test_a_damaged_cache_file_costs_only_the_compile(prefix: Path, damage: str) -> None:
    """A file cut short (a run killed while writing it, on a Jinja that does not write atomically) or
    overwritten behind a valid header: Jinja unpickles the checksum unguarded; the page is compiled again."""
    first = html.render(DOC)
    [cached] = prefix.rglob("__jinja2_*.cache")
    data, header = cached.read_bytes(), len(bc_magic)
    assert data.startswith(bc_magic)
    cached.write_bytes({"cut-after-the-header": data[: header + 3], "garbage-after-the-header": data[:header] + b"\x80\x04\x95garbage",
                        "cut-in-the-code": data[: len(data) // 2]}[damage])
    html._ENV = None
    assert html.render(DOC) == first
