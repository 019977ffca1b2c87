"""Two real control planes served together by one ``wmap serve --context east --context west``.

Two clusters, not two namespaces standing in for them: ``k8s_control_plane`` is ``east``
and ``second_control_plane`` (its own etcd and kube-apiserver on other ports, minimal CRDs)
is ``west``; one kubeconfig holds both contexts, as kubectl's merged config would. No
controllers run: the test creates the JobSets' Jobs and Pods itself (``create_seed``).

Seed, the same namespace name in both clusters:

* east: JobSet ``train`` (leader x1, worker x2, 4 GPUs per pod, bound to node-a):
  12 GPUs requested by spec, 12 by pods, 12 allocated; 1 workload.
* west: JobSet ``train`` (same namespace and name: the collision case) with the same 12,
  plus a bare Pod ``solo`` with 2 GPUs bound to node-b: 12 + 2 = 14 spec / 14 pods / 14
  allocated; 2 workloads.

Then: west's train is suspended through the server (only west's object changes); a
definition registered for west is a Karta in west only and applies to west's train only;
west's API server is stopped: west is reported stale with its error, east keeps being
served and updated (a new 1-GPU pod: east 12 + 1 = 13), ``/readyz`` stays 200.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.config import KubeSettings, ResolverSettings, Settings
from tests.api.live import serving
from tests.api.test_cluster_e2e import create_seed, wait_until_async
from tests.api.test_mutations import jobset_definition

pytestmark = pytest.mark.cluster

JOBSETS = "jobset.x-k8s.io/JobSet"
KARTAS = "/apis/run.ai/v1alpha1/kartas"
LIST = """query($ns: String, $cluster: String) { workloads(namespace: $ns, cluster: $cluster) { totalCount
    nodes { cluster kind name gpu { requestedBySpec requestedByPods allocated } } } }"""
SUMMARY = "query($ns: String) { gpuSummary(groupBy: CLUSTER, namespace: $ns) { key workloads gpu { requestedBySpec requestedByPods allocated } } }"
CLUSTERS = "{ clusters { name synced stale error } }"


def merged_kubeconfig(path: Path, planes: dict[str, Any]) -> Path:
    """One kubeconfig with a context (and cluster and user of the same name) per control plane."""
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for name, plane in planes.items():
        admin = yaml.safe_load(Path(plane.admin_kubeconfig).read_text())
        config["clusters"].append({"name": name, "cluster": admin["clusters"][0]["cluster"]})
        config["users"].append({"name": name, "user": admin["users"][0]["user"]})
        config["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    config["current-context"] = next(iter(planes))
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@contextlib.asynccontextmanager
async def fleet_server(kubeconfig: Path, tmp: Path) -> AsyncIterator[httpx.AsyncClient]:
    """``wmap serve --kubeconfig K --context east --context west --stale-after 1`` on loopback."""
    settings = Settings(kube=KubeSettings(kubeconfig=str(kubeconfig), kubeconfigs=(str(kubeconfig),),
                                          contexts=("east", "west"), stale_after_s=1.0),
                        state_dir=tmp, resolver=ResolverSettings(workers=2))
    async with serving(create_app(settings), timeout=30) as host, \
            httpx.AsyncClient(base_url=f"http://{host}", timeout=60) as client:
        await wait_until_async(lambda: _ok(client, "/readyz"), 90)
        yield client


async def _ok(client: httpx.AsyncClient, path: str) -> bool:
    return (await client.get(path)).status_code == 200


async def gql(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    body: dict[str, Any] = (await client.post("/graphql", json={"query": query, "variables": variables})).json()
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


async def _create_namespace(kube: httpx.AsyncClient, name: str) -> None:
    response = await kube.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": name}})
    assert response.status_code == 201, response.text


async def _bare_pod(kube: httpx.AsyncClient, ns: str, name: str, gpus: int, node: str) -> None:
    container = {"name": "main", "image": "x:1", "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                                                               "limits": {"nvidia.com/gpu": str(gpus)}}}
    response = await kube.post(f"/api/v1/namespaces/{ns}/pods", json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [container]}})
    assert response.status_code == 201, response.text


async def _listed(client: httpx.AsyncClient, ns: str, count: int, cluster: str | None = None) -> dict | None:
    data = (await gql(client, LIST, ns=ns, cluster=cluster))["workloads"]
    pods_known = all(n["gpu"]["requestedByPods"] > 0 for n in data["nodes"])
    return data if data["totalCount"] == count and pods_known else None


async def test_two_clusters_listed_summed_filtered_written_and_one_lost(
        k8s_control_plane: Any, second_control_plane: Any, namespace: str, tmp_path: Path) -> None:
    east, west = k8s_control_plane, second_control_plane
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": east, "west": west})
    async with east.async_client() as kube_east, west.async_client() as kube_west:
        await _create_namespace(kube_west, namespace)
        await create_seed(kube_east, namespace)
        await create_seed(kube_west, namespace)
        await _bare_pod(kube_west, namespace, "solo", 2, "node-b")
        async with fleet_server(kubeconfig, tmp_path / "state") as client:
            listed = await wait_until_async(lambda: _listed(client, namespace, 3), 60)
            rows = [(n["cluster"], n["kind"], n["name"], n["gpu"]["requestedBySpec"]) for n in listed["nodes"]]
            # order: namespace, kind, group, name, cluster: the two JobSets (same name) by cluster, then the Pod
            assert rows == [("east", "JobSet", "train", 12), ("west", "JobSet", "train", 12),
                            ("west", "Pod", "solo", 2)]

            # gpuSummary by CLUSTER over the test namespace (the shared east plane holds other tests' work):
            # east 12 (one JobSet); west 12 + 2 = 14 (JobSet + Pod)
            summary = (await gql(client, SUMMARY, ns=namespace))["gpuSummary"]
            mine = {b["key"]: (b["workloads"], b["gpu"]) for b in summary}
            assert mine["east"] == (1, {"requestedBySpec": 12, "requestedByPods": 12, "allocated": 12})
            assert mine["west"] == (2, {"requestedBySpec": 14, "requestedByPods": 14, "allocated": 14})

            # filters: GraphQL cluster argument, REST ?cluster=, one workload by cluster
            west_only = (await gql(client, LIST, ns=namespace, cluster="west"))["workloads"]
            assert [(n["cluster"], n["name"]) for n in west_only["nodes"]] == [("west", "train"), ("west", "solo")]
            rest = (await client.get(f"/api/v1/namespaces/{namespace}/workloads",
                                     params={"cluster": "east"})).json()
            assert [(i["cluster"], i["name"]) for i in rest["items"]] == [("east", "train")]
            one = await gql(client, '{ workload(namespace: "%s", group: "jobset.x-k8s.io", kind: "JobSet", '
                                    'name: "train", cluster: "west") { cluster } }' % namespace)
            assert one["workload"] == {"cluster": "west"}

            # a write goes to the workload's cluster only: suspend west's train
            path = f"/api/v1/namespaces/{namespace}/workloads/{JOBSETS}/train/suspend"
            response = await client.post(path, params={"cluster": "west"}, json={})
            assert response.status_code == 200, response.text
            stored = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/train"
            assert (await kube_west.get(stored)).json()["spec"].get("suspend") is True
            assert (await kube_east.get(stored)).json()["spec"].get("suspend") in (None, False)

            clusters = (await gql(client, CLUSTERS))["clusters"]
            assert [(c["name"], c["synced"], c["stale"]) for c in clusters] == [("east", True, False),
                                                                                ("west", True, False)]

            await _check_karta_per_cluster(client, kube_east, kube_west, namespace)

            await asyncio.to_thread(west.stop_apiserver)
            try:
                await _check_west_lost(client, kube_east, namespace)
            finally:
                await asyncio.to_thread(west.start_apiserver)


async def _definition_of(client: httpx.AsyncClient, ns: str, cluster: str) -> tuple[str, str]:
    query = ('{ workload(namespace: "%s", group: "jobset.x-k8s.io", kind: "JobSet", name: "train", cluster: "%s") '
             '{ definition origin } }' % (ns, cluster))
    w = (await gql(client, query))["workload"]
    return w["definition"], w["origin"]


async def _check_karta_per_cluster(client: httpx.AsyncClient, kube_east: httpx.AsyncClient,
                                   kube_west: httpx.AsyncClient, ns: str) -> None:
    """A definition registered for west is a Karta in west only and applies to west's workloads only."""
    response = await client.post("/api/v1/definitions", params={"cluster": "west"},
                                 content=yaml.safe_dump(jobset_definition("west-jobset")),
                                 headers={"Content-Type": "application/yaml"})
    assert response.status_code == 201, response.text
    assert (await kube_west.get(f"{KARTAS}/west-jobset")).status_code == 200
    assert (await kube_east.get(f"{KARTAS}/west-jobset")).status_code == 404
    assert await _definition_of(client, ns, "west") == ("west-jobset", "cluster")
    assert await _definition_of(client, ns, "east") == ("jobset-x-k8s-io-jobset-v1alpha2", "catalog")
    unknown = await client.post("/api/v1/definitions", params={"cluster": "north"},
                                content=yaml.safe_dump(jobset_definition("x")),
                                headers={"Content-Type": "application/yaml"})
    assert unknown.status_code == 400 and "cluster must be one of east, west" in unknown.text
    assert (await client.delete("/api/v1/definitions/west-jobset", params={"cluster": "west"})).status_code == 200


