"""End to end against a real kube-apiserver: registration as Karta CRs, live informers, phase
changes through the phase endpoint, a waiting request and a subscription, two server instances.

Servers run under uvicorn on 127.0.0.1 inside the test loop, reading the test control plane
with the admin kubeconfig. Objects are created as admin through the API server's REST API
(no controllers run: Jobs and Pods are created by the test, statuses written by the test).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.config import KubeSettings, Settings
from tests.api.live import serving
from tests.api.test_mutations import broken, jobset_definition

YAML_BODY = {"Content-Type": "application/yaml"}

pytestmark = pytest.mark.cluster

JOBSET_NAME = "jobset-x-k8s-io-jobset-v1alpha2"
KARTAS = "/apis/run.ai/v1alpha1/kartas"
CONTAINER = {"name": "main", "image": "trainer:1", "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "1"},
                                                                 "limits": {"nvidia.com/gpu": "4"}}}
ROLES = {"leader": 1, "worker": 2}


@contextlib.asynccontextmanager
async def wmap_server(cp: Any, tmp: Path, *, install_crd: bool = False) -> AsyncIterator[httpx.AsyncClient]:
    """A server over the control plane; yields a client on its base URL once /readyz is 200."""
    settings = Settings(kube=KubeSettings(kubeconfig=str(cp.admin_kubeconfig), install_karta_crd=install_crd),
                        state_dir=tmp)
    app = create_app(settings)
    async with serving(app, timeout=30) as host, httpx.AsyncClient(base_url=f"http://{host}", timeout=90) as client:
        await wait_until_async(lambda: _ready(client), 60)
        yield client


async def _ready(client: httpx.AsyncClient) -> bool:
    return (await client.get("/readyz")).status_code == 200


async def wait_until_async(check: Any, timeout: float, step: float = 0.1) -> Any:
    """Await ``check()`` until it returns a truthy value (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s (last value {value!r})")
        await asyncio.sleep(step)


@contextlib.asynccontextmanager
async def live_app(control_plane: Any, state_dir: Path) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    """``create_app`` on ``control_plane`` (admin kubeconfig) served on 127.0.0.1; yields
    ``(app, client)`` once ``/readyz`` answers 200 (60 s at most)."""
    app = create_app(Settings(kube=KubeSettings(kubeconfig=str(control_plane.admin_kubeconfig)),
                              state_dir=state_dir))
    async with serving(app, timeout=30) as host, \
            httpx.AsyncClient(base_url=f"http://{host}", timeout=30) as client:

        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await wait_until_async(ready, 60)
        yield app, client



async def _post(kube: httpx.AsyncClient, path: str, body: dict) -> dict:
    response = await kube.post(path, json=body)
    assert response.status_code == 201, f"{path}: {response.status_code} {response.text}"
    result: dict = response.json()
    return result


async def create_seed(kube: httpx.AsyncClient, ns: str, name: str = "train") -> dict[str, Any]:
    """JobSet (leader x1, worker x2) + 3 Jobs + 3 Pods, 4 GPUs per pod; returns the created objects."""
    template = {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}
    jobset = await _post(kube, f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
        "spec": {"replicatedJobs": [{"name": role, "replicas": n, "template": {"spec": {
            "parallelism": 1, "completions": 1, "template": template}}} for role, n in ROLES.items()]}})
    owner = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": name,
             "uid": jobset["metadata"]["uid"], "controller": True}
    pods = []
    for role, replicas in ROLES.items():
        for index in range(replicas):
            labels = {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/replicatedjob-name": role}
            job = await _post(kube, f"/apis/batch/v1/namespaces/{ns}/jobs", {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"{name}-{role}-{index}", "labels": labels, "ownerReferences": [owner]},
                "spec": {"parallelism": 1, "completions": 1, "template": {"metadata": {"labels": labels},
                                                                          **template}}})
            pods.append(await _post(kube, f"/api/v1/namespaces/{ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{role}-{index}-0", "labels": labels, "ownerReferences": [{
                    "apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                    "uid": job["metadata"]["uid"], "controller": True}]},
                "spec": {"nodeName": "node-a", "restartPolicy": "Never", "containers": [CONTAINER]}}))
    return {"jobset": jobset, "pods": pods}


async def set_running(kube: httpx.AsyncClient, ns: str, seed: dict[str, Any]) -> None:
    """Pods Running and Ready, then the JobSet's replicated jobs ready (status subresources)."""
    for pod in seed["pods"]:
        path = f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/status"
        current = (await kube.get(path)).json()
        current["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        assert (await kube.put(path, json=current)).status_code == 200
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/{seed['jobset']['metadata']['name']}/status"
    current = (await kube.get(path)).json()
    current["status"] = {"replicatedJobsStatus": [{"name": role, "ready": n, "active": n, "succeeded": 0,
                                                   "failed": 0, "suspended": 0} for role, n in ROLES.items()]}
    response = await kube.put(path, json=current)
    assert response.status_code == 200, response.text


GRAPHQL = """query($ns: String) { workloads(namespace: $ns) { totalCount nodes { name origin phase
    roles { name pods { name } } pods { name } gpu { requestedBySpec requestedByPods allocated } } } }"""


async def workloads(client: httpx.AsyncClient, ns: str) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": GRAPHQL, "variables": {"ns": ns}})
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]["workloads"]  # type: ignore[no-any-return]


async def _first_sse_data(response: httpx.Response) -> dict:
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError("stream ended")


async def _delete_karta(kube: httpx.AsyncClient, name: str = JOBSET_NAME) -> None:
    await kube.delete(f"{KARTAS}/{name}")


async def test_catalog_registration_seed_workload_and_phase_changes(k8s_control_plane: Any, namespace: str,
                                                                    tmp_path: Path) -> None:
    async with k8s_control_plane.async_client() as kube, wmap_server(k8s_control_plane, tmp_path) as client:
        await _delete_karta(kube)
        try:
            created = await client.post("/api/v1/workload-types", json={"catalog": "jobset"})
            assert created.status_code in (200, 201), created.text
            karta = (await kube.get(f"{KARTAS}/{JOBSET_NAME}")).json()
            assert karta["kind"] == "Karta" and karta["metadata"]["labels"]["karta.run.ai/kind"] == "JobSet"

            seed = await create_seed(kube, namespace)
            view = await wait_until_async(
                lambda: _one_with_pods(client, namespace, 3), 30)
            assert view["origin"] == "cluster" and view["phase"] == "INITIALIZING"
            assert [r["name"] for r in view["roles"]] == ["leader", "worker"]
            assert view["gpu"] == {"requestedBySpec": 12, "requestedByPods": 12, "allocated": 12}

            phase_path = f"/api/v1/namespaces/{namespace}/workloads/jobset.x-k8s.io/JobSet/train/phase"
            waiting = asyncio.create_task(client.get(phase_path, params={"wait": "Running", "timeout": "60s"}))
            sub = {"query": f'subscription {{ workloadPhaseChanged(namespace: "{namespace}") {{ phase '
                            f'previousPhase workload {{ name }} }} }}'}
            async with client.stream("POST", "/graphql", json=sub,
                                     headers={"Accept": "text/event-stream"}) as stream:
                await asyncio.sleep(0.5)  # let the subscription register its queue
                assert not waiting.done()
                await set_running(kube, namespace, seed)
                event = await asyncio.wait_for(_first_sse_data(stream), 30)
            change = event["data"]["workloadPhaseChanged"]
            assert change["workload"]["name"] == "train" and change["phase"] == "RUNNING"
            response = await asyncio.wait_for(waiting, 30)
            assert response.status_code == 200 and response.json()["phase"] == "Running"
            assert (await client.get(phase_path)).json() == {"phase": "Running", "phases": ["Running"]}
        finally:
            await _delete_karta(kube)


async def _one_with_pods(client: httpx.AsyncClient, ns: str, pods: int) -> dict | None:
    conn = await workloads(client, ns)
    if conn["totalCount"] == 1 and len(conn["nodes"][0]["pods"]) == pods:
        return conn["nodes"][0]  # type: ignore[no-any-return]
    return None


async def _origin(client: httpx.AsyncClient, ns: str) -> str | None:
    conn = await workloads(client, ns)
    return conn["nodes"][0]["origin"] if conn["totalCount"] == 1 else None


async def test_definition_registered_on_one_instance_is_used_by_another(k8s_control_plane: Any, namespace: str,
                                                                        tmp_path: Path) -> None:
    async with k8s_control_plane.async_client() as kube:
        await _delete_karta(kube)
        await create_seed(kube, namespace)
        async with wmap_server(k8s_control_plane, tmp_path / "a") as a, \
                wmap_server(k8s_control_plane, tmp_path / "b") as b:
            try:
                assert await wait_until_async(lambda: _origin(b, namespace), 30) == "catalog"
                definition = jobset_definition(JOBSET_NAME)
                definition["metadata"]["labels"] = {"team": "ml-platform"}
                response = await a.post("/api/v1/definitions", content=yaml.safe_dump(definition), headers=YAML_BODY)
                assert response.status_code in (200, 201), response.text
                await wait_until_async(lambda: _is(b, namespace, "cluster"), 30)
                seen = (await b.get(f"/api/v1/definitions/{JOBSET_NAME}")).json()
                assert seen["origin"] == "cluster" and seen["manifest"]["metadata"]["labels"]["team"] == "ml-platform"

                invalid = await a.post("/api/v1/definitions", content=yaml.safe_dump(broken(definition)), headers=YAML_BODY)
                assert invalid.status_code == 422 and len(invalid.json()["details"]) >= 2
                stored = (await kube.get(f"{KARTAS}/{JOBSET_NAME}")).json()
                assert stored["spec"] == definition["spec"]  # the Karta was not touched
                for server in (a, b):
                    assert await _origin(server, namespace) == "cluster"

                type_id = (await a.get("/api/v1/workload-types?externalTypesOnly=true")).json()["items"][0]["id"]
                assert (await a.delete(f"/api/v1/workload-types/{type_id}")).status_code == 200
                await wait_until_async(lambda: _is(b, namespace, "catalog"), 30)
            finally:
                await _delete_karta(kube)


async def _is(client: httpx.AsyncClient, ns: str, origin: str) -> bool:
    return await _origin(client, ns) == origin


async def test_invalid_karta_in_the_cluster_is_skipped(k8s_control_plane: Any, tmp_path: Path) -> None:
    async with k8s_control_plane.async_client() as kube, wmap_server(k8s_control_plane, tmp_path) as client:
        bad = copy.deepcopy(broken(jobset_definition("broken-one")))
        await _post(kube, KARTAS, bad)
        try:
            async def skipped() -> bool:
                body = (await client.get("/api/v1/definitions")).json()
                return "broken-one" in [s["name"] for s in body["skipped"]]

            await wait_until_async(skipped, 30)
            assert (await client.get("/readyz")).status_code == 200
        finally:
            await _delete_karta(kube, "broken-one")


CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/kartas.run.ai"


async def test_missing_karta_crd_is_reported_and_installed_on_request(k8s_control_plane: Any,
                                                                      tmp_path: Path) -> None:
    """Runs last in this file: it deletes the Karta CRD, lets the server install its own, then
    restores the session's CRD."""
    async with k8s_control_plane.async_client() as kube:
        await kube.delete(CRD)

        async def gone() -> bool:
            return (await kube.get(CRD)).status_code == 404

        await wait_until_async(gone, 60)
        try:
            async with wmap_server(k8s_control_plane, tmp_path / "a") as client:
                verbose = (await client.get("/readyz?verbose")).text
                assert "karta-crd missing" in verbose and "run.ai/v1alpha1/Karta crd_missing" in verbose
                refused = await client.post("/api/v1/workload-types", json={"catalog": "jobset"})
                assert refused.status_code == 503 and refused.json()["error"] == "store_unavailable"
                assert "--install-karta-crd" in refused.json()["message"]
        finally:
            async with wmap_server(k8s_control_plane, tmp_path / "b", install_crd=True) as client:
                assert "karta-crd installed" in (await client.get("/readyz?verbose")).text
                created = await client.post("/api/v1/workload-types", json={"catalog": "jobset"})
                assert created.status_code == 201, created.text
                assert (await client.delete(f"/api/v1/definitions/{JOBSET_NAME}")).status_code == 200
            # put the session's own Karta CRD back: later tests (other files) write Kartas the
            # full-schema CRD installed by the server would default or reject
            await kube.delete(CRD)
            await wait_until_async(gone, 60)
            from tests.cluster.crds import own_crds

            k8s_control_plane.create_crd(next(m for m in own_crds() if m["metadata"]["name"] == "kartas.run.ai"))
