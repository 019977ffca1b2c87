"""Memory of a serving process, measured in fresh child processes (live and snapshot path).

Live path: the parent starts the test control plane (``tests/cluster``, 127.0.0.1), loads
the generator's workloads through the API (``benchmarks.cluster.load``) in steps, and after
each step runs a child process that serves the app (``create_app`` with the admin
kubeconfig: an ``InformerCache`` over every definition kind, the resolver pool) until ready
and records phases (``benchmarks.heap.phase``): ``imported`` (before the app starts),
``synced`` (every informer listed), ``ready`` (every workload has a view), ``settled``
(watches open 3 s later), ``views_queried`` (a GraphQL ``workloads`` page of 100),
``malloc_trim`` (after ``malloc_trim(0)``: the resident memory the heap could give back).
The idle server is the same child against the control plane before any workload exists.

Snapshot path: a child generates a cluster, streams it into a ``SnapshotReader`` as
JSON-decoded pages of 500 (``benchmarks.memory._load``), starts the same service
(materializer + resolver pool) and records the same phases.

With ``trace`` a child also runs under tracemalloc and reports the files holding the most
memory at ``ready`` (tracemalloc slows the run and adds its own memory: those RSS figures
are not the headline).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.asgi import in_process_client
from benchmarks.heap import phase, top_files

CHILD_TIMEOUT_S = 900.0
WORKLOADS_QUERY = "{ workloads(first: 100) { edges { node { name pods { name phase } } } } }"


def _catalog_registry() -> Any:
    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.registry import DefinitionRegistry

    return DefinitionRegistry(load_catalog(default_catalog_dir()))


def _trim_heap() -> None:
    from workload_map.kube.memory import release_free_memory

    release_free_memory()


async def _serve_live(kubeconfig: str, trace: bool, out: list[dict[str, Any]]) -> dict[str, Any]:

    from workload_map.app import create_app
    from workload_map.config import KubeSettings, Settings

    with tempfile.TemporaryDirectory(prefix="wmap-bench-mem-") as state:
        app = create_app(Settings(state_dir=Path(state), kube=KubeSettings(kubeconfig=kubeconfig)))
        out.append(phase("imported"))
        t0 = time.monotonic()
        async with app.router.lifespan_context(app):
            runtime = app.state.runtime
            while not (runtime.service is not None and runtime.service.reader.is_synced()):
                await asyncio.sleep(0.02)
            out.append(phase("synced", seconds=round(time.monotonic() - t0, 1)))
            while not runtime.is_ready():
                await asyncio.sleep(0.05)
            out.append(phase("ready", seconds=round(time.monotonic() - t0, 1)))
            traced = top_files(tracemalloc.take_snapshot()) if trace else None
            await asyncio.sleep(3.0)
            reader = runtime.service.reader
            counts = {"pods": reader.count(_pod_gvk()), "objects": sum(reader.count(g) for g in reader.gvks()),
                      "workloads": len(runtime.service.store)}
            out.append(phase("settled", **counts))
            async with in_process_client(app, timeout=5.0) as c:
                r = await c.post("/graphql", json={"query": WORKLOADS_QUERY})
                r.raise_for_status()
            out.append(phase("views_queried"))
            _trim_heap()
            out.append(phase("malloc_trim"))
    return {"counts": counts, "tracemalloc_top_files_at_ready": traced}


async def _serve_snapshot(workloads: int, seed: int, trace: bool, out: list[dict[str, Any]]) -> dict[str, Any]:
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.service.workloads import WorkloadService

    from benchmarks.generator import generate
    from benchmarks.memory import _load

    cluster = generate(workloads, seed=seed)
    registry = _catalog_registry()
    out.append(phase("imported"))
    t0 = time.monotonic()
    reader = SnapshotReader()
    objects = _load(reader, cluster.iter_objects())
    _trim_heap()
    out.append(phase("synced", seconds=round(time.monotonic() - t0, 1), objects=objects))
    service = WorkloadService(registry, reader)
    await service.start()
    try:
        while not service.is_ready():
            await asyncio.sleep(0.05)
        out.append(phase("ready", seconds=round(time.monotonic() - t0, 1)))
        traced = top_files(tracemalloc.take_snapshot()) if trace else None
        counts = {"pods": reader.count(_pod_gvk()), "objects": objects, "workloads": len(service.store)}
        _trim_heap()
        out.append(phase("malloc_trim", **counts))
    finally:
        await service.stop()
    return {"counts": counts, "tracemalloc_top_files_at_ready": traced}


def _pod_gvk() -> Any:
    from workload_map.gvk import GVK

    return GVK("", "v1", "Pod")


def child_main(argv: list[str]) -> None:
    """``python -m benchmarks.memory_live live KUBECONFIG [trace]`` or ``snapshot N SEED [trace]``."""
    trace = argv[-1] == "trace"
    if trace:
        tracemalloc.start(1)
    phases: list[dict[str, Any]] = []
    if argv[0] == "live":
        extra = asyncio.run(_serve_live(argv[1], trace, phases))
    else:
        extra = asyncio.run(_serve_snapshot(int(argv[1]), int(argv[2]), trace, phases))
    print(json.dumps({"phases": phases, **extra}))


def run_child(*args: str) -> dict[str, Any]:
    """Run one child (see ``child_main``) and return its JSON; raises ``RuntimeError`` on failure."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.memory_live", *args], capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child {args} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def by_phase(result: dict[str, Any], name: str) -> dict[str, Any]:
    """The phase ``name`` of a child result."""
    return next(p for p in result["phases"] if p["phase"] == name)


