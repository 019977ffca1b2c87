"""Owner-chain rules on the real control plane: the namespace rule and ownerReference cycles.

The test control plane runs no garbage collector, so objects whose ownerReferences name a uid
in another namespace, or form a loop, stay as written: exactly what a buggy or hostile client
can leave behind in a real cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.owners import is_top_level
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import catalog
from tests.kube.test_cluster import collection, owner_ref, send

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

POD = GVK("", "v1", "Pod")
JOB = GVK("batch", "v1", "Job")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")


def _pod(name: str, gpus: int, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "worker"}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox:1.36",
         "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}}]}}


def _jobset(name: str) -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    return {"apiVersion": JOBSET.api_version, "kind": "JobSet", "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": {"spec": {"template": pod}}}]}}


def _job(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {"suspend": True, "template": template}}


@pytest.fixture
async def cache(k8s_control_plane: Any) -> AsyncIterator[InformerCache]:
    made = await InformerCache.from_config(str(k8s_control_plane.admin_kubeconfig), options=CacheOptions())
    for gvk in (JOBSET, JOB, POD):
        made.watch(gvk)
    yield made
    await made.stop()


async def test_a_pod_in_another_namespace_carrying_a_jobsets_uid_is_not_billed_to_it(
        k8s_control_plane: Any, namespace: str, cache: InformerCache) -> None:
    team_a, team_b = namespace, f"{namespace}-b"
    with k8s_control_plane.client() as c:
        assert c.post("/api/v1/namespaces", json={"metadata": {"name": team_b}}).status_code == 201
    try:
        await _cross_namespace(k8s_control_plane, team_a, team_b, cache)
    finally:
        with k8s_control_plane.client() as c:
            c.delete(f"/api/v1/namespaces/{team_b}", timeout=10)


async def _cross_namespace(k8s_control_plane: Any, team_a: str, team_b: str, cache: InformerCache) -> None:
    async with k8s_control_plane.async_client() as c:
        js = await send(lambda: c.post(collection(JOBSET, "jobsets", team_a), json=_jobset("train")))
        job = await send(lambda: c.post(collection(JOB, "jobs", team_a), json=_job("train-worker-0", owner_ref(js))))
        await send(lambda: c.post(collection(POD, "pods", team_a), json=_pod("train-worker-0-0", 4, owner_ref(job))))
        # team b: a pod and a Job whose ownerReferences carry the JobSet's uid
        await send(lambda: c.post(collection(POD, "pods", team_b), json=_pod("intruder", 8, owner_ref(js))))
        job_b = await send(lambda: c.post(collection(JOB, "jobs", team_b), json=_job("job-b", owner_ref(js))))
        await send(lambda: c.post(collection(POD, "pods", team_b), json=_pod("job-b-0", 8, owner_ref(job_b))))
        await cache.start()
        assert await cache.wait_synced(60), cache.states()
        service = WorkloadService(DefinitionRegistry(catalog()), cache)
        cached_js = cache.get(JOBSET, team_a, "train")
        assert cached_js is not None
        view = service.view_of(cached_js["metadata"]["uid"])
        assert view is not None
        # only team a's pod: 1 pod x 4 GPUs (not + 8 + 8 of team b)
        assert [p.name for p in view.all_pods()] == ["train-worker-0-0"]
        assert view.gpu.to_dict()["requestedByPods"] == 4
        assert {o["metadata"]["name"] for o in cache.descendants(js["metadata"]["uid"])} == {
            "train-worker-0", "train-worker-0-0"}
        # team b's Job is a workload of its own there (its "owner" is not an owner)
        covered = {e.gvk.group_kind for e in service.registry.entries()}
        cached_job_b = cache.get(JOB, team_b, "job-b")
        assert cached_job_b is not None and cache.root_of(cached_job_b) is None
        assert is_top_level(cached_job_b, cache.by_uid, lambda o: GVK.of(o).group_kind in covered)


async def test_an_owner_reference_cycle_is_reported_and_listed_once(
        k8s_control_plane: Any, namespace: str, cache: InformerCache) -> None:
    async with k8s_control_plane.async_client() as c:
        js = await send(lambda: c.post(collection(JOBSET, "jobsets", namespace), json=_jobset("loop")))
        job = await send(lambda: c.post(collection(JOB, "jobs", namespace), json=_job("loop-worker-0", owner_ref(js))))
        await send(lambda: c.post(collection(POD, "pods", namespace), json=_pod("loop-worker-0-0", 2, owner_ref(job))))
        # close the loop: the JobSet now claims to be controlled by its own Job
        patch = {"metadata": {"ownerReferences": [owner_ref(job)]}}
        await send(lambda: c.patch(collection(JOBSET, "jobsets", namespace) + "/loop", json=patch,
                                   headers={"Content-Type": "application/merge-patch+json"}))
        await cache.start()
        assert await cache.wait_synced(60), cache.states()
        service = WorkloadService(DefinitionRegistry(catalog()), cache)
        covered = {e.gvk.group_kind for e in service.registry.entries()}
        members = [cache.get(JOBSET, namespace, "loop"), cache.get(JOB, namespace, "loop-worker-0")]
        assert all(m is not None for m in members)
        top = [m for m in members if is_top_level(m, cache.by_uid, lambda o: GVK.of(o).group_kind in covered)]
        # exactly one member, the one with the smaller uid, is the cycle's top
        expected = min(members, key=lambda m: m["metadata"]["uid"])
        assert [m["metadata"]["name"] for m in top] == [expected["metadata"]["name"]]
        view = service.view_of(expected["metadata"]["uid"])
        assert view is not None
        cycle = [e.message for e in view.errors if "ownerReference cycle" in e.message]
        assert len(cycle) == 1 and "JobSet" in cycle[0] and "Job " in cycle[0], view.errors
        # the pod is counted once, under the top: 1 pod x 2 GPUs
        assert [p.name for p in view.all_pods()] == ["loop-worker-0-0"]
        assert view.gpu.to_dict()["requestedByPods"] == 2