async def _west_stale(client: httpx.AsyncClient) -> dict | None:
    clusters = {c["name"]: c for c in (await gql(client, CLUSTERS))["clusters"]}
    return clusters if clusters["west"]["stale"] else None


async def _check_west_lost(client: httpx.AsyncClient, kube_east: httpx.AsyncClient, namespace: str) -> None:
    """West's API server is down: west is reported stale, east is served and still updated."""
    clusters = await wait_until_async(lambda: _west_stale(client), 60, step=0.5)
    assert clusters["west"]["error"] != "" and clusters["east"]["stale"] is False
    await _bare_pod(kube_east, namespace, "late", 1, "node-a")
    # east now 2 workloads; west's 2 still served from its cache: 4 in all
    listed = await wait_until_async(lambda: _listed(client, namespace, 4), 30)
    rows = [(n["cluster"], n["kind"], n["name"]) for n in listed["nodes"]]
    assert rows == [("east", "JobSet", "train"), ("west", "JobSet", "train"), ("east", "Pod", "late"),
                    ("west", "Pod", "solo")]
    summary = {b["key"]: b for b in (await gql(client, SUMMARY, ns=namespace))["gpuSummary"]}
    assert summary["east"]["gpu"]["requestedBySpec"] == 13  # 12 + the new 1-GPU pod
    assert summary["west"]["gpu"]["requestedBySpec"] == 14  # unchanged, from the cache
    ready = await client.get("/readyz?verbose")
    assert ready.status_code == 200, ready.text  # stale is served flagged, not unready
    assert "[+]cluster east synced" in ready.text and "[+]cluster west stale since" in ready.text
    metrics = (await client.get("/metrics")).text
    assert 'wmap_cluster_stale{cluster="west"} 1.0' in metrics
    assert 'wmap_cluster_stale{cluster="east"} 0.0' in metrics
    assert (await client.get("/api/v1/workloads")).headers["x-wmap-stale"] == "true"  # any cluster stale
    answer = (await client.post("/graphql", json={"query": "{ workloads { totalCount } }"})).json()
    assert "west/" in " ".join(answer["extensions"]["stale"]["staleKinds"])


