"""Two objects sharing one uid through the front doors (issue 28 item 3): REST, GraphQL, ``wmap get``/``describe``.

The real API server assigns uids itself, so the conflict arises from snapshot files or a
restore: the server here runs on a snapshot reader with its background materializer
(worker processes), and the changes are fed through the reader's add/remove, which deliver
the informers' change events. Objects and figures: tests/service/test_identity_workloads.py
(the seed JobSet ``ml/train``: 3 pods, 12 GPUs; ``ml/train-copy`` with its uid).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.api.conftest import gql
from tests.api.live import serving, wait_until
from tests.api.test_cluster_e2e import wait_until_async
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset
from workload_map.app import create_app
from workload_map.cli.main import main
from workload_map.config import Settings
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader

CONFLICT = ("identity conflict: uid uid-js is held by 2 distinct objects (jobset.x-k8s.io/JobSet ml/train, "
            "jobset.x-k8s.io/JobSet ml/train-copy); the objects that name it as their owner are attached to none")
WORKLOADS = "{ workloads { totalCount nodes { name phase pods { name } errors { field message } } } }"


def objects() -> list[dict[str, Any]]:
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    twin = copy.deepcopy(original)
    twin["metadata"]["name"] = "train-copy"
    return [original, twin, *jobs, *pods]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[SnapshotReader, httpx.AsyncClient]]:
    reader = SnapshotReader(objects())
    app = create_app(Settings(state_dir=tmp_path / "state"), reader=reader)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        await wait_until_async(lambda: _ready(client), timeout=60)
        yield reader, client


async def _ready(client: httpx.AsyncClient, base: str = "") -> bool:
    return (await client.get(f"{base}/readyz")).status_code == 200


async def listed(client: httpx.AsyncClient) -> list[tuple[str, str, int, int]]:
    """(name, phase, current replicas, GPUs by pods) of the REST list."""
    response = await client.get("/api/v1/workloads")
    assert response.status_code == 200, response.text
    return [(i["name"], i["phase"], i["replicas"]["current"], i["gpu"]["requestedByPods"])
            for i in response.json()["items"]]


async def test_rest_and_graphql_list_both_holders_and_follow_a_deletion(
        served: tuple[SnapshotReader, httpx.AsyncClient]) -> None:
    reader, client = served
    assert await listed(client) == [("train", "Undefined", 0, 0), ("train-copy", "Undefined", 0, 0)]
    detail = await client.get("/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train-copy")
    assert detail.status_code == 200 and detail.json()["name"] == "train-copy"
    body = await gql(client, WORKLOADS)
    assert body["data"]["workloads"] == {"totalCount": 2, "nodes": [
        {"name": name, "phase": "UNDEFINED", "pods": [], "errors": [{"field": "metadata.uid", "message": CONFLICT}]}
        for name in ("train", "train-copy")]}
    # train-copy deleted: train alone again, 3 pods (leader 1 + worker 2, one per Job), 12 GPUs
    reader.remove(GVK("jobset.x-k8s.io", "v1alpha2", "JobSet"), "ml", "train-copy")
    alone = [("train", "Running", 3, 12)]

    async def settled() -> bool:
        return await listed(client) == alone

    await wait_until_async(settled, timeout=30)
    body = await gql(client, WORKLOADS)
    (node,) = body["data"]["workloads"]["nodes"]
    assert (node["name"], node["phase"], len(node["pods"]), node["errors"]) == ("train", "RUNNING", 3, [])


def test_wmap_get_over_a_snapshot_lists_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "restored.yaml"
    path.write_text(yaml.safe_dump_all(objects()))
    assert main(["get", "jobset", "--snapshot", str(path), "-o", "name"]) == 0
    assert capsys.readouterr().out == "jobset.jobset.x-k8s.io/train\njobset.jobset.x-k8s.io/train-copy\n"
    assert main(["get", "jobset", "--snapshot", str(path), "-o", "yaml"]) == 0
    items = yaml.safe_load(capsys.readouterr().out)["items"]
    assert [(i["name"], i["phase"], i["replicas"]["current"]) for i in items] == [
        ("train", "Undefined", 0), ("train-copy", "Undefined", 0)]
    for name in ("train", "train-copy"):  # the list rows carry no errors: describe each holder
        assert main(["describe", "jobset", name, "-n", "ml", "--snapshot", str(path), "-o", "json"]) == 0
        view = yaml.safe_load(capsys.readouterr().out)
        assert (view["name"], view["replicas"]["current"], view["gpu"]["requestedByPods"]) == (name, 0, 0)
        assert [e["message"] for e in view["errors"] if e["field"] == "metadata.uid"] == [CONFLICT]


async def test_the_phase_subscription_tells_holders_apart(tmp_path: Path) -> None:
    # train alone is Running; its copy arrives: train turns Undefined (previous RUNNING) and
    # train-copy is a new workload (previous null), two messages although the uid is one
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    reader = SnapshotReader([original, *jobs, *pods])
    app = create_app(Settings(state_dir=tmp_path / "state"), reader=reader)
    query = 'subscription { workloadPhaseChanged(namespace: "ml") { phase previousPhase workload { name } } }'
    async with serving(app) as host, httpx.AsyncClient(timeout=10) as client:
        await wait_until_async(lambda: _ready(client, f"http://{host}"), timeout=60)
        before = app.state.runtime.service.feed.subscribers
        async with client.stream("POST", f"http://{host}/graphql", json={"query": query},
                                 headers={"Accept": "text/event-stream"}) as response:
            await wait_until(lambda: app.state.runtime.service.feed.subscribers > before, 5)
            reader.add(objects()[1])
            changes = await asyncio.wait_for(_data(response, 2), 10)
    assert sorted((c["workload"]["name"], c["phase"], c["previousPhase"]) for c in changes) == [
        ("train", "UNDEFINED", "RUNNING"), ("train-copy", "UNDEFINED", None)]


async def _data(response: httpx.Response, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:])["data"]["workloadPhaseChanged"])
            if len(out) == count:
                return out
    raise AssertionError("stream ended early")