class _Tranche:
    """The workloads ``[start, stop)`` of a generated cluster (what ``cluster.load`` iterates)."""

    def __init__(self, cluster: Any, start: int, stop: int) -> None:
        self.namespaces, self._cluster, self._range = cluster.namespaces, cluster, (start, stop)

    def workloads(self) -> Any:
        for i, wl in enumerate(self._cluster.workloads()):
            if i >= self._range[1]:
                return
            if i >= self._range[0]:
                yield wl


def live(pod_steps: list[int], *, seed: int = 5, budget_s: float = 400.0, trace: bool = True,
         log: Any = print) -> dict[str, Any]:
    """Idle child, then one child per step of ``pod_steps`` loaded pods (see module docstring)."""
    from benchmarks.cluster import ControlPlaneHandle, cluster_for, load

    handle = ControlPlaneHandle()
    out: dict[str, Any] = {"steps": []}
    try:
        out["control_plane"] = handle.start()
        kubeconfig = str(handle.cp.admin_kubeconfig)
        out["idle"] = run_child("live", kubeconfig)
        log(f"  idle server ready: {by_phase(out['idle'], 'ready')['rss_mb']} MB")
        cluster = cluster_for(max(pod_steps), seed)
        done_workloads = pods = 0
        for target in pod_steps:
            tranche = _Tranche(cluster, done_workloads, len(cluster))
            loaded = asyncio.run(load(handle.cp, tranche, target_pods=target - pods, budget_s=budget_s))
            done_workloads += loaded.workloads
            pods += len(loaded.pods)
            log(f"  loaded {pods} pods ({loaded.seconds:.0f} s, {len(loaded.errors)} errors)")
            result = run_child("live", kubeconfig, *(["trace"] if trace and target == max(pod_steps) else []))
            if trace and target == max(pod_steps):
                traced = result
                result = run_child("live", kubeconfig)
                result["tracemalloc_top_files_at_ready"] = traced["tracemalloc_top_files_at_ready"]
            out["steps"].append({"loaded_pods": pods, "load_errors": loaded.errors[:3], **result})
            log(f"  {pods} pods: ready at {by_phase(result, 'ready')['rss_mb']} MB")
        out["apiserver_rss_bytes"] = handle.cp.rss()
    finally:
        handle.stop()
    return out


def snapshot(workload_steps: list[int], *, seed: int = 7, trace: bool = False, log: Any = print) -> dict[str, Any]:
    """One snapshot child per size (see module docstring)."""
    steps = []
    for n in workload_steps:
        result = run_child("snapshot", str(n), str(seed), *(["trace"] if trace else []))
        steps.append(result)
        log(f"  snapshot {n} workloads ({result['counts']['pods']} pods): ready at "
            f"{by_phase(result, 'ready')['rss_mb']} MB")
    return {"steps": steps}


if __name__ == "__main__":
    child_main(sys.argv[1:])
