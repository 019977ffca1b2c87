"""InformerCache against a real kube-apiserver + etcd (``tests/cluster`` fixtures).

Each test uses its own namespace and, where possible, a cache restricted to it
(``CacheOptions(namespaces=...)``), so tests do not see each other's objects. Blocking
control-plane calls (restart, compaction) are made either in a thread (the cache keeps
running) or deliberately on the event loop (the cache is frozen, so every change made
meanwhile happens while its watches are down). Measurements are printed (``-s``) and
recorded as junit properties.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from workload_map.gvk import GVK
from workload_map.kube.api import KubeApi, ResourceClient
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.kube.client import connect

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

POD = GVK("", "v1", "Pod")
JOB = GVK("batch", "v1", "Job")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
KARTA = GVK("run.ai", "v1alpha1", "Karta")
MERGE = {"Content-Type": "application/merge-patch+json"}


# ---- helpers -------------------------------------------------------------------------------

def report(record_property: Callable[[str, Any], None], name: str, value: Any) -> None:
    """Print and record one measurement."""
    print(f"\nMEASURE {name} = {value}")
    record_property(name, value)


def owner_ref(obj: dict) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def pod_body(name: str, owner: dict | None = None, gpus: int = 0) -> dict:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    meta: dict[str, Any] = {"name": name, "labels": {"wmap.test/pod": "true"}}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox:1.36", "resources": resources}]}}


def job_body(name: str, owner: dict) -> dict:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "ownerReferences": [owner_ref(owner)]},
            "spec": {"parallelism": 2, "completions": 2, "template": template}}


def jobset_body(name: str) -> dict:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"apiVersion": JOBSET.api_version, "kind": "JobSet", "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                                         "template": {"spec": {"parallelism": 2, "completions": 2,
                                                               "template": template}}}]}}


def collection(gvk: GVK, plural: str, namespace: str) -> str:
    base = f"/apis/{gvk.group}/{gvk.version}" if gvk.group else f"/api/{gvk.version}"
    return f"{base}/namespaces/{namespace}/{plural}"


async def send(request: Callable[[], Awaitable[httpx.Response]], expect: tuple[int, ...] = (200, 201),
               attempts: int = 100) -> dict:
    """Send, retrying 429/5xx (an apiserver that just restarted); return the JSON body."""
    response = None
    for _ in range(attempts):
        response = await request()
        if response.status_code in expect:
            return dict(response.json())
        if response.status_code not in (429, 500, 503, 504):
            break
        await asyncio.sleep(0.2)
    assert response is not None
    raise AssertionError(f"{response.request.method} {response.request.url}: {response.status_code} {response.text}")


def sync_send(c: httpx.Client, method: str, url: str, **kw: Any) -> dict:
    """Blocking version of ``send`` (used while the event loop is deliberately frozen)."""
    for _ in range(150):
        response = c.request(method, url, **kw)
        if response.status_code in (200, 201):
            return dict(response.json())
        if response.status_code not in (429, 500, 503, 504):
            raise AssertionError(f"{method} {url}: {response.status_code} {response.text}")
        time.sleep(0.2)
    raise AssertionError(f"{method} {url}: still {response.status_code}")


async def server_state(c: httpx.AsyncClient, path: str) -> dict[str, str]:
    """``name -> resourceVersion`` from a fresh list."""
    body = await send(lambda: c.get(path))
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in body["items"]}


def cache_state(cache: InformerCache, gvk: GVK, namespace: str) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in cache.list(gvk, namespace)}


async def converge(cache: InformerCache, c: httpx.AsyncClient, gvk: GVK, plural: str, namespace: str,
                   timeout: float = 60.0) -> float:
    """Wait until the cache equals a fresh list (names + resourceVersions); return seconds waited."""
    t0 = time.monotonic()
    path = collection(gvk, plural, namespace)
    expected = await server_state(c, path)
    while time.monotonic() - t0 < timeout:
        if cache_state(cache, gvk, namespace) == expected:
            # no write is in flight, but re-check against the server once more
            expected = await server_state(c, path)
            if cache_state(cache, gvk, namespace) == expected:
                return time.monotonic() - t0
        await asyncio.sleep(0.05)
    assert cache_state(cache, gvk, namespace) == expected, cache.state(gvk)
    return time.monotonic() - t0


async def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.01) -> float:
    """Poll until ``predicate()``; return the seconds it took. Fails after ``timeout``."""
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout, "condition not met in time"
        await asyncio.sleep(interval)
    return time.monotonic() - t0


@pytest.fixture
async def caches() -> AsyncIterator[list[InformerCache]]:
    """Collects caches made by a test and stops them afterwards."""
    made: list[InformerCache] = []
    yield made
    for cache in made:
        await cache.stop()


async def started_cache(caches: list[InformerCache], kubeconfig: Any, gvks: list[GVK], *,
                        namespaces: tuple[str, ...] = ()) -> tuple[InformerCache, float]:
    cache = await InformerCache.from_config(str(kubeconfig), options=CacheOptions(namespaces=namespaces))
    caches.append(cache)
    for gvk in gvks:
        cache.watch(gvk)
    t0 = time.monotonic()
    await cache.start()
    assert await cache.wait_synced(60), cache.states()
    return cache, time.monotonic() - t0


async def make_pods(c: httpx.AsyncClient, namespace: str, names: list[str], concurrency: int = 20) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)
    path = collection(POD, "pods", namespace)

    async def one(name: str) -> dict:
        async with gate:
            return await send(lambda: c.post(path, json=pod_body(name)))

    return list(await asyncio.gather(*(one(n) for n in names)))


# ---- tests ---------------------------------------------------------------------------------

async def test_jobset_jobs_pods_tree_and_status_latency(k8s_control_plane: Any, namespace: str,
                                                        caches: list[InformerCache],
                                                        record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    async with cp.async_client() as c:
        js = await send(lambda: c.post(collection(JOBSET, "jobsets", namespace), json=jobset_body("train")))
        jobs, pods = [], []
        for i in range(2):
            job = await send(lambda i=i: c.post(collection(JOB, "jobs", namespace),
                                                json=job_body(f"train-workers-{i}", js)))
            jobs.append(job)
            for k in range(2):
                pods.append(await send(lambda i=i, k=k, job=job: c.post(
                    collection(POD, "pods", namespace), json=pod_body(f"train-workers-{i}-{k}", job, gpus=8))))

        cache, sync_s = await started_cache(caches, cp.admin_kubeconfig, [JOBSET, JOB, POD, KARTA],
                                            namespaces=(namespace,))
        report(record_property, "sync_seconds_4_kinds", round(sync_s, 3))
        js_uid = js["metadata"]["uid"]
        found = {o["metadata"]["uid"] for o in cache.descendants(js_uid)}
        assert {p["metadata"]["uid"] for p in pods} <= found and {j["metadata"]["uid"] for j in jobs} <= found
        cached_pod = cache.get(POD, namespace, "train-workers-1-0")
        assert cached_pod["spec"]["containers"] == [
            {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}}]
        assert "managedFields" not in cached_pod["metadata"]
        assert cache.root_of(cached_pod)["metadata"]["uid"] == js_uid
        assert cache.state(KARTA).state == "synced" and cache.state(KARTA).count == 0
        assert cache.state(JOBSET).resource == "jobsets"

        latencies, round_trips = [], []
        pod_path = f"{collection(POD, 'pods', namespace)}/train-workers-0-0/status"
        for i in range(20):
            ready = "True" if i % 2 else "False"
            body = {"status": {"message": f"update {i}",
                               "conditions": [{"type": "Ready", "status": ready}]}}
            before = cache.version(js_uid)
            t_write = time.monotonic()
            updated = await send(lambda body=body: c.patch(pod_path, json=body, headers=MERGE))
            rv = updated["metadata"]["resourceVersion"]
            t0 = time.monotonic()
            await wait_until(lambda rv=rv: cache.get(POD, namespace, "train-workers-0-0")["metadata"]
                             ["resourceVersion"] == rv, timeout=1.0, interval=0.001)
            latencies.append(time.monotonic() - t0)
            round_trips.append(time.monotonic() - t_write)
            assert cache.version(js_uid) > before, "a pod change bumps the JobSet's version"
        assert cache.get(POD, namespace, "train-workers-0-0")["status"]["message"] == "update 19"
        report(record_property, "status_update_latency_ms_median", round(statistics.median(latencies) * 1000, 1))
        report(record_property, "status_update_latency_ms_max", round(max(latencies) * 1000, 1))
        report(record_property, "status_write_to_cache_ms_median", round(statistics.median(round_trips) * 1000, 1))
        report(record_property, "status_write_to_cache_ms_max", round(max(round_trips) * 1000, 1))
        assert max(latencies) < 1.0


async def test_apiserver_restart_while_watching(k8s_control_plane: Any, namespace: str,
                                                caches: list[InformerCache],
                                                record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    async with cp.async_client() as c:
        await make_pods(c, namespace, [f"p{i}" for i in range(6)])
        cache, _ = await started_cache(caches, cp.admin_kubeconfig, [POD], namespaces=(namespace,))
        queue = cache.subscribe()

        # 1. an outage the cache lives through: watches fail, state goes to error, reads keep working
        await asyncio.to_thread(cp.stop_apiserver)
        await wait_until(lambda: cache.state(POD).state == "error", timeout=90, interval=0.1)
        assert cache.is_synced() and len(cache.list(POD, namespace)) == 6
        await asyncio.to_thread(cp.start_apiserver)
        await wait_until(lambda: cache.state(POD).state == "synced", timeout=90, interval=0.1)

        # 2. changes made while the cache's watches are down (the loop is frozen on purpose)
        base = collection(POD, "pods", namespace)
        t0 = time.monotonic()
        cp.restart_apiserver()
        with cp.client() as sc:
            sync_send(sc, "POST", base, json=pod_body("created-during-outage"))
            sync_send(sc, "DELETE", f"{base}/p0")
            sync_send(sc, "PATCH", f"{base}/p1/status", json={"status": {"message": "changed during outage"}},
                      headers=MERGE)
        outage = time.monotonic() - t0
        waited = await converge(cache, c, POD, "pods", namespace, timeout=90)
        report(record_property, "restart_outage_seconds", round(outage, 2))
        report(record_property, "restart_catch_up_seconds", round(waited, 2))
        assert cache.get(POD, namespace, "p0") is None
        assert cache.get(POD, namespace, "p1")["status"]["message"] == "changed during outage"
        seen = set()
        while not queue.empty():
            event = queue.get_nowait()
            seen.add((event.type, event.obj["metadata"]["name"]))
        assert {("ADDED", "created-during-outage"), ("DELETED", "p0"), ("MODIFIED", "p1")} <= seen
        assert cache.state(POD).watch_restarts >= 2


async def test_compaction_forces_relist(k8s_control_plane: Any, namespace: str, caches: list[InformerCache],
                                        record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    async with cp.async_client() as c:
        await make_pods(c, namespace, [f"p{i}" for i in range(10)])
        cache, _ = await started_cache(caches, cp.admin_kubeconfig, [POD], namespaces=(namespace,))
        assert cache.state(POD).relists == 1
        held = {f"p{i}": cache.get(POD, namespace, f"p{i}") for i in range(4, 10)}
        queue = cache.subscribe()
        base = collection(POD, "pods", namespace)
        # Frozen loop: first drop the cache's watch connection (a restart), so that nothing
        # written afterwards can sit in its socket buffer; then write, then compact. On
        # resuming, the cache re-watches from a compacted resourceVersion and gets 410.
        cp.restart_apiserver()
        with cp.client() as sc:
            for name in ("p0", "p1", "p2"):
                sync_send(sc, "DELETE", f"{base}/{name}")
            sync_send(sc, "POST", base, json=pod_body("after-compaction"))
            sync_send(sc, "PATCH", f"{base}/p3/status", json={"status": {"message": "m"}}, headers=MERGE)
        cp.compact_etcd()
        waited = await converge(cache, c, POD, "pods", namespace, timeout=90)
        report(record_property, "compaction_catch_up_seconds", round(waited, 2))
        assert cache.state(POD).relists >= 2, cache.state(POD)
        deleted, touched = set(), set()
        while not queue.empty():
            event = queue.get_nowait()
            touched.add(event.obj["metadata"]["name"])
            if event.type == "DELETED":
                deleted.add(event.obj["metadata"]["name"])
        assert deleted == {"p0", "p1", "p2"}, "synthetic deletes for vanished objects"
        # the relist diffs against the store: unchanged pods (same resourceVersion) are the
        # objects held before, with no event
        assert touched == {"p0", "p1", "p2", "p3", "after-compaction"}, touched
        assert all(cache.get(POD, namespace, name) is obj for name, obj in held.items())


async def test_crd_installed_after_start_is_picked_up_and_dropped_on_delete(
        k8s_control_plane: Any, namespace: str, caches: list[InformerCache],
        record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    suffix = secrets.token_hex(3)
    kind, plural, group = f"Widget{suffix.upper()}", f"widget{suffix}s", "wmaptest.example.com"
    gvk = GVK(group, "v1", kind)
    cache, _ = await started_cache(caches, cp.admin_kubeconfig, [gvk, POD], namespaces=(namespace,))
    assert cache.state(gvk).state == "crd_missing" and cache.is_synced()
    manifest = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": plural[:-1], "listKind": f"{kind}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }
    await asyncio.to_thread(cp.create_crd, manifest)
    async with cp.async_client() as c:
        await send(lambda: c.post(collection(gvk, plural, namespace),
                                  json={"apiVersion": gvk.api_version, "kind": kind, "metadata": {"name": "w1"},
                                        "spec": {"size": 3}}))
        t0 = time.monotonic()
        await wait_until(lambda: cache.get(gvk, namespace, "w1") is not None, timeout=30)
        report(record_property, "late_crd_object_visible_seconds", round(time.monotonic() - t0, 3))
        assert cache.state(gvk).state == "synced" and cache.state(gvk).resource == plural
        await send(lambda: c.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}"))
        await wait_until(lambda: cache.state(gvk).state == "crd_missing", timeout=60, interval=0.05)
        assert cache.list(gvk) == [] and cache.is_synced()


async def test_alice_forbidden_kinds_do_not_block_permitted_ones(k8s_control_plane: Any, namespace: str,
                                                                 caches: list[InformerCache]) -> None:
    cp = k8s_control_plane
    role = f"wmap-pods-reader-{namespace}"
    async with cp.async_client() as c:
        await make_pods(c, namespace, ["visible"])
        await send(lambda: c.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}))
        await send(lambda: c.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}))
        try:
            cache, _ = await started_cache(caches, cp.alice_kubeconfig, [POD, JOB, JOBSET])
            await wait_until(lambda: cache.state(POD).state == "synced", timeout=60, interval=0.05)
            assert cache.state(JOB).state == "forbidden" and cache.state(JOBSET).state == "forbidden"
            assert "alice" in cache.state(JOBSET).last_error
            assert cache.get(POD, namespace, "visible") is not None and cache.is_synced()
            crd_status = cache.crd_status()
            assert crd_status is not None and crd_status.state == "forbidden"
        finally:
            await send(lambda: c.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}"))
            await send(lambda: c.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}"))


async def test_stress_2000_status_updates_in_bursts(k8s_control_plane: Any, namespace: str,
                                                    caches: list[InformerCache],
                                                    record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    names = [f"s{i:03d}" for i in range(50)]
    async with cp.async_client() as c:
        await make_pods(c, namespace, names)
        cache, _ = await started_cache(caches, cp.admin_kubeconfig, [POD], namespaces=(namespace,))
        events_before = cache.state(POD).events
        gate = asyncio.Semaphore(40)
        base = collection(POD, "pods", namespace)

        async def update(n: int) -> None:
            body = {"status": {"message": f"update {n}"}}
            async with gate:
                await send(lambda: c.patch(f"{base}/{names[n % len(names)]}/status", json=body, headers=MERGE))

        t0 = time.monotonic()
        for burst in range(10):
            await asyncio.gather(*(update(burst * 200 + i) for i in range(200)))
            await asyncio.sleep(0.1)
        writes = time.monotonic() - t0
        lag = await converge(cache, c, POD, "pods", namespace, timeout=60)
        report(record_property, "stress_2000_updates_write_seconds", round(writes, 2))
        report(record_property, "stress_catch_up_after_last_write_seconds", round(lag, 3))
        applied = cache.state(POD).events - events_before
        report(record_property, "stress_events_applied", applied)
        assert applied == 2000, "each update observed exactly once"
        assert cache.dropped_events == 0


async def test_initial_sync_of_1200_pods_pages_through_the_list(k8s_control_plane: Any, namespace: str,
                                                                caches: list[InformerCache],
                                                                record_property: Callable[[str, Any], None]) -> None:
    cp = k8s_control_plane
    async with cp.async_client() as c:
        t0 = time.monotonic()
        await make_pods(c, namespace, [f"bulk-{i:04d}" for i in range(1200)], concurrency=40)
        report(record_property, "create_1200_pods_seconds", round(time.monotonic() - t0, 2))
        client = await connect(str(cp.admin_kubeconfig))
        api, pages = KubeApi(client), []

        class CountingClient(ResourceClient):
            async def list_page(self, *, limit: int, continue_token: str | None) -> dict:
                page = await super().list_page(limit=limit, continue_token=continue_token)
                pages.append((self.gvk, len(page["items"]), bool(page["metadata"].get("continue"))))
                return page

        cache = InformerCache(client, options=CacheOptions(namespaces=(namespace,)), close_client=True,
                              sources=lambda info, ns: CountingClient(api, info.gvk, info.plural, ns))
        caches.append(cache)
        cache.watch(POD)
        t0 = time.monotonic()
        await cache.start()
        assert await cache.wait_synced(60), cache.states()
        report(record_property, "sync_seconds_1200_pods", round(time.monotonic() - t0, 3))
        assert [p[1:] for p in pages if p[0] == POD] == [(500, True), (500, True), (200, False)]
        assert cache.state(POD).count == 1200 and cache.state(POD).relists == 1
        assert cache_state(cache, POD, namespace) == await server_state(c, collection(POD, "pods", namespace))
