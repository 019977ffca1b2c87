"""Fixtures for in-process API tests: the app over a SnapshotReader of fixture objects.

The lifespan runs through ``app.router.lifespan_context`` (httpx's ASGI transport does not
send lifespan events); requests go through ``httpx.AsyncClient`` + ``ASGITransport``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader

FIXTURES = Path(__file__).parent / "fixtures"
JOBSET = FIXTURES / "jobset.yaml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in [k for k in os.environ if k.startswith("WMAP_")]:
        monkeypatch.delenv(key)
    yield


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with a private state directory."""
    return Settings(state_dir=tmp_path / "state")


@pytest.fixture
def reader() -> SnapshotReader:
    """The JobSet fixture: 1 JobSet, 3 Jobs, 3 Pods."""
    return SnapshotReader.from_paths(JOBSET)


@pytest.fixture
async def app(settings: Settings, reader: SnapshotReader) -> AsyncIterator[Starlette]:
    """The app with its lifespan running."""
    application = create_app(settings, reader=reader)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


async def gql(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    """POST a GraphQL operation; returns the decoded body (data and errors)."""
    response = await client.post("/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