async def _east_answers(client: httpx.AsyncClient, ns: str) -> dict | None:
    body = (await client.post("/graphql", json={"query": LIST, "variables": {"ns": ns, "cluster": "east"}})).json()
    if body.get("errors"):
        return None  # not answering yet (east still syncing or resolving)
    data: dict = body["data"]["workloads"]
    return data if data["totalCount"] == 1 else None


async def test_a_cluster_unreachable_from_the_start_is_reported_and_the_other_served(
        k8s_control_plane: Any, namespace: str, tmp_path: Path) -> None:
    """Context ``gone`` points at a loopback port nothing listens on (its API server never answered).

    Decided: ``/readyz`` stays 503 (not every cluster has synced once), but queries are
    answered from east, and ``gone`` is listed with its error.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": k8s_control_plane, "gone": k8s_control_plane})
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][1]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    kubeconfig.write_text(yaml.safe_dump(config))
    async with k8s_control_plane.async_client() as kube:
        await create_seed(kube, namespace)
    settings = Settings(kube=KubeSettings(kubeconfig=str(kubeconfig), kubeconfigs=(str(kubeconfig),),
                                          contexts=("east", "gone"), stale_after_s=1.0),
                        state_dir=tmp_path / "state", resolver=ResolverSettings(workers=2))
    async with serving(create_app(settings), timeout=30) as host, \
            httpx.AsyncClient(base_url=f"http://{host}", timeout=60) as client:
        listed = await wait_until_async(lambda: _east_answers(client, namespace), 90, step=0.5)
        assert [(n["cluster"], n["name"], n["gpu"]["requestedBySpec"]) for n in listed["nodes"]] == [
            ("east", "train", 12)]
        clusters = {c["name"]: c for c in (await gql(client, CLUSTERS))["clusters"]}
        assert clusters["east"]["synced"] is True and clusters["gone"]["synced"] is False
        assert clusters["gone"]["error"] != ""
        ready = await client.get("/readyz?verbose")
        assert ready.status_code == 503 and "[-]cluster gone syncing" in ready.text
        assert "[+]cluster east synced" in ready.text


async def test_each_cluster_writes_the_status_of_its_own_kartas(
        k8s_control_plane: Any, second_control_plane: Any, tmp_path: Path) -> None:
    """Served together, each cluster's Kartas get status from that cluster's Lease holder: a Karta for
    JobSet in west (its minimal CRDs serve JobSet) is Ready there."""
    from tests.kartas.support import conditions, widget_karta

    east, west = k8s_control_plane, second_control_plane
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": east, "west": west})
    name = f"west-jobset-{secrets.token_hex(3)}"
    doc = widget_karta(name, "jobset.x-k8s.io")
    doc["spec"]["structureDefinition"]["rootComponent"]["kind"] = {"group": "jobset.x-k8s.io", "version": "v1alpha2",
                                                                    "kind": "JobSet"}
    async with fleet_server(kubeconfig, tmp_path / "state"), west.async_client() as kube:
        try:
            assert (await kube.post(KARTAS, json=doc)).status_code == 201

            async def ready() -> dict | None:
                karta = (await kube.get(f"{KARTAS}/{name}")).json()
                return karta if conditions(karta).get("Ready", {}).get("status") == "True" else None

            karta = await wait_until_async(ready, 60)
            assert karta["status"]["observedGeneration"] == 1
            assert conditions(karta)["CRDExists"]["reason"] == "CRDFound"
        finally:
            await kube.delete(f"{KARTAS}/{name}")
