"""Materialized views (issue 11): cold start to ready, /livez under load, gpuSummary after a
change, change-to-new-phase latency, IPC cost per workload, RSS per workload.

All in process over a ``SnapshotReader`` of the synthetic cluster (``benchmarks.generator``),
with the app's lifespan running (so the resolver pool is the server's):

* ``ready_s``: from the start of the lifespan until every workload has a view, beside the
  snapshot-load floor (objects decoded and indexed, ``load_s``); ``workloads_per_s`` is the
  cold resolution rate;
* ``livez_cold_ms``: ``/livez`` through the ASGI app every 20 ms during that cold pass;
* ``livez_loop_ms``: ``/livez`` while ``loopers`` objects of a looping definition (``def f:
  f; f``) keep workers busy until their budget ends them;
* ``gpu_summary_after_change_ms``: one status change, settlement, then ``gpuSummary`` over
  GraphQL (aggregates by difference: no pass over the workloads; the rest is GraphQL
  execution); ``service_ms`` is ``WorkloadService.gpu_summary`` alone after a change;
* ``change_to_phase_ms``: root-object status changes at ``rate``/s; the time from the cache
  write to the feed event carrying the new phase;
* ``ipc``: the same workloads resolved in this process and through one worker
  (``BlockingResolver``); the difference per workload is the pickling + pipe cost;
* ``rss_per_workload_bytes``: server-process RSS growth from lifespan start to ready, per
  workload (views and aggregates; worker memory is not included).

Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.asgi import in_process_client
from benchmarks.machine import rss_bytes
from benchmarks.stats import summarize
from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings
from workload_map.definitions import load_definition
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.service.workloads import WorkloadService
from workload_map.materialization.pool import BlockingResolver, definition_key
from workload_map.materialization.worker import Job

GPU_SUMMARY = '{ gpuSummary(groupBy: NAMESPACE) { key workloads gpu { allocated } } }'
PHASED = 500


def _karta(kind: str, path: str) -> dict[str, Any]:
    return {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": f"bench-{kind.lower()}"},
            "spec": {"structureDefinition": {"rootComponent": {
                "name": "r", "kind": {"group": "bench.example.com", "version": "v1", "kind": kind},
                "statusDefinition": {"phaseDefinition": {"path": path},
                                     "statusMappings": {"running": [{"byPhase": "up"}],
                                                        "initializing": [{"byPhase": "wait"}]}}}}}}


LOOP = _karta("Loop", "def f: f; f")
PHASED_KIND = _karta("Phased", '.status.p // "wait"')


def _phased(n: int, phase: str) -> dict[str, Any]:
    return {"apiVersion": "bench.example.com/v1", "kind": "Phased", "status": {"p": phase},
            "metadata": {"name": f"phased-{n}", "namespace": "bench", "uid": f"phased-{n}",
                         "resourceVersion": phase}}


async def _poll(client: httpx.AsyncClient, stop: asyncio.Event, out: list[float], limit: int = 5_000) -> None:
    while not stop.is_set() and len(out) < limit:
        t0 = time.perf_counter()
        await client.get("/livez")
        out.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(0.02)


async def run(reader: Any, registry: DefinitionRegistry, *, load_s: float, workers: int, rate: float = 200.0,
              changes: int = 600, seconds: float = 5.0, loopers: int = 4) -> dict[str, Any]:
    """Every figure of the module docstring for one loaded reader (``PHASED`` objects of a
    bench kind whose phase is ``.status.p`` are added to it for the change figures)."""
    registry.register(load_definition(PHASED_KIND), origin="file")
    for n in range(PHASED):
        reader.add(_phased(n, "wait"))
    with tempfile.TemporaryDirectory(prefix="wmap-bench-views-") as state:
        settings = Settings(state_dir=Path(state), resolver=ResolverSettings(workers=workers, timeout_s=2.0))
        app = create_app(settings, reader=reader, registry=registry)
        service: WorkloadService = app.state.runtime.service
        rss0 = rss_bytes()
        async with in_process_client(app, base_url="http://b") as c:
            cold: list[float] = []
            stop = asyncio.Event()
            t0 = time.perf_counter()
            poller = asyncio.create_task(_poll(c, stop, cold))
            async with app.router.lifespan_context(app):
                await service.settled(900)
                ready = time.perf_counter() - t0
                stop.set()
                await poller
                rss1 = rss_bytes()
                out: dict[str, Any] = {"workloads": len(service.store), "workers": service.workers,
                                       "load_s": round(load_s, 2), "ready_s": round(ready, 2),
                                       "ready_over_floor": round((load_s + ready) / load_s, 2) if load_s else None,
                                       "workloads_per_s": round(len(service.store) / ready, 1),
                                       "livez_cold_ms": summarize(cold, "ms").to_dict(),
                                       "rss_per_workload_bytes": round((rss1 - rss0) / max(1, len(service.store)))}
                out["gpu_summary_after_change_ms"] = await _summary_after_change(c, reader, service)
                out["change_to_phase_ms"] = await _change_to_phase(reader, service, rate, changes, seconds)
                out["livez_loop_ms"] = await _livez_while_looping(c, reader, registry, service, loopers)
        out["ipc"] = ipc_cost(service, count=300)
    return out


async def _summary_after_change(client: httpx.AsyncClient, reader: Any, service: WorkloadService,
                                count: int = 30) -> dict[str, Any]:
    samples: list[float] = []
    direct: list[float] = []
    for i in range(count):
        reader.add(_phased(i, "up" if i % 2 == 0 else "wait"))
        await service.settled(30)
        t0 = time.perf_counter()
        service.gpu_summary("NAMESPACE")
        direct.append((time.perf_counter() - t0) * 1000)
        reader.add(_phased(i, "wait" if i % 2 == 0 else "up"))
        await service.settled(30)
        t0 = time.perf_counter()
        response = await client.post("/graphql", json={"query": GPU_SUMMARY})
        samples.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200
    return {**summarize(samples, "ms").to_dict(), "service_ms": summarize(direct, "ms").to_dict()}


async def _change_to_phase(reader: Any, service: WorkloadService, rate: float, changes: int,
                           seconds: float) -> dict[str, Any]:
    subscriber = service.feed.subscribe(namespace="bench", kind="Phased", maxsize=100_000)
    sent: dict[str, tuple[float, str]] = {}
    phases = {"up": "Running", "wait": "Initializing"}
    latencies: list[float] = []

    async def consume() -> None:
        while True:
            change = await subscriber.get()
            started = sent.get(change.uid)
            if started is not None and change.view is not None and change.view.phase.value == phases[started[1]]:
                del sent[change.uid]
                latencies.append((time.perf_counter() - started[0]) * 1000)

    consumer = asyncio.create_task(consume())
    deadline = time.perf_counter() + seconds
    i = 0
    while i < changes and time.perf_counter() < deadline:
        n = i % PHASED
        current = service.view_of(f"phased-{n}")
        if f"phased-{n}" not in sent and current is not None:
            target = "wait" if current.phase.value == "Running" else "up"  # always a phase change
            sent[f"phased-{n}"] = (time.perf_counter(), target)
            reader.add(_phased(n, target))
        i += 1
        await asyncio.sleep(1 / rate)
    await service.settled(30)
    await asyncio.sleep(0.05)
    consumer.cancel()
    subscriber.close()
    return {**summarize(latencies, "ms").to_dict(), "changes": i, "rate_per_s": rate, "missed": len(sent)}


async def _livez_while_looping(client: httpx.AsyncClient, reader: Any, registry: DefinitionRegistry,
                               service: WorkloadService, loopers: int) -> dict[str, Any]:
    registry.register(load_definition(LOOP), origin="file")  # straight in, as a looping Karta would be
    await service.settled(30)
    for n in range(loopers):
        reader.add({"apiVersion": "bench.example.com/v1", "kind": "Loop",
                    "metadata": {"name": f"loop-{n}", "namespace": "bench", "uid": f"loop-{n}"}})
    samples: list[float] = []
    stop = asyncio.Event()
    poller = asyncio.create_task(_poll(client, stop, samples))
    await service.settled(60)
    stop.set()
    await poller
    return {**summarize(samples, "ms").to_dict(), "timeouts": service.materializer.pool.timeouts}


def ipc_cost(service: WorkloadService, *, count: int) -> dict[str, Any]:
    """Per workload: in-process resolve vs one worker; the difference is the IPC cost."""
    jobs = []
    records = [r for r in service.store.records() if not r.view.errors and not r.entry.definition.name.startswith("bench-")]
    for record in records[:count]:  # the synthetic cluster's workloads, not the bench kinds
        obj = service.reader.by_uid(record.view.uid)
        if obj is not None:
            entry = record.entry
            jobs.append((Job(record.view.uid, definition_key(entry.definition), service.inputs(obj, entry)),
                         entry.definition))
    for job, definition in jobs[:20]:
        job.inputs.resolve(definition)  # warm the program cache here too
    t0 = time.perf_counter()
    for job, definition in jobs:
        job.inputs.resolve(definition)
    inline = time.perf_counter() - t0
    blocking = BlockingResolver(1, 10.0)
    try:
        blocking.resolve(jobs[:20])  # start the worker, send the definitions, compile
        t0 = time.perf_counter()
        blocking.resolve(jobs)
        pooled = time.perf_counter() - t0
    finally:
        blocking.close()
    job_bytes = sum(len(pickle.dumps(job)) for job, _ in jobs)
    n = max(1, len(jobs))
    return {"workloads": len(jobs), "inline_us": round(inline / n * 1e6, 1), "one_worker_us": round(pooled / n * 1e6, 1),
            "ipc_us": round((pooled - inline) / n * 1e6, 1), "job_bytes": round(job_bytes / n)}


def headline(figs: dict[str, Any]) -> str:
    """One progress line."""
    return (f"{figs['workloads']} workloads ready in {figs['ready_s']} s ({figs['workloads_per_s']}/s, "
            f"{figs['workers']} workers), change-to-phase p99 {figs['change_to_phase_ms']['p99']} ms")


def _ms(f: dict[str, Any]) -> str:
    return f"{f['median']} / {f['p99']} ms (n={f['n']})"


def render(figs: dict[str, Any]) -> str:
    """The materialized-view figures as a small table (targets from issue 11)."""
    def ms(key: str) -> str:
        return _ms(figs[key])

    ipc = figs["ipc"]
    rows = [
        ("workloads, resolver workers", f"{figs['workloads']}, {figs['workers']}", ""),
        ("snapshot load (floor) / lifespan start to ready", f"{figs['load_s']} s / {figs['ready_s']} s "
         f"({figs['workloads_per_s']} workloads/s)", "ready <= 1.5x floor"),
        ("(load + ready) / load", str(figs["ready_over_floor"]), "<= 1.5"),
        ("/livez during cold resolution", ms("livez_cold_ms"), "p99 <= 50 ms"),
        ("/livez while a definition loops", ms("livez_loop_ms") + f", {figs['livez_loop_ms']['timeouts']} timeouts",
         "p99 <= 50 ms"),
        ("gpuSummary right after a change, GraphQL", ms("gpu_summary_after_change_ms"), "<= 5 ms"),
        ("  same, WorkloadService.gpu_summary", _ms(figs["gpu_summary_after_change_ms"]["service_ms"]), "<= 5 ms"),
        (f"change -> new phase on the feed at {figs['change_to_phase_ms']['rate_per_s']:g}/s",
         ms("change_to_phase_ms"), "p99 <= 100 ms"),
        ("IPC per workload (one worker minus in-process)", f"{ipc['ipc_us']} us ({ipc['inline_us']} us inline, "
         f"{ipc['one_worker_us']} us via a worker, {ipc['job_bytes']} B pickled)", ""),
        ("server RSS per materialized workload", f"{figs['rss_per_workload_bytes']} B", ""),
    ]
    width = max(len(r[0]) for r in rows)
    return "materialized views\n" + "\n".join(f"  {a.ljust(width)}  {b}  {c}".rstrip() for a, b, c in rows)
