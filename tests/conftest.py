"""Suite-wide pytest configuration: the shared plugins, and the root logger kept per test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.cluster.fixtures"]


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """Undo a test's ``configure_logging``: its handler writes to that test's captured stderr.

    A command run in-process (``wmap serve``, ``wmap get --server``) installs a stream
    handler on ``sys.stderr``, which is pytest's capture of that one test; left in place,
    every later log record fails on the closed stream ("Logging error"). Handlers added by
    the test are removed at teardown (pytest's own capture handlers are left to pytest), and
    the root level is put back.
    """
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in before and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
