"""Callers through the HTTP API, in process, with a fake reviewer (no cluster).

bob may list JobSets in a and b and get pods in b; alice lists a (pods too); root lists
everything and may write Kartas. Objects: JobSets train-a, train-b, train-c in namespaces
a, b, c.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
import yaml

from workload_map.app import create_app
from workload_map.auth.access import KubernetesAccess
from workload_map.config import AuthSettings, Settings
from tests.api.live import serving, wait_until
from tests.api.objects import running
from tests.api.test_mutations import jobset_definition
from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, auth_app, bearer, objects

WORKLOADS = "/api/v1/workloads"
ONE = "/api/v1/namespaces/{ns}/workloads/jobset.x-k8s.io/JobSet/train-{ns}"
LIST = """query($ns: String) { workloads(namespace: $ns) { totalCount nodes { namespace name
    pods { name } components { nodes pods { name } } gangGroups { pods } } } }"""
ONE_GQL = """query($ns: String!, $name: String!) { workload(namespace: $ns, group: "jobset.x-k8s.io",
    kind: "JobSet", name: $name) { name pods { name } } }"""


async def gql(client: httpx.AsyncClient, token: str, query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables}, headers=bearer(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_no_token_and_bad_tokens_are_401_and_health_stays_open(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        for headers in ({}, bearer("forged"), {"Authorization": "Basic Ym9iOnB3"}, {"Authorization": "Bearer"}):
            for method, path in (("GET", WORKLOADS), ("POST", "/graphql"), ("GET", "/openapi.json"),
                                 ("POST", "/api/v1/definitions")):
                response = await client.request(method, path, headers=headers, json={"query": "{ cluster }"})
                assert response.status_code == 401, (headers, path, response.text)
                assert response.json()["error"] == "unauthorized"
                assert response.headers["www-authenticate"].startswith("Bearer")
        for path in ("/livez", "/readyz", "/healthz", "/metrics"):
            assert (await client.get(path)).status_code == 200, path
        # the GraphiQL page a browser opens is static (no cluster data): no token needed for it...
        page = await client.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert (await client.get("/")).status_code in (302, 307)
        # ...but a query over GET, even asking for HTML, and a POST still need one
        for method, path in (("GET", "/graphql?query=%7Bcluster%7Bname%7D%7D"), ("POST", "/graphql")):
            response = await client.request(method, path, headers={"Accept": "text/html"}, json={"query": "{ cluster }"})
            assert response.status_code == 401, (method, path)


async def test_private_metrics_need_get_on_the_metrics_url(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"), metrics_public=False)
    async with auth_app(tmp_path, settings=settings) as (_, client):
        assert (await client.get("/metrics")).status_code == 401
        assert (await client.get("/metrics", headers=bearer("bob-token"))).status_code == 403
        assert (await client.get("/metrics", headers=bearer("root-token"))).status_code == 200


async def test_lists_are_filtered_to_what_the_caller_may_list(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        for token, expected in (("alice-token", ["a"]), ("bob-token", ["a", "b"]), ("root-token", ["a", "b", "c"])):
            rest = (await client.get(WORKLOADS, headers=bearer(token))).json()
            assert [i["namespace"] for i in rest["items"]] == expected and rest["totalCount"] == len(expected)
            body = await gql(client, token, LIST)
            assert [n["namespace"] for n in body["data"]["workloads"]["nodes"]] == expected, token
            summary = await gql(client, token, "{ gpuSummary(groupBy: NAMESPACE) { key workloads } }")
            assert [b["key"] for b in summary["data"]["gpuSummary"]] == expected
        denied = (await client.get("/api/v1/namespaces/c/workloads", headers=bearer("bob-token"))).json()
        assert denied["items"] == [] and denied["totalCount"] == 0  # filtered, not 403
        body = await gql(client, "bob-token", LIST, ns="c")
        assert body["data"]["workloads"]["totalCount"] == 0


async def test_one_workload_the_caller_may_not_list_is_not_found(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        hidden = await client.get(ONE.format(ns="c"), headers=bearer("bob-token"))
        missing = await client.get(ONE.format(ns="c").replace("train-c", "nope"), headers=bearer("root-token"))
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"] == missing.json()["error"] == "workload_not_found"
        assert hidden.json()["message"].replace("train-c", "nope") == missing.json()["message"]
        assert (await client.get(ONE.format(ns="c") + "/phase", headers=bearer("bob-token"))).status_code == 404
        waited = await client.get(ONE.format(ns="c") + "/phase?wait=Running&timeout=1s", headers=bearer("bob-token"))
        assert waited.status_code == 404
        assert (await client.get(ONE.format(ns="b"), headers=bearer("bob-token"))).status_code == 200
        body = await gql(client, "bob-token", ONE_GQL, ns="c", name="train-c")
        assert body["data"]["workload"] is None and "errors" not in body
        body = await gql(client, "bob-token", ONE_GQL, ns="b", name="train-b")
        assert body["data"]["workload"]["name"] == "train-b"


async def test_pod_details_only_where_the_caller_may_get_pods(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        body = await gql(client, "bob-token", LIST)
        by_ns = {n["namespace"]: n for n in body["data"]["workloads"]["nodes"]}
        assert by_ns["a"]["pods"] == [] and by_ns["a"]["components"][0]["nodes"] == []
        assert all(g["pods"] == [] for g in by_ns["a"]["gangGroups"])
        assert len(by_ns["b"]["pods"]) == 2 and by_ns["b"]["components"][0]["nodes"] == ["node-a"]
        hidden = (await client.get(ONE.format(ns="a"), headers=bearer("bob-token"))).json()
        shown = (await client.get(ONE.format(ns="b"), headers=bearer("bob-token"))).json()
        assert hidden["unattributedPods"] == [] and all(r["pods"] == [] and r["nodes"] == [] for r in hidden["roles"])
        assert hidden["replicas"] == shown["replicas"] and hidden["gpu"] == shown["gpu"]  # counts stay
        assert sum(len(r["pods"]) for r in shown["roles"]) == 2
        full = (await client.get(WORKLOADS + "?view=full", headers=bearer("bob-token"))).json()["items"]
        assert [sum(len(r["pods"]) for r in i["roles"]) for i in full] == [0, 2]


async def test_registration_needs_create_on_kartas_and_stores_nothing_otherwise(tmp_path: Path) -> None:
    text = yaml.safe_dump(jobset_definition("mine"))
    register = """mutation($doc: String!) { registerDefinition(definition: $doc) { ok } }"""
    async with auth_app(tmp_path) as (app, client):
        state = app.state.runtime.settings.state_dir
        for path in ("/api/v1/definitions", "/api/v1/definitions?dryRun=true"):
            refused = await client.post(path, content=text,
                                        headers={**bearer("bob-token"), "Content-Type": "application/yaml"})
            assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
            assert "'bob' may not create kartas.run.ai" in refused.json()["message"]
        refused = await client.post("/api/v1/workload-types", json={"catalog": "jobset"}, headers=bearer("bob-token"))
        assert refused.status_code == 403
        body = await gql(client, "bob-token", register, doc=text)
        assert body["data"] is None and body["errors"][0]["extensions"] == {"code": "FORBIDDEN", "error": "forbidden"}
        assert not state.exists() or not list(state.iterdir())
        created = await client.post("/api/v1/definitions", content=text,
                                    headers={**bearer("root-token"), "Content-Type": "application/yaml"})
        assert created.status_code == 201
        assert (state / "mine.yaml").exists()
        gone = await client.delete("/api/v1/definitions/mine", headers=bearer("bob-token"))
        assert gone.status_code == 403 and (state / "mine.yaml").exists()
        body = await gql(client, "bob-token", 'mutation { unregisterDefinition(name: "mine") { ok } }')
        assert body["errors"][0]["extensions"] == {"code": "FORBIDDEN", "error": "forbidden"}
        assert (await client.delete("/api/v1/definitions/mine", headers=bearer("root-token"))).status_code == 200


async def test_review_outage_is_503_not_500(tmp_path: Path) -> None:
    class Down(FakeReviewer):
        async def review_token(self, token: str) -> None:  # type: ignore[override]
            from workload_map.kube.reviews import ReviewUnavailable
            raise ReviewUnavailable("cannot check the caller: the API server did not answer the TokenReview")

    async with auth_app(tmp_path, Down(USERS, RULES)) as (_, client):
        response = await client.get(WORKLOADS, headers=bearer("bob-token"))
        assert response.status_code == 503 and response.json()["error"] == "auth_unavailable"


async def test_reviews_are_few_and_never_see_a_cached_token_twice(tmp_path: Path) -> None:
    reviewer = FakeReviewer(USERS, RULES)
    async with auth_app(tmp_path, reviewer) as (_, client):
        for _ in range(5):
            assert (await client.get(WORKLOADS, headers=bearer("bob-token"))).status_code == 200
        assert reviewer.tokens_seen == ["bob-token"]
        # one cluster-wide ask per kind with objects, then the namespaces holding that kind
        kinds = {a.resource for _, a in reviewer.access_seen}
        assert len(reviewer.access_seen) <= 4 * max(len(kinds), 1)


async def _ws_next(ws: Any) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if message["type"] != "ping":
            return message


@pytest.mark.parametrize("init", [{"Authorization": "Bearer bob-token"}, {"authToken": "bob-token"}])
async def test_websocket_authenticates_from_connection_init(tmp_path: Path, init: dict[str, str]) -> None:
    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"))
    app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(FakeReviewer(USERS, RULES)))
    query = {"query": "{ workloads { totalCount } }"}
    async with serving(app) as host:
        url = f"ws://{host}/graphql"
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {"token": "forged"}}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await _ws_next(ws)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": query}))
            with pytest.raises(websockets.ConnectionClosed):  # nothing runs before connection_init
                await _ws_next(ws)
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": init}))
            assert (await _ws_next(ws))["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": query}))
            assert (await _ws_next(ws))["payload"]["data"]["workloads"]["totalCount"] == 2
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=5,
                                      additional_headers=bearer("alice-token")) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert (await _ws_next(ws))["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": query}))
            assert (await _ws_next(ws))["payload"]["data"]["workloads"]["totalCount"] == 1
        with pytest.raises(websockets.InvalidStatus):  # a header that does not authenticate: refused upgrade
            async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=5,
                                          additional_headers=bearer("forged")):
                pass


async def test_subscription_sends_only_visible_workloads(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"))
    reader = PluralReader(objects())
    app = create_app(settings, reader=reader, access=KubernetesAccess(FakeReviewer(USERS, RULES)))
    subscription = "subscription { workloadPhaseChanged { phase workload { namespace name pods { name } } } }"
    async with serving(app) as host, httpx.AsyncClient(timeout=10) as client:
        before = app.state.runtime.service.feed.subscribers
        async with client.stream("POST", f"http://{host}/graphql", json={"query": subscription},
                                 headers={"Accept": "text/event-stream", **bearer("alice-token")}) as response:
            assert response.status_code == 200
            await wait_until(lambda: app.state.runtime.service.feed.subscribers > before, 5)
            for ns in ("c", "b", "a"):  # alice may list only a
                jobset = reader.get(next(g for g in reader.gvks() if g.kind == "JobSet"), ns, f"train-{ns}")
                assert jobset is not None
                reader.add(running(dict(jobset)))
            payload = await asyncio.wait_for(_first_data(response), 5)
        change = payload["data"]["workloadPhaseChanged"]
        assert change["workload"]["namespace"] == "a" and change["phase"] == "RUNNING"
        assert len(change["workload"]["pods"]) == 2


async def _first_data(response: httpx.Response) -> dict[str, Any]:
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            data: dict[str, Any] = json.loads(line[5:])
            return data
    raise AssertionError("stream ended without data")
