"""Cross-site safety: writes only with non-safelisted media types and from allowed
origins, no mutation over GET, opt-in CORS, JSON transport errors."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.test_mutations import jobset_definition

PORTAL = "https://portal.example.com"
TEXT = yaml.safe_dump(jobset_definition())
REGISTER = 'mutation { registerCatalogType(name: "jobset") { ok } }'


async def registered(client: httpx.AsyncClient) -> list[str]:
    items = (await client.get("/api/v1/definitions")).json()["items"]
    return [d["name"] for d in items if d["origin"] == "state"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; "
                                          "boundary=x", None, "text/yaml"])
async def test_simple_request_bodies_cannot_register(client: httpx.AsyncClient, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    for path in ("/api/v1/definitions", "/api/v1/workload-types"):
        response = await client.post(path, content=TEXT, headers=headers)
        assert response.status_code == 415, response.text
        body = response.json()
        assert body["error"] == "unsupported_media_type"
        assert body["message"].endswith("send the body as application/json or application/yaml")
    response = await client.post("/graphql", content='{"query": "' + REGISTER.replace('"', '\\"') + '"}',
                                 headers=headers)
    assert response.status_code == 415 and response.json()["error"] == "unsupported_media_type"
    assert await registered(client) == []


async def test_foreign_origin_is_refused_and_own_origin_accepted(client: httpx.AsyncClient) -> None:
    evil = {"Origin": "https://evil.example", "Content-Type": "application/yaml"}
    response = await client.post("/api/v1/definitions", content=TEXT, headers=evil)
    assert response.status_code == 403 and response.json()["error"] == "cross_origin_refused"
    assert "'https://evil.example'" in response.json()["message"]
    response = await client.delete("/api/v1/definitions/my-jobset", headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert await registered(client) == []
    # the test client's base URL is http://test: its own origin (default port) may write
    own = {"Origin": "http://test:80", "Content-Type": "application/yaml"}
    response = await client.post("/api/v1/definitions", content=TEXT, headers=own)
    assert response.status_code == 201, response.text
    assert await registered(client) == ["my-jobset"]


async def test_no_mutation_over_get_and_graphql_bodies(client: httpx.AsyncClient) -> None:
    response = await client.get("/graphql", params={"query": REGISTER})
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "bad_request" and body["message"] == "mutations are not allowed when using GET"
    assert body["errors"][0]["extensions"] == {"code": "BAD_REQUEST", "error": "bad_request"}
    graphql = {"Content-Type": "application/graphql"}
    response = await client.post("/graphql", content="{ skippedDefinitions { name } }", headers=graphql)
    assert response.status_code == 200 and response.json() == {"data": {"skippedDefinitions": []}}
    response = await client.post("/graphql", content=REGISTER, headers=graphql)
    assert response.status_code == 400 and "may only hold a query" in response.json()["message"]
    assert await registered(client) == []


async def test_transport_errors_are_json_with_a_code(client: httpx.AsyncClient) -> None:
    response = await client.post("/graphql", content="{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"] == "bad_request"
    subscription = 'subscription { workloadPhaseChanged { phase } }'
    response = await client.post("/graphql", json={"query": subscription})
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("subscriptions are not allowed when using POST") and "text/event-stream" in message


@pytest.fixture
async def cors_client(tmp_path, reader: SnapshotReader) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    settings = Settings(state_dir=tmp_path / "state")
    settings.http.cors_origins = (PORTAL,)
    app = create_app(settings, reader=reader)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


async def test_cors_is_opt_in_with_preflight(client: httpx.AsyncClient, cors_client: httpx.AsyncClient) -> None:
    preflight = {"Origin": PORTAL, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    assert (await client.options("/api/v1/definitions", headers=preflight)).status_code == 405  # CORS off
    response = await cors_client.options("/api/v1/definitions", headers=preflight)
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == PORTAL
    assert "POST" in response.headers["access-control-allow-methods"]
    other = await cors_client.options("/api/v1/definitions", headers={**preflight, "Origin": "https://evil.example"})
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    created = await cors_client.post("/api/v1/definitions", content=TEXT,
                                     headers={"Origin": PORTAL, "Content-Type": "application/yaml"})
    assert created.status_code == 201 and created.headers["access-control-allow-origin"] == PORTAL
    refused = await cors_client.post("/api/v1/definitions", content=TEXT,
                                     headers={"Origin": "https://evil.example", "Content-Type": "application/yaml"})
    assert refused.status_code == 403


@pytest.mark.parametrize("host", ["rebind.evil.example", "rebind.evil.example:8080", "127.0.0.1.nip.io"])
async def test_a_dns_rebinding_page_cannot_register(client: httpx.AsyncClient, host: str) -> None:
    # the page's Origin matches its Host (same origin as the browser sees it): only the Host check refuses
    headers = {"Host": host, "Origin": f"http://{host}", "Content-Type": "application/yaml"}
    response = await client.post("/api/v1/definitions", content=TEXT, headers=headers)
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "host_not_allowed"
    assert response.json()["message"].startswith(f"writes addressed to Host {host!r} are refused")
    assert await registered(client) == []


@pytest.mark.parametrize("host", ["localhost:8080", "127.0.0.1", "[::1]:8080", "10.2.3.4:8080", "wmap-server",
                                  "portal.localhost"])
async def test_loopback_addresses_and_short_names_may_write(client: httpx.AsyncClient, host: str) -> None:
    response = await client.post("/api/v1/definitions?dryRun=true", content=TEXT,
                                 headers={"Host": host, "Content-Type": "application/yaml"})
    assert response.status_code == 200, response.text


async def test_allowed_hosts_name_service_dns_names_and_suffixes(tmp_path, reader: SnapshotReader) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(state_dir=tmp_path / "state")
    settings.http.allowed_hosts = ("wmap.tools.svc.cluster.local", ".corp.example")
    app = create_app(settings, reader=reader)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        for host, status in (("wmap.tools.svc.cluster.local:8080", 200), ("wmap.corp.example", 200),
                             ("wmap.tools.svc", 403), ("corp.example.evil.example", 403)):
            response = await c.post("/api/v1/definitions?dryRun=true", content=TEXT,
                                    headers={"Host": host, "Content-Type": "application/yaml"})
            assert response.status_code == status, (host, response.text)
