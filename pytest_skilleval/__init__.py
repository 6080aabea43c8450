"""pytest-skilleval: evaluate Agent Skills as pytest tests."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed metadata on first use (PEP 562): every pytest run imports
    this package, and looking the distribution up (~5 ms, and the email parser) is for reports and the CLI."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("pytest-skilleval")
    except PackageNotFoundError:  # running from a source tree without an install
        found = "0.0.0+source"
    globals()["__version__"] = found
    return found
