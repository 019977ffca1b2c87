"""REST endpoints and their error codes, over the JobSet fixture."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import yaml
from starlette.routing import Route
from starlette.applications import Starlette

from workload_map.cli.render import render
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import gql
from tests.api.objects import running
from tests.api.test_mutations import REGISTER, broken, jobset_definition

YAML_BODY = {"Content-Type": "application/yaml"}
JSON_BODY = {"Content-Type": "application/json"}

TRAIN = "/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train"


def runai_body(doc: dict, **extra: object) -> dict:
    return {"name": "JobSet", "group": "jobset.x-k8s.io", "categoryId": "c-1", "priorityId": "p-1",
            "resourceInterfaces": [{"spec": doc["spec"]}], **extra}


async def test_workload_json_is_the_describe_json(client: httpx.AsyncClient, reader: SnapshotReader, app) -> None:
    response = await client.get(TRAIN)
    assert response.status_code == 200
    view = app.state.runtime.service.workloads()[0]
    assert response.json() == json.loads(render([view], "json"))
    assert response.json()["gpu"]["requestedBySpec"] == 12


async def test_workload_list_and_paging(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api/v1/namespaces/ml/workloads")).json()
    assert body["count"] == 1 and body["totalCount"] == 1 and body["continue"] is None
    row = body["items"][0]
    assert (row["name"], row["phase"], row["gpu"]["allocated"]) == ("train", "Initializing", 8)
    assert (await client.get("/api/v1/workloads?view=full")).json()["items"][0]["roles"][0]["name"] == "leader"
    assert (await client.get("/api/v1/namespaces/other/workloads")).json()["count"] == 0
    assert (await client.get("/api/v1/workloads?phase=Running")).json()["count"] == 0


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/nope", 404, "workload_not_found"),
    ("/api/v1/namespaces/ml/workloads/core/Pod/x", 404, "workload_not_found"),
    ("/api/v1/workloads?limit=501", 400, "bad_request"),
    ("/api/v1/workloads?limit=abc", 400, "bad_request"),
    ("/api/v1/workloads?phase=Sleeping", 400, "bad_request"),
    (TRAIN + "/phase?wait=Running&timeout=forever", 400, "bad_request"),
    (TRAIN + "/phase?wait=Running&timeout=601s", 400, "bad_request"),
    ("/api/v1/workload-types/00000000-0000-0000-0000-000000000000", 404, "definition_not_found"),
    ("/api/v1/definitions/none", 404, "definition_not_found"),
    ("/no/such/route", 404, "not_found"),
])
async def test_error_codes(client: httpx.AsyncClient, path: str, status: int, code: str) -> None:
    response = await client.get(path)
    assert response.status_code == status
    body = response.json()
    assert body["error"] == code and body["message"] and isinstance(body["details"], list)


async def test_phase(client: httpx.AsyncClient) -> None:
    assert (await client.get(TRAIN + "/phase")).json() == {"phase": "Initializing", "phases": ["Initializing"]}
    reached = await client.get(TRAIN + "/phase?wait=initializing&timeout=1s")
    assert reached.status_code == 200


async def test_phase_wait_times_out_with_408(client: httpx.AsyncClient) -> None:
    response = await client.get(TRAIN + "/phase?wait=Running&timeout=200ms")
    assert response.status_code == 408
    assert response.json()["details"] == [{"phase": "Initializing", "phases": ["Initializing"]}]


async def test_phase_wait_returns_when_a_change_arrives(app: Starlette, client: httpx.AsyncClient,
                                                        reader: SnapshotReader) -> None:
    feed = app.state.runtime.service.feed  # ?wait= reads the service's change feed
    subscribers = feed.subscribers
    request = asyncio.create_task(client.get(TRAIN + "/phase?wait=Running&timeout=10s"))
    await asyncio.sleep(0.1)
    assert not request.done() and feed.subscribers == subscribers + 1
    jobset_obj = reader.list(next(g for g in reader.gvks() if g.kind == "JobSet"))[0]
    reader.add(running(dict(jobset_obj)))
    response = await asyncio.wait_for(request, 5)
    assert response.status_code == 200 and response.json()["phase"] == "Running"
    assert feed.subscribers == subscribers  # the waiter released its subscriber


async def test_post_definition_valid_dry_run_invalid_and_previous_kept(client: httpx.AsyncClient) -> None:
    text = yaml.safe_dump(jobset_definition())
    dry = await client.post("/api/v1/definitions?dryRun=true", content=text, headers=YAML_BODY)
    assert dry.status_code == 200 and dry.json()["dryRun"] is True
    created = await client.post("/api/v1/definitions", content=text, headers=YAML_BODY)
    assert created.status_code == 201 and created.json()["definition"]["origin"] == "state"
    assert (await client.post("/api/v1/definitions", content=json.dumps(jobset_definition()), headers=JSON_BODY)).status_code == 200
    invalid = await client.post("/api/v1/definitions", content=yaml.safe_dump(broken(jobset_definition())), headers=YAML_BODY)
    assert invalid.status_code == 422
    body = invalid.json()
    assert body["error"] == "invalid_definition" and len(body["details"]) >= 2
    # {path, message}, and the expression (cut at 200 characters) for a jq expression's problem
    assert all(set(p) == {"path", "message"} or set(p) == {"path", "message", "expression"} for p in body["details"])
    assert (await client.get(TRAIN)).json()["definition"] == "my-jobset"
    conflict = await client.post("/api/v1/definitions", content=yaml.safe_dump(jobset_definition("other")), headers=YAML_BODY)
    assert conflict.status_code == 409 and conflict.json()["error"] == "conflict"
    assert (await client.post("/api/v1/definitions", content="", headers=YAML_BODY)).status_code == 400
    listed = (await client.get("/api/v1/definitions")).json()
    assert "my-jobset" in [d["name"] for d in listed["items"]]
    assert (await client.delete("/api/v1/definitions/my-jobset")).status_code == 200
    assert (await client.delete("/api/v1/definitions/my-jobset")).status_code == 404


async def test_runai_workload_type_round_trip(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/workload-types", json=runai_body(jobset_definition(),
                                                                              preemptibility="preemptible"))
    assert response.status_code == 201, response.text
    created = response.json()
    assert (created["name"], created["group"], created["origin"]) == ("JobSet", "jobset.x-k8s.io", "state")
    assert (created["categoryId"], created["priorityId"], created["preemptibility"]) == ("c-1", "p-1", "preemptible")
    assert created["resourceInterfaces"][0]["definition"] == "jobset-x-k8s-io-jobset-v1alpha2"
    assert (await client.get(TRAIN)).json()["origin"] == "state"
    fetched = await client.get(f"/api/v1/workload-types/{created['id']}")
    assert fetched.status_code == 200 and fetched.json()["categoryId"] == "c-1"
    listed = (await client.get("/api/v1/workload-types?externalTypesOnly=true")).json()
    assert [t["id"] for t in listed["items"]] == [created["id"]]
    again = await client.post("/api/v1/workload-types", json=runai_body(jobset_definition()))
    assert again.status_code == 200
    deleted = await client.delete(f"/api/v1/workload-types/{created['id']}")
    assert deleted.status_code == 200
    assert (await client.get(TRAIN)).json()["origin"] == "catalog"
    builtin = await client.delete(f"/api/v1/workload-types/{created['id']}")
    assert builtin.status_code == 409


async def test_runai_body_problems_are_all_reported(client: httpx.AsyncClient) -> None:
    body = runai_body(broken(jobset_definition()), name="jobset")
    body["resourceInterfaces"].append({"nospec": True})
    response = await client.post("/api/v1/workload-types", json=body)
    assert response.status_code == 422
    paths = {p["path"] for p in response.json()["details"]}
    assert "name" in paths and "resourceInterfaces[1].spec" in paths
    assert "resourceInterfaces[0].spec.structureDefinition.childComponents[0].ownerRef" in paths
    assert (await client.get(TRAIN)).json()["origin"] == "catalog"


async def test_catalog_registration_and_bad_bodies(client: httpx.AsyncClient) -> None:
    created = await client.post("/api/v1/workload-types", json={"catalog": "jobset"})
    assert created.status_code == 201 and created.json()["name"] == "JobSet"
    assert (await client.post("/api/v1/workload-types", json={"catalog": "nope"})).status_code == 404
    assert (await client.post("/api/v1/workload-types", content="{not json", headers=JSON_BODY)).status_code == 400
    assert (await client.post("/api/v1/workload-types", json=[1])).status_code == 400


async def test_request_body_limit(client: httpx.AsyncClient, app) -> None:
    limit = app.state.runtime.settings.http.max_body_bytes
    response = await client.post("/api/v1/definitions", content=b"x" * (limit + 1), headers=YAML_BODY)
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"

    async def chunks():
        for _ in range(3):
            yield b"y" * (limit // 2 + 1)

    streamed = await client.post("/graphql", content=chunks(), headers=JSON_BODY)
    assert streamed.status_code == 413


async def test_openapi_covers_every_route(client: httpx.AsyncClient, app) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    for route in app.routes:
        if not isinstance(route, Route):
            continue
        assert route.path in doc["paths"], route.path
        for method in route.methods or ():
            if method != "HEAD":
                assert method.lower() in doc["paths"][route.path], (route.path, method)


async def test_metrics(client: httpx.AsyncClient) -> None:
    await client.get(TRAIN)
    text = (await client.get("/metrics")).text
    assert 'wmap_http_request_duration_seconds_count{method="GET",route="' + \
        '/api/v1/namespaces/{namespace}/workloads/{group}/{kind}/{name}",status="200"}' in text
    assert "wmap_resolution_duration_seconds_count" in text
    assert 'wmap_definitions{origin="catalog"}' in text
    assert "wmap_cache_objects" in text


async def test_deleting_a_builtin_definition_is_a_conflict_on_both_routes(client: httpx.AsyncClient) -> None:
    pod_type = next(t for t in (await client.get("/api/v1/workload-types")).json()["items"] if t["name"] == "Pod")
    by_type = await client.delete(f"/api/v1/workload-types/{pod_type['id']}")
    by_name = await client.delete("/api/v1/definitions/core-pod-v1")
    assert by_type.status_code == by_name.status_code == 409
    assert by_name.json()["error"] == "conflict" and by_name.json()["message"] == by_type.json()["message"]
    assert "built in" in by_name.json()["message"]
    assert (await client.delete("/api/v1/definitions/never-registered")).status_code == 404
    gone = await gql(client, 'mutation { unregisterDefinition(name: "core-pod-v1") { ok problems { message } } }')
    assert gone["data"]["unregisterDefinition"]["problems"][0]["message"] == by_name.json()["message"]


@pytest.mark.parametrize("body", [{"catalog": ""}, {"catalog": "  "}, {"catalog": 3}])
async def test_empty_catalog_name_is_a_bad_request(client: httpx.AsyncClient, body: dict) -> None:
    response = await client.post("/api/v1/workload-types", json=body)
    assert response.status_code == 400 and "catalog" in response.json()["message"]


async def test_catalog_and_runai_fields_together_are_a_bad_request(client: httpx.AsyncClient) -> None:
    for body in ({"catalog": "jobset", **runai_body(jobset_definition())}, {"catalog": "jobset", "name": "JobSet"}):
        response = await client.post("/api/v1/workload-types", json=body)
        assert response.status_code == 400, response.text
        assert "either catalog or a Run:ai workload type" in response.json()["message"]
    assert (await client.get(TRAIN)).json()["origin"] == "catalog"


async def test_runai_interface_version_must_match_the_spec(client: httpx.AsyncClient) -> None:
    body = runai_body(jobset_definition())
    body["resourceInterfaces"][0]["version"] = "v1"
    response = await client.post("/api/v1/workload-types", json=body)
    assert response.status_code == 422
    details = response.json()["details"]
    assert [p["path"] for p in details] == ["resourceInterfaces[0].version"]
    assert "v1alpha2" in details[0]["message"]
    assert (await client.get(TRAIN)).json()["origin"] == "catalog"
    body["resourceInterfaces"][0]["version"] = "v1alpha2"
    assert (await client.post("/api/v1/workload-types", json=body)).status_code == 201


async def test_dry_run_reports_the_would_be_origin_and_persists_nothing(client: httpx.AsyncClient, app,
                                                                        settings) -> None:
    runtime = app.state.runtime
    generation = runtime.registry.generation
    dry = await client.post("/api/v1/definitions?dryRun=true", content=yaml.safe_dump(jobset_definition()), headers=YAML_BODY)
    assert dry.status_code == 200
    assert dry.json()["dryRun"] is True and dry.json()["created"] is False
    assert dry.json()["definition"]["origin"] == "state"  # where it would be stored
    assert not settings.state_dir.exists() or list(settings.state_dir.iterdir()) == []
    assert runtime.registry.generation == generation and runtime.registry.registered() == []
    assert "my-jobset" not in [d["name"] for d in (await client.get("/api/v1/definitions")).json()["items"]]
    assert (await client.get(TRAIN)).json()["origin"] == "catalog"
    assert (await client.delete("/api/v1/definitions/my-jobset")).status_code == 404
    graphql = await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition()), dry=True)
    assert graphql["data"]["registerDefinition"]["definition"]["origin"] == "state"
    assert runtime.registry.registered() == [] and runtime.registry.generation == generation
    assert not settings.state_dir.exists() or list(settings.state_dir.iterdir()) == []


async def test_workload_types_take_yaml_and_keep_unknown_interface_fields(client: httpx.AsyncClient) -> None:
    body = runai_body(jobset_definition())
    body["resourceInterfaces"][0].update(version="v1alpha2", displayName="JobSet v1alpha2", weight=3)
    response = await client.post("/api/v1/workload-types", content=yaml.safe_dump(body), headers=YAML_BODY)
    assert response.status_code == 201, response.text
    (interface,) = response.json()["resourceInterfaces"]
    # the entry's own fields come back beside ours (version, definition, origin, spec)
    assert (interface["displayName"], interface["weight"], interface["version"]) == ("JobSet v1alpha2", 3, "v1alpha2")
    assert interface["definition"] == "jobset-x-k8s-io-jobset-v1alpha2"
    listed = (await client.get("/api/v1/workload-types?externalTypesOnly=true")).json()["items"]
    assert listed[0]["resourceInterfaces"][0]["displayName"] == "JobSet v1alpha2"
    two = await client.post("/api/v1/workload-types", content="a: 1\n---\nb: 2\n", headers=YAML_BODY)
    assert two.status_code == 400 and two.json()["message"] == "the request body must be one YAML mapping, got 2 documents"
