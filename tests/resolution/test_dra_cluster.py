"""DRA figures on the real control plane: resource.k8s.io/v1 objects as the API server stores them.

No scheduler, controller manager or DRA driver runs, so the test writes what they would: the
ReplicaSet and pods of a Deployment, the claim generated for one pod from its template, and
``status.allocation`` of the allocated claims (as a driver's allocator records it).
"""

from __future__ import annotations

from typing import Any

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.resolution.dra import RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import catalog
from tests.kube.test_cluster import collection, owner_ref, send

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

POD = GVK("", "v1", "Pod")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
MERGE = {"Content-Type": "application/merge-patch+json"}
LABELS = {"app": "infer"}
CLAIMS = [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}, {"name": "shared", "resourceClaimName": "shared-gpu"}]
CONTAINER = {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpus"}, {"name": "shared"}]}}


def _request(count: int | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com"}
    if count is not None:
        exactly["count"] = count
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def _allocation(devices: int) -> dict[str, Any]:
    return {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": f"gpu-{i}"}
        for i in range(devices)]}}}}


def _pod(name: str, owner: dict[str, Any], node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceClaims": CLAIMS, "containers": [CONTAINER]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": LABELS,
                                                            "ownerReferences": [owner_ref(owner)]}, "spec": spec}


async def test_claim_templates_shared_claims_and_allocations_from_the_api_server(
        k8s_control_plane: Any, namespace: str) -> None:
    base = "/apis/resource.k8s.io/v1"
    async with k8s_control_plane.async_client() as c:
        served = await c.get(base)
        if served.status_code != 200:
            pytest.fail(f"the test control plane does not serve resource.k8s.io/v1: {served.status_code}")
        device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]}}
        await send(lambda: c.post(f"{base}/deviceclasses", json=device_class), expect=(201, 409))
        await send(lambda: c.post(collection(RESOURCE_CLAIM_TEMPLATE, "resourceclaimtemplates", namespace), json={
            "metadata": {"name": "two-gpus"}, "spec": {"spec": _request(2)}}))
        claims_path = collection(RESOURCE_CLAIM, "resourceclaims", namespace)
        await send(lambda: c.post(claims_path, json={"metadata": {"name": "shared-gpu"}, "spec": _request()}))
        await send(lambda: c.patch(f"{claims_path}/shared-gpu/status", json=_allocation(1), headers=MERGE))
        template = {"metadata": {"labels": LABELS}, "spec": {"resourceClaims": CLAIMS, "containers": [CONTAINER]}}
        deploy = await send(lambda: c.post(collection(DEPLOYMENT, "deployments", namespace), json={
            "metadata": {"name": "infer"}, "spec": {"replicas": 2, "selector": {"matchLabels": LABELS},
                                                    "template": template}}))
        rs = await send(lambda: c.post(collection(REPLICASET, "replicasets", namespace), json={
            "metadata": {"name": "infer-1", "ownerReferences": [owner_ref(deploy)]},
            "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": template}}))
        pods_path = collection(POD, "pods", namespace)
        pod_a = await send(lambda: c.post(pods_path, json=_pod("infer-a", rs, "node-1")))
        await send(lambda: c.post(pods_path, json=_pod("infer-b", rs, None)))
        # the claim generated for infer-a from the template (owned by the pod), allocated 2 devices
        await send(lambda: c.post(claims_path, json={"metadata": {"name": "infer-a-gpus",
                                                                  "ownerReferences": [owner_ref(pod_a)]},
                                                     "spec": _request(2)}))
        await send(lambda: c.patch(f"{claims_path}/infer-a-gpus/status", json=_allocation(2), headers=MERGE))
        await send(lambda: c.patch(f"{pods_path}/infer-a/status", headers=MERGE, json={"status": {
            "phase": "Running", "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "infer-a-gpus"}]}}))

    cache = await InformerCache.from_config(str(k8s_control_plane.admin_kubeconfig),
                                            options=CacheOptions(namespaces=(namespace,)))
    try:
        for gvk in (DEPLOYMENT, REPLICASET, POD, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE):
            cache.watch(gvk)
        await cache.start()
        assert await cache.wait_synced(60), cache.states()
        service = WorkloadService(DefinitionRegistry(catalog()), cache)
        root = cache.get(DEPLOYMENT, namespace, "infer")
        assert root is not None
        view = service.view_of(root["metadata"]["uid"])
        assert view is not None
        # spec: 2 replicas x 2 (template) + the shared claim once (1) = 5
        # pods: infer-a's generated claim, allocated 2 + infer-b's template 2 (not generated yet) + shared 1 = 5
        # allocated: infer-a is bound: 2 + the shared claim's 1 device = 3; infer-b is unscheduled
        gpu = view.gpu.to_dict()
        assert gpu["byResource"] == {"dra/gpu.nvidia.com": {"requestedBySpec": 5, "requestedByPods": 5,
                                                            "allocated": 3}}, (gpu, view.errors)
        assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (5, 5, 3)
        assert view.errors == []
        # the trimmed cached pod keeps what the figures read
        cached = cache.get(POD, namespace, "infer-a")
        assert cached["spec"]["resourceClaims"] == CLAIMS
        assert cached["status"]["resourceClaimStatuses"] == [{"name": "gpus", "resourceClaimName": "infer-a-gpus"}]
    finally:
        await cache.stop()
