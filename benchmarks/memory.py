"""Resident bytes per cached pod, per workload and per memoized view, measured with tracemalloc.

Objects reach the store the way the informer delivers them: a page of up to 500 objects is
serialized to JSON and decoded with ``json.loads`` (so strings and dicts are fresh, with
dict keys shared only within a page, as when decoding a real list page), then each item is
``SnapshotReader.add``-ed (trimmed and indexed by the same ``Store`` the informers use)
and the raw page is dropped. tracemalloc's traced memory is read:

1. after every non-pod object (roots, Jobs, ReplicaSets, ...): bytes per workload (objects);
2. after every pod: bytes per cached pod (trimmed pod, indexes, owner-graph versions);
3. after ``WorkloadService.workloads()`` filled the memo: bytes per memoized view.

``rss_delta_store_bytes`` is the process RSS growth across the same load (under tracemalloc,
so an upper bound); the cluster figures report the RSS growth of a real informer sync.

``python -m benchmarks.memory`` runs the RSS figures of issue 17 instead (live path through
the test control plane and the snapshot path, each in fresh processes, beside the targets):
see ``benchmarks.memory_report``.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService

from benchmarks.generator import Cluster, Obj
from benchmarks.machine import rss_bytes

PAGE = 500


def _pages(objects: Iterator[Obj]) -> Iterator[list[Obj]]:
    page: list[Obj] = []
    for obj in objects:
        page.append(obj)
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _load(reader: SnapshotReader, objects: Iterator[Obj]) -> int:
    count = 0
    for page in _pages(objects):
        decoded = json.loads(json.dumps({"items": page}))["items"]
        del page
        for item in decoded:
            reader.add(item)
            count += 1
        del decoded
    return count


def _is_pod(obj: Obj) -> bool:
    return obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1"


def measure(cluster: Cluster, registry: DefinitionRegistry) -> dict[str, Any]:
    """The three per-item figures for ``cluster`` (see module docstring)."""
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    try:
        reader = SnapshotReader()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        objects = _load(reader, (o for wl in cluster.workloads() for o in wl.objects if not _is_pod(o)))
        gc.collect()
        after_objects = tracemalloc.get_traced_memory()[0]
        pods = _load(reader, (o for wl in cluster.workloads() for o in wl.objects if _is_pod(o)))
        gc.collect()
        after_pods = tracemalloc.get_traced_memory()[0]
        rss1 = rss_bytes()
        service = WorkloadService(registry, reader)
        views = service.workloads()
        gc.collect()
        after_views = tracemalloc.get_traced_memory()[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    workloads = len(cluster)
    pod_bytes = after_pods - after_objects
    obj_bytes = after_objects - base
    view_bytes = after_views - after_pods
    return {
        "method": "tracemalloc traced-memory deltas while streaming JSON-decoded pages into a SnapshotReader",
        "workloads": workloads, "pods": pods, "other_objects": objects, "views": len(views),
        "bytes_per_pod": round(pod_bytes / pods) if pods else None,
        "bytes_per_workload_objects": round(obj_bytes / workloads) if workloads else None,
        "bytes_per_workload_total": round((obj_bytes + pod_bytes) / workloads) if workloads else None,
        "bytes_per_memoized_view": round(view_bytes / max(1, len(views))),
        "bytes_per_memoized_view_per_pod": round(view_bytes / pods) if pods else None,
        "store_total_bytes": obj_bytes + pod_bytes, "memo_total_bytes": view_bytes, "traced_peak_bytes": peak,
        "rss_delta_store_bytes": rss1 - rss0,
        "rss_note": "RSS growth across the store load under tracemalloc (includes allocator slack and "
                    "tracemalloc's own bookkeeping; an upper bound)",
    }


def load_reader(cluster: Cluster) -> tuple[SnapshotReader, dict[str, Any]]:
    """Build a ``SnapshotReader`` over ``cluster`` for the query figures (harness work, not a figure).

    The cyclic GC is paused while the objects are generated and added (it would otherwise
    rescan the growing store again and again), then one full collection runs.
    """
    import time

    was_enabled = gc.isenabled()
    gc.disable()
    t0 = time.perf_counter()
    try:
        reader = SnapshotReader()
        pods = objects = 0
        for obj in cluster.iter_objects():
            reader.add(obj)
            objects += 1
            pods += _is_pod(obj)
    finally:
        if was_enabled:
            gc.enable()
    gc.collect()
    return reader, {"pods": pods, "objects": objects, "seconds": round(time.perf_counter() - t0, 2)}


if __name__ == "__main__":
    from benchmarks.memory_report import main

    main()
