"""pytest-skilleval: evaluate Agent Skills as pytest tests."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pytest-skilleval")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"
