"""Fixtures of the abuse suite: one guarded server per module (small limits so the
attacks hit them quickly)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.abuse.server import Served, serve

FLAGS = ("--header-timeout", "2", "--body-timeout", "2", "--max-connections", "500",
         "--max-expensive-requests", "2", "--expensive-queue", "8")
"""Limits of the served process: 2 s to send headers or a body, 500 connections, 2
expensive requests running and 8 waiting."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The guarded server over the bundled sample."""
    with serve(tmp_path_factory.mktemp("abuse"), *FLAGS) as served:
        yield served
