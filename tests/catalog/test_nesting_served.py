"""Nested views on the serving path: materializer + resolver worker processes + REST/GraphQL (127.0.0.1).

The server resolves a TrainJob and its nested JobSet in a worker process; a change to the
inner JobSet, or to one of its pods, re-resolves the TrainJob's view (the change marks every
covered owner on the chain dirty), so does a new definition of the inner kind (the rescan
marks the workloads whose definition nests it), and the served view equals the offline one.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import httpx

from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings
from workload_map.definitions.load import load_definition
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from tests.api.live import serving
from tests.catalog.support import catalog, definition, load, resolve_objects

SLUG = "trainer-kubeflow-org-trainjob-v1alpha1"
URL = "/api/v1/namespaces/llm-train/workloads/trainer.kubeflow.org/TrainJob/llama-sft"


def _app(tmp_path: Path, reader: SnapshotReader) -> Any:
    settings = Settings(state_dir=tmp_path / "state", resolver=ResolverSettings(workers=1, timeout_s=10.0))
    return create_app(settings, reader=reader, registry=DefinitionRegistry(catalog()))


def _of(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for d in docs if d["kind"] == kind))


async def test_inner_changes_reach_the_outer_view(tmp_path: Path) -> None:
    docs = load(SLUG, "running")
    assert docs[0]["metadata"]["namespace"] == "llm-train"
    reader = SnapshotReader(docs)
    app = _app(tmp_path, reader)
    async with serving(app) as host, httpx.AsyncClient(base_url=f"http://{host}",
                                                                           timeout=10) as client:
        body = (await client.get(URL)).json()
        assert body["roles"] == resolve_objects(definition(SLUG), docs).to_dict()["roles"]
        assert [(r["name"], r["definition"]) for r in body["roles"]] == [("node", "jobset-x-k8s-io-jobset-v1alpha2")]
        assert body["gpu"]["requestedBySpec"] == 16  # 1 replica x parallelism 2 x 8 GPUs
        query = ('{ workload(namespace: "llm-train", group: "trainer.kubeflow.org", kind: "TrainJob", '
                 'name: "llama-sft") { roles { name definition } gpu { requestedBySpec } } }')
        graphql = (await client.post("/graphql", json={"query": query})).json()["data"]["workload"]
        assert graphql == {"roles": [{"name": "node", "definition": "jobset-x-k8s-io-jobset-v1alpha2"}],
                           "gpu": {"requestedBySpec": 16.0}}
        listed = (await client.get("/api/v1/namespaces/llm-train/workloads")).json()
        assert [i["kind"] for i in listed["items"]] == ["TrainJob"]  # the JobSet is not listed

        jobset = _of(docs, "JobSet")  # the inner object changes: replicas 1 -> 2
        jobset["spec"]["replicatedJobs"][0]["replicas"] = 2
        jobset["metadata"]["resourceVersion"] = "999001"
        reader.add(jobset)
        latest: dict[str, Any] = {}

        async def refresh() -> None:
            latest.update((await client.get(URL)).json())

        async def spec_is(value: int) -> bool:
            await refresh()
            return bool(latest["gpu"]["requestedBySpec"] == value)

        await _poll(lambda: spec_is(32), 10)  # 2 replicas x parallelism 2 x 8 GPUs
        assert latest["replicas"]["desired"] == 4 and latest["roles"][0]["replicas"]["desired"] == 4

        pod = _of(docs, "Pod")  # one of its pods is no longer ready
        pod["status"]["conditions"] = [c if c["type"] != "Ready" else {**c, "status": "False"}
                                       for c in pod["status"]["conditions"]]
        pod["metadata"]["resourceVersion"] = "999002"
        reader.add(pod)

        async def ready_is(value: int) -> bool:
            await refresh()
            return bool(latest["roles"][0]["replicas"]["ready"] == value)

        await _poll(lambda: ready_is(1), 10)  # 2 pods, 1 ready
        assert latest["gpu"]["requestedByPods"] == 16  # still 2 live pods x 8, once

        # a new definition of the inner kind re-resolves the outer workload (its own definition
        # did not change)
        manifest = copy.deepcopy(definition("jobset-x-k8s-io-jobset-v1alpha2").manifest)
        manifest["metadata"]["name"] = "jobset-site"
        app.state.runtime.service.registry.register(load_definition(manifest), origin="file")

        async def inner_definition_is(name: str) -> bool:
            await refresh()
            return bool(latest["roles"][0]["definition"] == name)

        await _poll(lambda: inner_definition_is("jobset-site"), 10)
        assert latest["definition"] == SLUG and latest["gpu"]["requestedBySpec"] == 32


async def _poll(check: Any, timeout: float, step: float = 0.05) -> None:
    """Await ``check()`` until it is true, at most ``timeout`` seconds (bounded loop)."""
    for _ in range(int(timeout / step)):
        if await check():
            return
        await asyncio.sleep(step)
    raise AssertionError("the outer view did not change in time")
