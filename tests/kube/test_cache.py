"""InformerCache over fake discovery and fake API servers (no cluster)."""

from __future__ import annotations

import pytest

from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.kube.discovery import CRD_GVK, Discovery, ResourceInfo
from workload_map.kube.errors import KubeApiError
from workload_map.kube.reader import Reader
from workload_map.kube.reflector import ReflectorOptions

from .fakes import CORE_V1, JOBSET_V1A2, FakeApiServer, FakeJson, ScriptedListWatch, crd, make_obj, wait_for

POD = GVK("", "v1", "Pod")
NODE = GVK("", "v1", "Node")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
KARTA = GVK("run.ai", "v1alpha1", "Karta")
FAST = ReflectorOptions(inactivity_timeout=5.0, backoff_base=0.01, backoff_cap=0.05, min_watch_seconds=0.0)

pytestmark = pytest.mark.timeout(30)


class World:
    """Fake discovery documents plus one FakeApiServer per GVK."""

    def __init__(self, documents: dict[str, dict] | None = None) -> None:
        self.api = FakeJson(documents if documents is not None else {"/api/v1": CORE_V1})
        self.servers: dict[GVK, FakeApiServer] = {}
        self.overrides: dict[GVK, object] = {}
        self.namespaces_seen: list[tuple[GVK, str | None]] = []

    def server(self, gvk: GVK) -> FakeApiServer:
        return self.servers.setdefault(gvk, FakeApiServer(gvk))

    def source(self, info: ResourceInfo, namespace: str | None) -> object:
        self.namespaces_seen.append((info.gvk, namespace))
        if info.gvk in self.overrides:
            return self.overrides[info.gvk]
        return self.server(info.gvk).client(namespace)

    def cache(self, discovery: Discovery | None = None, **options: object) -> InformerCache:
        opts = CacheOptions(reflector=FAST, recheck_interval=0.2, **options)  # type: ignore[arg-type]
        return InformerCache(discovery=discovery or Discovery(self.api), sources=self.source,  # type: ignore[arg-type]
                             options=opts)


