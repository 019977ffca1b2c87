"""A kind served in two versions is listed and watched once (``workload_map.kube.versions``).

Unit: the version priority order. Real control plane: a CRD served as ``v1alpha1``
(storage) and ``v1beta1`` with the ``None`` conversion strategy; a cache asked for both
caches each object once, under ``v1beta1`` (the higher priority; the API server serves the
stored object under it with only ``apiVersion`` changed), the other version reports the same
status with no objects, and when ``v1beta1`` is no longer watched ``v1alpha1`` takes over.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.kube.versions import version_priority
from tests.kube.test_cluster import caches, collection, send, wait_until  # noqa: F401 - fixture

ORDER = ["v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"]


def test_version_priority_is_the_kubernetes_order() -> None:
    # the example list of the CRD versioning doc, highest priority first (foo1/foo10 tie
    # below every conforming version)
    ranked = sorted(ORDER, key=version_priority, reverse=True)
    assert ranked[:7] == ORDER[:7]
    assert version_priority("foo1") == version_priority("foo10") < version_priority("v1alpha1")


def _two_version_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "conversion": {"strategy": "None"},
                 "names": {"kind": kind, "plural": plural, "singular": plural[:-1], "listKind": f"{kind}List"},
                 "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": schema},
                              {"name": "v1beta1", "served": True, "storage": False, "schema": schema}]},
    }


@pytest.mark.cluster
@pytest.mark.timeout(240)
async def test_two_served_versions_are_cached_once(k8s_control_plane: Any, namespace: str,
                                                   caches: list[InformerCache]) -> None:  # noqa: F811
    cp = k8s_control_plane
    suffix = secrets.token_hex(3)
    group, kind, plural = "wmaptest.example.com", f"Dual{suffix.upper()}", f"dual{suffix}s"
    alpha, beta = GVK(group, "v1alpha1", kind), GVK(group, "v1beta1", kind)
    await asyncio.to_thread(cp.create_crd, _two_version_crd(group, kind, plural))
    async with cp.async_client() as c:
        for name in ("a1", "a2"):  # written as v1alpha1, the storage version
            await send(lambda name=name: c.post(collection(alpha, plural, namespace), json={
                "apiVersion": alpha.api_version, "kind": kind, "metadata": {"name": name}, "spec": {"size": 2}}))
    cache = await InformerCache.from_config(str(cp.admin_kubeconfig), options=CacheOptions(namespaces=(namespace,)))
    caches.append(cache)
    cache.watch(alpha)
    cache.watch(beta)
    await cache.start()
    assert await cache.wait_synced(60)
    await wait_until(lambda: cache.count(beta) == 2, timeout=30)
    # each object cached once: 2 under v1beta1, none under v1alpha1
    assert cache.count(alpha) == 0 and cache.list(alpha) == []
    assert sorted(o["metadata"]["name"] for o in cache.list(beta)) == ["a1", "a2"]
    assert {o["apiVersion"] for o in cache.list(beta)} == {beta.api_version}
    assert cache.list(beta)[0]["spec"] == {"size": 2}  # None strategy: the stored fields as written
    assert cache.state(alpha).state == "synced" and cache.state(alpha).count == 0
    assert cache.state(alpha).resource == plural
    # v1beta1 no longer watched: v1alpha1 takes over and caches both objects
    cache.unwatch(beta)
    await wait_until(lambda: cache.count(alpha) == 2, timeout=30)
    assert {o["apiVersion"] for o in cache.list(alpha)} == {alpha.api_version}
    assert cache.state(alpha).state == "synced" and cache.state(alpha).count == 2
