"""Discovery: GVK -> plural/scope with TTL and negative caches, and the CRD index."""

from __future__ import annotations

import pytest

from server.gvk import GVK
from server.kube.discovery import CRD_GVK, CrdIndex, Discovery, ResourceInfo
from server.kube.errors import KubeApiError

POD = GVK("", "v1", "Pod")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
CORE_V1 = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "watch", "create"]},
    {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get", "patch"]},
    {"name": "nodes", "namespaced": False, "kind": "Node", "verbs": ["list", "watch"]},
    {"name": "bindings", "namespaced": True, "kind": "Binding", "verbs": ["create"]},
]}
JOBSET_V1A2 = {"kind": "APIResourceList", "groupVersion": "jobset.x-k8s.io/v1alpha2", "resources": [
    {"name": "jobsets", "namespaced": True, "kind": "JobSet", "verbs": ["list", "watch", "get"]}]}


class FakeJson:
    def __init__(self, documents: dict[str, dict]) -> None:
        self.documents = documents
        self.calls: list[str] = []
        self.error: KubeApiError | None = None

    async def get_json(self, path: str, query: dict | None = None) -> dict:
        self.calls.append(path)
        if self.error is not None:
            raise self.error
        if path not in self.documents:
            raise KubeApiError(404, "NotFound", "the server could not find the requested resource")
        return self.documents[path]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def crd(group: str = "jobset.x-k8s.io", kind: str = "JobSet", plural: str = "jobsets", version: str = "v1alpha2",
        *, established: bool = True, served: bool = True, scope: str = "Namespaced") -> dict:
    return {"apiVersion": CRD_GVK.api_version, "kind": CRD_GVK.kind,
            "metadata": {"name": f"{plural}.{group}", "uid": f"crd-{plural}", "resourceVersion": "1"},
            "spec": {"group": group, "scope": scope, "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": version, "served": served, "storage": True}]},
            "status": {"conditions": [{"type": "Established", "status": "True" if established else "False"}]}}


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
    crds.replace([crd(established=False)], None)
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
    crds.replace([crd("example.com", "Thing", "things", "v1", scope="Cluster")], None)
    info = await Discovery(FakeJson({}), crds=crds).resolve(GVK("example.com", "v1", "Thing"))
    assert info is not None and info.plural == "things" and not info.namespaced