def names(objs: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


async def test_watch_start_sync_and_read_across_kinds() -> None:
    world = World({"/api/v1": CORE_V1, "/apis/jobset.x-k8s.io/v1alpha2": JOBSET_V1A2})
    js = world.server(JOBSET).create(make_obj(JOBSET, "js", uid="js"))
    world.server(POD).create(make_obj(POD, "js-0", uid="p0", owner=js))
    cache = world.cache()
    assert isinstance(cache, Reader)
    cache.watch(POD)
    cache.watch(JOBSET)
    cache.watch(JOBSET)
    assert not cache.is_synced() and cache.state(POD).state == "syncing"
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert names(cache.descendants("js")) == ["js-0"]
        assert cache.root_of(cache.get(POD, "ns", "js-0"))["metadata"]["uid"] == "js"
        status = cache.state(POD)
        assert (status.state, status.count, status.resource, status.relists) == ("synced", 1, "pods", 1)
        assert cache.state(NODE).state == "not_watched"
        queue = cache.subscribe()
        version = cache.version("js")
        world.server(POD).update("ns", "js-0", status={"phase": "Running"})
        event = await queue.get()
        assert event.root_uids == ("p0", "js") and cache.version("js") > version
        assert cache.get(POD, "ns", "js-0")["status"] == {"phase": "Running"}
    finally:
        await cache.stop()


async def test_missing_kind_is_settled_and_reported() -> None:
    world = World()
    cache = world.cache()
    cache.watch(POD)
    cache.watch(KARTA)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert cache.state(KARTA).state == "crd_missing" and cache.list(KARTA) == []
        assert cache.states()[POD].state == "synced"
    finally:
        await cache.stop()


async def test_forbidden_kind_does_not_block_others() -> None:
    world = World()
    world.overrides[NODE] = ScriptedListWatch([KubeApiError(403, "Forbidden", "nodes is forbidden")] * 100, [])
    world.server(POD).create(make_obj(POD, "p"))
    cache = world.cache()
    cache.watch(POD)
    cache.watch(NODE)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert cache.state(NODE).state == "forbidden" and "forbidden" in cache.state(NODE).last_error
        assert cache.state(POD).count == 1
    finally:
        await cache.stop()


async def test_failing_list_blocks_readiness() -> None:
    world = World()
    world.server(POD).list_errors.extend([KubeApiError(500, "InternalError", "boom")] * 1000)
    cache = world.cache()
    cache.watch(POD)
    await cache.start()
    try:
        assert not await cache.wait_synced(0.3)
        assert cache.state(POD).state == "error" and "boom" in cache.state(POD).last_error
        world.server(POD).list_errors.clear()
        assert await cache.wait_synced(5)
    finally:
        await cache.stop()


async def test_discovery_failure_is_error_then_retried() -> None:
    world = World()
    world.api.error = KubeApiError(503, "ServiceUnavailable", "apiserver starting")
    cache = world.cache()
    cache.watch(POD)
    await cache.start()
    try:
        assert await wait_for(lambda: cache.state(POD).state == "error")
        assert not cache.is_synced()
        world.api.error = None
        assert await cache.wait_synced(5), "the recheck loop resolves it"
    finally:
        await cache.stop()


async def test_crd_appearing_later_starts_watching_and_deletion_drops() -> None:
    world = World({"/api/v1": CORE_V1})
    crds = world.server(CRD_GVK)
    cache = world.cache()
    cache.watch(JOBSET)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert cache.state(JOBSET).state == "crd_missing"
        world.server(JOBSET).create(make_obj(JOBSET, "early", uid="e"))
        crds.create(crd(established=False))
        await wait_for(lambda: len(cache.discovery.crds) == 1)
        assert cache.state(JOBSET).state == "crd_missing"
        crds.update("", "jobsets.jobset.x-k8s.io", status={"conditions": [{"type": "Established", "status": "True"}]})
        assert await wait_for(lambda: cache.get(JOBSET, "ns", "early") is not None)
        assert cache.state(JOBSET).state == "synced"
        queue = cache.subscribe()
        crds.delete("", "jobsets.jobset.x-k8s.io")
        assert await wait_for(lambda: cache.state(JOBSET).state == "crd_missing")
        assert cache.list(JOBSET) == [] and (await queue.get()).type == "DELETED"
        assert cache.is_synced()
    finally:
        await cache.stop()


async def test_without_crd_watch_missing_kinds_are_rechecked() -> None:
    world = World({"/api/v1": CORE_V1})
    world.overrides[CRD_GVK] = ScriptedListWatch([KubeApiError(403, "Forbidden", "no CRDs for you")] * 100, [])
    cache = world.cache(Discovery(world.api, clock=lambda: 0.0))  # negative cache never expires ...
    cache.watch(JOBSET)
    await cache.start()
    try:
        assert await cache.wait_synced(5) and cache.state(JOBSET).state == "crd_missing"
        world.api.documents["/apis/jobset.x-k8s.io/v1alpha2"] = JOBSET_V1A2
        world.server(JOBSET).create(make_obj(JOBSET, "late"))
        cache.discovery.invalidate()  # ... until the TTL would have expired
        assert await wait_for(lambda: cache.get(JOBSET, "ns", "late") is not None)
    finally:
        await cache.stop()


async def test_unwatch_drops_objects_and_is_idempotent() -> None:
    world = World()
    world.server(POD).create(make_obj(POD, "p"))
    cache = world.cache()
    cache.watch(POD)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        queue = cache.subscribe()
        cache.unwatch(POD)
        cache.unwatch(POD)
        assert cache.list(POD) == [] and cache.state(POD).state == "not_watched"
        assert (await queue.get()).type == "DELETED"
        world.server(POD).create(make_obj(POD, "after"))
        cache.watch(POD)
        assert await wait_for(lambda: len(cache.list(POD)) == 2)
    finally:
        await cache.stop()
    await cache.stop()


async def test_namespace_allow_list() -> None:
    world = World()
    for ns in ("a", "b", "c"):
        world.server(POD).create(make_obj(POD, f"p-{ns}", ns))
    world.server(NODE).create(make_obj(NODE, "n1", None))
    cache = world.cache(namespaces=("a", "b"))
    cache.watch(POD)
    cache.watch(NODE)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert names(cache.list(POD)) == ["p-a", "p-b"]
        assert cache.state(POD).namespaces == ("a", "b") and cache.state(NODE).namespaces == ()
        assert sorted(ns or "" for g, ns in world.namespaces_seen if g != CRD_GVK) == ["", "a", "b"]
        world.server(POD).create(make_obj(POD, "p2-c", "c"))
        world.server(POD).create(make_obj(POD, "p2-a", "a"))
        assert await wait_for(lambda: len(cache.list(POD)) == 3)
        assert cache.get(POD, "c", "p2-c") is None
    finally:
        await cache.stop()


async def test_stop_ends_every_task() -> None:
    world = World()
    cache = world.cache()
    cache.watch(POD)
    await cache.start()
    await cache.start()
    assert await cache.wait_synced(5)
    await cache.stop()
    assert world.server(POD).open_watches == 0 and world.server(CRD_GVK).open_watches == 0
    assert not cache._tasks


def test_needs_a_client_or_fakes() -> None:
    with pytest.raises(ValueError):
        InformerCache()
