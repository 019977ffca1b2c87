"""A shared ResourceClaim's change alone re-resolves the workload whose pods name it (real control plane).

No scheduler or DRA driver runs: the test writes the ReplicaSet and pod a Deployment would get,
then the claim's ``status.allocation`` as a driver's allocator records it, and nothing else. The
claim has no owner, so only the claim -> pods dependency of the materializer can bring the
allocation into the view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map.gvk import GVK
from workload_map.resolution.dra import RESOURCE_CLAIM
from tests.api.test_cluster_e2e import live_app, wait_until_async
from tests.kube.test_cluster import collection, owner_ref, send

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]

DEPLOYMENT = GVK("apps", "v1", "Deployment")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")
MERGE = {"Content-Type": "application/merge-patch+json"}
LABELS = {"app": "shared-claim"}
KEY = "dra/gpu.nvidia.com"
CLAIMS = [{"name": "shared", "resourceClaimName": "team-gpu"}]
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"resourceClaims": CLAIMS, "containers": [
    {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "shared"}]}}]}}


def _allocation(devices: int) -> dict[str, Any]:
    return {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": f"gpu-{i}"}
        for i in range(devices)]}}}}


async def _objects(c: httpx.AsyncClient, namespace: str) -> None:
    base = "/apis/resource.k8s.io/v1"
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]}}
    await send(lambda: c.post(f"{base}/deviceclasses", json=device_class), expect=(201, 409))
    # one claim for the whole workload, asking for 2 GPUs, not allocated yet
    await send(lambda: c.post(collection(RESOURCE_CLAIM, "resourceclaims", namespace), json={
        "metadata": {"name": "team-gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                       "count": 2}}]}}}))
    deploy = await send(lambda: c.post(collection(DEPLOYMENT, "deployments", namespace), json={
        "metadata": {"name": "shared-claim"},
        "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}))
    rs = await send(lambda: c.post(collection(REPLICASET, "replicasets", namespace), json={
        "metadata": {"name": "shared-claim-1", "ownerReferences": [owner_ref(deploy)]},
        "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}))
    for name in ("shared-claim-a", "shared-claim-b"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": LABELS,
                                                               "ownerReferences": [owner_ref(rs)]},
               "spec": {**TEMPLATE["spec"], "nodeName": "node-1"}}
        await send(lambda: c.post(collection(POD, "pods", namespace), json=pod))


async def test_a_claim_allocation_alone_updates_the_allocated_figure(k8s_control_plane: Any, namespace: str,
                                                                     tmp_path: Path) -> None:
    async with k8s_control_plane.async_client() as kube, live_app(k8s_control_plane, tmp_path) as (app, client):
        service = app.state.runtime.service
        await _objects(kube, namespace)

        def figures() -> dict[str, Any] | None:
            record = service.store.find("apps", "Deployment", namespace, "shared-claim")
            by_resource = record.view.gpu.to_dict()["byResource"] if record is not None else {}
            return by_resource.get(KEY)

        async def resolved() -> bool:
            record = service.store.find("apps", "Deployment", namespace, "shared-claim")
            return (record is not None and record.view.replicas.current == 2 and figures() is not None
                    and service.materializer.dirty.is_idle())

        await wait_until_async(resolved, 30)
        # the shared claim counts once for the workload: 2 GPUs by spec and by pods (both pods
        # name it); not allocated yet: the two pods are bound, but the claim holds nothing -> 0
        assert figures() == {"requestedBySpec": 2, "requestedByPods": 2, "allocated": 0}
        claims = collection(RESOURCE_CLAIM, "resourceclaims", namespace)
        patched = await kube.patch(f"{claims}/team-gpu/status", json=_allocation(2), headers=MERGE)
        assert patched.status_code == 200, patched.text

        async def allocated() -> bool:
            return (figures() or {}).get("allocated") == 2

        # only the claim changed: the allocation (2 devices, pods on node-1) reaches the view
        await wait_until_async(allocated, 30)
        assert figures() == {"requestedBySpec": 2, "requestedByPods": 2, "allocated": 2}
