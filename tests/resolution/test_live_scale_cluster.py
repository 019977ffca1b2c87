"""Live scale of children on the real control plane: an HPA's write to a KServe predictor Deployment.

No controller manager or KServe controller runs, so the test writes what they would: the
predictor Deployment owned by the InferenceService, its ReplicaSet and two pods. Then it scales
the Deployment through its ``/scale`` subresource, as the HorizontalPodAutoscaler does, and
finally deletes it (nothing garbage-collects the ReplicaSet, whose owner is then gone).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import catalog
from tests.kube.test_cluster import collection, owner_ref, send

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]

ISVC = GVK("serving.kserve.io", "v1beta1", "InferenceService")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")
MERGE = {"Content-Type": "application/merge-patch+json"}
LABELS = {"component": "predictor", "serving.kserve.io/inferenceservice": "llama"}
GPU = {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}
CONTAINER = {"name": "kserve-container", "image": "kserve/huggingfaceserver:v0.15.0", "resources": GPU}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": [CONTAINER]}}


async def _objects(c: Any, namespace: str) -> None:
    isvc = await send(lambda: c.post(collection(ISVC, "inferenceservices", namespace), json={
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "llama", "annotations": {"serving.kserve.io/deploymentMode": "Standard"}},
        "spec": {"predictor": {"minReplicas": 2, "maxReplicas": 6, "model": {
            "modelFormat": {"name": "huggingface"}, "storageUri": "hf://acme/llama", "resources": GPU}}}}))
    deploy = await send(lambda: c.post(collection(DEPLOYMENT, "deployments", namespace), json={
        "metadata": {"name": "llama-predictor", "labels": LABELS, "ownerReferences": [owner_ref(isvc)]},
        "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}))
    rs = await send(lambda: c.post(collection(REPLICASET, "replicasets", namespace), json={
        "metadata": {"name": "llama-predictor-1", "labels": LABELS, "ownerReferences": [owner_ref(deploy)]},
        "spec": {"replicas": 2, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}}))
    for name in ("llama-predictor-1-a", "llama-predictor-1-b"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": LABELS,
                                                               "ownerReferences": [owner_ref(rs)]},
               "spec": {**TEMPLATE["spec"], "nodeName": "gpu-node-1"}}
        await send(lambda: c.post(collection(POD, "pods", namespace), json=pod))


async def _until(check: Any, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if check():
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("the cache did not see the change")


def _figures(service: WorkloadService, cache: InformerCache, namespace: str) -> tuple[Any, ...]:
    root = cache.get(ISVC, namespace, "llama")
    assert root is not None
    view = service.view_of(root["metadata"]["uid"])
    assert view is not None and view.errors == [], view
    predictor = next(c for c in view.all_components() if c.name == "predictor")
    gpu = view.gpu.to_dict()
    return predictor.replicas.desired, predictor.replicas.current, gpu["requestedBySpec"], gpu["requestedByPods"]


async def test_an_hpa_write_to_the_child_deployment_is_the_desired_count(k8s_control_plane: Any,
                                                                         namespace: str) -> None:
    async with k8s_control_plane.async_client() as c:
        await _objects(c, namespace)
        cache = await InformerCache.from_config(str(k8s_control_plane.admin_kubeconfig),
                                                options=CacheOptions(namespaces=(namespace,)))
        try:
            for gvk in (ISVC, DEPLOYMENT, REPLICASET, POD):
                cache.watch(gvk)
            await cache.start()
            assert await cache.wait_synced(60), cache.states()
            service = WorkloadService(DefinitionRegistry(catalog()), cache)
            # the Deployment says 2 (as KServe created it from minReplicas 2): desired 2, 2 pods,
            # 2 x 1 GPU by spec and by pods
            assert _figures(service, cache, namespace) == (2, 2, 2, 2)
            path = f"{collection(DEPLOYMENT, 'deployments', namespace)}/llama-predictor"
            await send(lambda: c.patch(f"{path}/scale", json={"spec": {"replicas": 5}}, headers=MERGE), expect=(200,))
            await _until(lambda: (cache.get(DEPLOYMENT, namespace, "llama-predictor") or {})
                         .get("spec", {}).get("replicas") == 5)
            # the HPA wrote 5 (template minReplicas still 2): desired 5, spec 5 x 1 GPU = 5; the 2
            # pods are what exists until the ReplicaSet controller acts
            assert _figures(service, cache, namespace) == (5, 2, 5, 2)
            await send(lambda: c.delete(path), expect=(200,))
            await _until(lambda: cache.get(DEPLOYMENT, namespace, "llama-predictor") is None)
            # no Deployment: the ReplicaSet's owner is gone, so its pods no longer reach the
            # InferenceService; the template's minReplicas 2 is the desired count again (2 GPUs)
            assert _figures(service, cache, namespace) == (2, 0, 2, 0)
        finally:
            await cache.stop()
