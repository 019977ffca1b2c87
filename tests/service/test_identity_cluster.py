"""Identity conflicts and the real API server (issue 28 item 3).

The API server assigns every uid itself (a ``metadata.uid`` sent on create is replaced), so
two live objects of one cluster never share one: the test first shows that on the real
control plane (a Deployment created with another's uid gets its own, and both are plain
workloads). Conflicts come from snapshots and restores: the second half restores the
live Deployment under another name into a snapshot beside the live objects, with the same
uid, and reads both through the service.

Objects: Deployment ``web`` (replicas 1) owning ReplicaSet ``web-1``, owning pod ``web-1-a``
(no controller manager runs, so the test writes them): ``web`` has 1 pod; ``web-copy`` none.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from tests.catalog.support import catalog
from tests.kube.test_cluster import collection, owner_ref, send
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]

DEPLOYMENT = GVK("apps", "v1", "Deployment")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")
LABELS = {"app": "web"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}


def deployment(name: str, uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": LABELS}
    if uid is not None:
        meta["uid"] = uid
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}


def rows(service: WorkloadService) -> list[tuple[str, int, int]]:
    """(name, pods, identity errors) of each listed Deployment."""
    return [(v.name, len(v.all_pods()), len([e for e in v.errors if e.field == "metadata.uid"]))
            for v in service.workloads(kind="Deployment")]


async def test_the_api_server_assigns_uids_and_a_restore_conflicts(k8s_control_plane: Any, namespace: str) -> None:
    async with k8s_control_plane.async_client() as c:
        web = await send(lambda: c.post(collection(DEPLOYMENT, "deployments", namespace), json=deployment("web")))
        rs = await send(lambda: c.post(collection(REPLICASET, "replicasets", namespace), json={
            "metadata": {"name": "web-1", "labels": LABELS, "ownerReferences": [owner_ref(web)]},
            "spec": {"replicas": 1, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}))
        await send(lambda: c.post(collection(POD, "pods", namespace), json={
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1-a", "labels": LABELS, "ownerReferences": [owner_ref(rs)]},
            "spec": {**TEMPLATE["spec"], "nodeName": "node-1"}}))
        uid = web["metadata"]["uid"]
        twin = await send(lambda: c.post(collection(DEPLOYMENT, "deployments", namespace),
                                         json=deployment("web-copy", uid=uid)))
        assert twin["metadata"]["uid"] != uid  # the server's own uid, not the one sent
        cache = await InformerCache.from_config(str(k8s_control_plane.admin_kubeconfig),
                                                options=CacheOptions(namespaces=(namespace,)))
        try:
            for gvk in (DEPLOYMENT, REPLICASET, POD):
                cache.watch(gvk)
            await cache.start()
            assert await cache.wait_synced(60), cache.states()
            for _ in range(300):  # bounded: the informers list what was created before the start
                if cache.get(DEPLOYMENT, namespace, "web-copy") is not None and cache.get(POD, namespace, "web-1-a"):
                    break
                await asyncio.sleep(0.1)
            live = WorkloadService(DefinitionRegistry(catalog()), cache)
            assert rows(live) == [("web", 1, 0), ("web-copy", 0, 0)]  # no conflict in a live cluster
            cached = [copy.deepcopy(o) for gvk in (DEPLOYMENT, REPLICASET, POD) for o in cache.list(gvk, namespace)]
        finally:
            await cache.stop()
    # a restore: web-copy comes back with web's uid (as a backup of web restored under its name)
    restored = next(o for o in cached if o["metadata"]["name"] == "web-copy")
    restored["metadata"]["uid"] = uid
    reader = SnapshotReader(cached)
    service = WorkloadService(DefinitionRegistry(catalog()), reader)
    assert rows(service) == [("web", 0, 1), ("web-copy", 0, 1)]  # two workloads, the pod on neither
    reader.remove(DEPLOYMENT, namespace, "web-copy")
    assert rows(service) == [("web", 1, 0)]  # web alone owns its uid and its pod again
