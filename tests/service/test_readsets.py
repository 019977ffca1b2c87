"""Only relevant changes re-resolve (issue 23 item 3), and the views stay exact.

Over the bundled sample with the catalog: a change that touches no field any definition
reads of a descendant (resourceVersion, generation, finalizers, a pod's startTime) runs no
resolution; a change that does (a pod's phase) re-resolves its workload. The property:
after any sequence of relevant and irrelevant changes, every view equals the one a fresh
service resolves from the same objects.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import httpx

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings
from workload_map.paths import default_catalog_dir, default_sample_dir
from workload_map.definitions.catalog import Catalog, load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader, load_objects
from workload_map.service.workloads import WorkloadService
from tests.api.live import serving, wait_until
from tests.service.support import demo, demo_definition

CATALOG = load_catalog(default_catalog_dir())
SAMPLE = load_objects(default_sample_dir())
_VERSIONS = itertools.count(10_000_000)


def _service(objects: list[dict[str, Any]]) -> tuple[WorkloadService, SnapshotReader]:
    reader = SnapshotReader(objects)
    return WorkloadService(DefinitionRegistry(CATALOG), reader), reader


def _views(service: WorkloadService) -> dict[str, Any]:
    return {v.uid: v.to_dict() for v in service.workloads()}


def _change(obj: dict[str, Any], kind: str, value: int) -> dict[str, Any]:
    """``obj`` after one change of ``kind``; every change bumps resourceVersion, as the API server does."""
    out = copy.deepcopy(obj)
    meta, status = out.setdefault("metadata", {}), out.setdefault("status", {})
    meta["resourceVersion"] = str(next(_VERSIONS))
    if kind == "generation":
        meta["generation"] = int(meta.get("generation") or 1) + 1
    elif kind == "finalizers":
        meta["finalizers"] = [f"example.com/f{value}"]
    elif kind == "startTime" and out.get("kind") == "Pod":
        status["startTime"] = f"2026-01-01T00:00:{value % 60:02d}Z"
    elif kind == "phase":
        status["phase"] = ("Pending", "Running", "Succeeded", "Failed")[value % 4]
    elif kind == "ready":
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
        status["conditions"] = [*conditions, {"type": "Ready", "status": ("True", "False")[value % 2]}]
    elif kind == "label":
        labels = meta.setdefault("labels", {})
        key = sorted(labels)[value % len(labels)] if labels and value % 3 else "example.com/x"
        labels[key] = f"v{value}"
    elif kind == "deleting":
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    elif kind == "failing":
        status["conditions"] = [*(status.get("conditions") or []), {"type": "Failed", "status": "True"}]
    elif kind == "replicas" and isinstance(out.get("spec"), dict):
        out["spec"]["replicas"] = value % 4
    return out


KINDS = ("rv", "generation", "finalizers", "startTime", "phase", "ready", "label", "deleting", "failing", "replicas")
CHANGES = st.lists(st.tuples(st.integers(0, len(SAMPLE) - 1), st.sampled_from(KINDS), st.integers(0, 99)),
                   min_size=1, max_size=10)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=CHANGES)
def test_views_after_any_change_sequence_equal_a_fresh_resolution(changes: list[tuple[int, str, int]]) -> None:
    current = [copy.deepcopy(o) for o in SAMPLE]
    service, reader = _service(current)
    _views(service)  # resolved once: later reads resolve only what the changes marked
    for index, kind, value in changes:
        current[index] = _change(current[index], kind, value)
        reader.add(current[index])  # an upsert of a cached object: MODIFIED
    assert _views(service) == _views(_service(current)[0])


def _jobset_pod(service: WorkloadService) -> tuple[str, dict[str, Any]]:
    """A JobSet workload of the sample with a Running pod, and that pod (raw, from the sample)."""
    for view in service.workloads(kind="JobSet"):
        for pod in view.all_pods():
            raw = next((o for o in SAMPLE if o.get("kind") == "Pod" and o["metadata"].get("name") == pod.name
                        and o["metadata"].get("namespace") == pod.namespace), None)
            if raw is not None and pod.phase == "Running" and not pod.terminating:
                return view.uid, raw
    raise AssertionError("the bundled sample has a JobSet with a Running pod")


def test_an_irrelevant_pod_change_runs_no_resolution_and_a_phase_change_does() -> None:
    service, reader = _service(SAMPLE)
    uid, pod = _jobset_pod(service)
    before = service.view_of(uid)
    assert before is not None
    resolutions = service.resolutions
    # resourceVersion, generation, finalizers and startTime: no definition and no resolver code reads them
    quiet = _change(_change(_change(pod, "generation", 1), "finalizers", 2), "startTime", 3)
    reader.add(quiet)
    assert _views(service)[uid] == before.to_dict()
    assert service.resolutions == resolutions
    # Running -> Failed: a terminated pod is no current replica, so `current` drops by one
    # (resolver counting rules), and it took exactly one resolution (its JobSet)
    reader.add(_change(quiet, "phase", 3))
    after = service.view_of(uid)
    assert after is not None
    assert service.resolutions == resolutions + 1
    assert after.replicas.current == before.replicas.current - 1


def test_a_change_of_a_workload_object_itself_always_re_resolves() -> None:
    # a root's view publishes its resourceVersion: even a resourceVersion-only change is seen
    service, reader = _service(SAMPLE)
    (view, *_) = service.workloads(kind="JobSet")
    raw = next(o for o in SAMPLE if GVK.of(o).kind == "JobSet" and o["metadata"]["name"] == view.name
               and o["metadata"].get("namespace") == view.namespace)
    resolutions = service.resolutions
    changed = _change(raw, "rv", 0)
    reader.add(changed)
    after = service.view_of(view.uid)
    assert after is not None and after.resource_version == changed["metadata"]["resourceVersion"]
    assert service.resolutions == resolutions + 1


def _owned_pod(owner: dict[str, Any], rv: str, start: str, phase: str = "Running") -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p0", "namespace": meta["namespace"], "uid": "uid-p0", "resourceVersion": rv,
                         "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                              "name": meta["name"], "uid": meta["uid"], "controller": True}]},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": phase, "startTime": start}}


async def test_a_started_server_counts_the_changes_that_marked_nothing(tmp_path: Path) -> None:
    root = demo("a")
    reader = SnapshotReader([root, _owned_pod(root, "1", "2026-01-01T00:00:00Z")])
    registry = DefinitionRegistry(Catalog([]))
    registry.register(demo_definition(), origin="file")
    app = create_app(Settings(state_dir=tmp_path / "state", resolver=ResolverSettings(workers=1)),
                     reader=reader, registry=registry)
    service = app.state.runtime.service
    async with serving(app) as host, httpx.AsyncClient(base_url=f"http://{host}", timeout=10) as client:
        await wait_until(service.is_ready, 30)
        assert await service.settled(10)
        resolutions = service.resolutions
        reader.add(_owned_pod(root, "2", "2026-01-01T00:00:09Z"))  # resourceVersion and startTime only
        assert service.materializer.skipped == 1  # decided in the cache listener, synchronously
        assert await service.settled(10) and service.resolutions == resolutions
        assert "wmap_changes_unread_total 1.0" in (await client.get("/metrics")).text
        reader.add(_owned_pod(root, "3", "2026-01-01T00:00:09Z", phase="Failed"))  # read: the Demo re-resolves
        await wait_until(lambda: service.resolutions == resolutions + 1, 10)
        assert service.materializer.skipped == 1
