"""Discovery: GVK -> plural/scope with TTL and negative caches, and the CRD index."""

from __future__ import annotations

import pytest

from workload_map.gvk import GVK
from workload_map.kube.discovery import CrdIndex, Discovery, ResourceInfo
from workload_map.kube.errors import KubeApiError

from .fakes import CORE_V1, JOBSET_V1A2, Clock, FakeJson, crd

POD = GVK("", "v1", "Pod")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
async def test_builtin_resolution_is_cached_for_six_hours() -> None:
    api, clock = FakeJson({"/api/v1": CORE_V1}), Clock()
    discovery = Discovery(api, clock=clock)
    assert await discovery.resolve(POD) == ResourceInfo(POD, "pods", True)
    assert await discovery.resolve(GVK("", "v1", "Node")) == ResourceInfo(GVK("", "v1", "Node"), "nodes", False)
    assert api.calls == ["/api/v1"]
    clock.now += 6 * 3600 - 1
    await discovery.resolve(POD)
    assert len(api.calls) == 1
    clock.now += 2
    await discovery.resolve(POD)
    assert len(api.calls) == 2


async def test_subresources_and_unwatchable_kinds_are_not_resources() -> None:
    discovery = Discovery(FakeJson({"/api/v1": CORE_V1}))
    assert await discovery.resolve(GVK("", "v1", "Binding")) is None


async def test_missing_group_version_is_negatively_cached_for_a_minute() -> None:
    api, clock = FakeJson({}), Clock()
    discovery = Discovery(api, clock=clock)
    assert await discovery.resolve(JOBSET) is None
    assert await discovery.resolve(JOBSET) is None
    assert api.calls == ["/apis/jobset.x-k8s.io/v1alpha2"]
    api.documents["/apis/jobset.x-k8s.io/v1alpha2"] = JOBSET_V1A2
    clock.now += 61
    assert await discovery.resolve(JOBSET) == ResourceInfo(JOBSET, "jobsets", True)


async def test_kind_missing_from_cached_group_version_is_asked_again() -> None:
    api, clock = FakeJson({"/apis/jobset.x-k8s.io/v1alpha2": {"resources": []}}), Clock()
    discovery = Discovery(api, clock=clock)
    assert await discovery.resolve(JOBSET) is None
    api.documents["/apis/jobset.x-k8s.io/v1alpha2"] = JOBSET_V1A2
    clock.now += 61
    assert await discovery.resolve(JOBSET) is not None
    assert len(api.calls) == 2


async def test_discovery_failure_raises() -> None:
    api = FakeJson({})
    api.error = KubeApiError(503, "ServiceUnavailable", "etcd down")
    with pytest.raises(KubeApiError):
        await Discovery(api).resolve(POD)


async def test_crds_decide_once_listed() -> None:
    api = FakeJson({"/apis/jobset.x-k8s.io/v1alpha2": JOBSET_V1A2})
    changes: list[tuple[str, str]] = []
    crds = CrdIndex(lambda g, k: changes.append((g, k)))
    discovery = Discovery(api, crds=crds)
    await crds.replace([crd(established=False)], None)
    assert await discovery.resolve(JOBSET) is None, "not Established yet"
    modified = crd()
    modified["metadata"]["resourceVersion"] = "2"
    crds.apply("MODIFIED", modified)
    assert await discovery.resolve(JOBSET) == ResourceInfo(JOBSET, "jobsets", True)
    assert await discovery.resolve(GVK("jobset.x-k8s.io", "v1", "JobSet")) is None, "version not served"
    assert api.calls == [], "CRDs answered without discovery"
    crds.apply("DELETED", crd())
    assert await discovery.resolve(JOBSET) is None, "deleted CRD: no fallback to lagging discovery"
    assert changes == [("jobset.x-k8s.io", "JobSet")] * 3


async def test_crd_changes_invalidate_group_caches() -> None:
    api = FakeJson({})
    crds = CrdIndex()
    discovery = Discovery(api, crds=crds)
    assert await discovery.resolve(JOBSET) is None
    api.documents["/apis/jobset.x-k8s.io/v1alpha2"] = JOBSET_V1A2
    crds.apply("ADDED", crd())  # not listed yet: discovery still decides, but caches are dropped
    assert await discovery.resolve(JOBSET) == ResourceInfo(JOBSET, "jobsets", True)


async def test_crd_resolves_cluster_scope() -> None:
    crds = CrdIndex()
    await crds.replace([crd("example.com", "Thing", "things", "v1", scope="Cluster")], None)
    info = await Discovery(FakeJson({}), crds=crds).resolve(GVK("example.com", "v1", "Thing"))
    assert info is not None and info.plural == "things" and not info.namespaced
