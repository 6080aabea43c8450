"""The report page's compiled template, kept where Python keeps this package's bytecode.

Compiling ``report.html.j2`` costs a run more CPU than writing a small catalog's whole report, and
every run did it again. Jinja's bytecode cache keeps the compiled code in ``__pycache__`` beside the
templates (or under ``sys.pycache_prefix``), as Python does for modules; Jinja reloads it only when
the template's checksum and the Python version match. Nothing is written when Python writes no
bytecode (``PYTHONDONTWRITEBYTECODE``, ``-B``), and a folder that cannot be written only means
compiling again next time: the report never fails for its cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, FileSystemBytecodeCache


class CompiledTemplates(FileSystemBytecodeCache):
    def __init__(self, templates: Path, options: str) -> None:
        """``options``: what of the environment the compiled code depends on (delimiters, whitespace
        control, autoescaping), so that changing them compiles again instead of loading stale code."""
        folder = os.path.dirname(importlib.util.cache_from_source(str(templates / "_.py")))
        tag = hashlib.sha256(f"{jinja2.__version__}|{options}".encode()).hexdigest()[:12]
        super().__init__(folder, f"__jinja2_%s.{tag}.cache")

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - Jinja lets only a missing file pass and unpickles the rest unguarded:
            bucket.reset()  # an unreadable, cut-short or overwritten cache file only means compiling again

    def dump_bytecode(self, bucket: Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass
