"""The command line xdist hands its workers, and what it cannot hand them.

xdist sends each worker the command line (``config.invocation_params.args``, and ``sys.argv`` as the worker
input's ``mainargv``) through execnet, which sends only UTF-8 encodable text. A path on the command line naming
a folder whose name is not valid UTF-8 (``--skills skills-\\xff``) decodes with lone surrogates
(``surrogateescape``), and the run ended at worker start in INTERNALERROR, exit 3, with no report.

The plugin cannot hand the workers another form of it: xdist copies the arguments from the invocation before
any hook of its own runs (``pytest_configure_node`` comes after), so only rewriting pytest's record of how it
was invoked, and the worker parsing the command line again with a decoder, would. The run ends instead, before
any worker starts, with a usage error that names the argument and the ways out. One keeps the workers:
``PYTEST_ADDOPTS`` is read by the controller and by each worker from its environment, and never sent.
"""

from __future__ import annotations

import sys

import pytest

from pytest_skilleval.results import encodable, has_surrogates


def refuse_unsendable_arguments(config: pytest.Config) -> None:
    """A usage error (exit code 4) for the first command-line argument xdist could not send to a worker."""
    for arg in (*config.invocation_params.args, *sys.argv):
        if isinstance(arg, str) and has_surrogates(arg):
            raise pytest.UsageError(
                f"the command-line argument '{encodable(arg)}' holds bytes that are not valid UTF-8 (shown escaped): "
                "pytest-xdist sends the command line to each worker as UTF-8 text and cannot start its workers. "
                "Rename the folder, run without xdist (-n 0), or give the argument in the PYTEST_ADDOPTS environment "
                "variable instead (xdist does not send it: local workers inherit the environment).")
