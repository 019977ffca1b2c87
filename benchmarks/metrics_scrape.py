"""``python -m benchmarks.metrics_scrape``: what a ``/metrics`` scrape costs the event loop.

Builds ``--workloads`` synthetic views (4 pods each, GPU figures on every one), serves
``Metrics.endpoint`` over them and scrapes it ``--scrapes`` times. The figure issue 29
item 5 bounds (under 5 ms at 20,000 workloads) is the event loop's cost: the CPU time of
the loop's thread during one scrape (``time.thread_time``; the loop does nothing else
meanwhile). Also printed: the whole scrape time (in a worker thread), the body size plain
and gzip, and a scrape after 1% of the views changed; and, in a second pass with a ticker
task, the p99 and longest stretch the loop could not run (on a shared machine those
include other processes' scheduling: the idle loop's own is printed first).
Bounded: at most ``--scrapes`` scrapes (default 5).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from starlette.requests import Request

from workload_map.api.metrics import Metrics
from workload_map.definitions import Phase
from workload_map.resolution.view import GpuFigures, PodView, Replicas, WorkloadView

GPU = "nvidia.com/gpu"


def view(index: int, version: str = "1") -> WorkloadView:
    """Workload ``index``: 4 pods of 2 GPUs on node ``n<index % 50>``."""
    name, namespace = f"w{index}", f"team-{index % 40}"
    pods = [PodView(f"{name}-{i}", namespace, f"u{index}-{i}", "Running", True, f"n{index % 50}", None,
                    {GPU: Decimal(2)}, False, component="worker", instance=str(i)) for i in range(4)]
    eight = {GPU: Decimal(8)}
    return WorkloadView(name=name, namespace=namespace, kind="JobSet", api_version="jobset.x-k8s.io/v1alpha2",
                        uid=f"u{index}", resource_version=version, created_at=None, definition="jobset",
                        origin="catalog", phase=Phase.RUNNING, phases=[Phase.RUNNING], raw_phase=None, conditions=[],
                        components=[], unattributed=pods, replicas=Replicas(), requests={},
                        gpu=GpuFigures(eight, eight, eight), gangs=[], errors=[])


def runtime(views: list[WorkloadView]) -> Any:
    """The little of a ``Runtime`` the metrics read."""
    registry = SimpleNamespace(entries=lambda: [], registered=lambda: [])
    service = SimpleNamespace(workloads=lambda: views, resolutions=0, progress=lambda: (len(views), len(views)),
                              is_ready=lambda: True, feed=SimpleNamespace(published=0), materializer=None)
    return SimpleNamespace(karta_crds={}, cluster_states=dict, states=dict, registry=registry, registrar=None,
                           reader=None, service=service, settings=SimpleNamespace(workload_metrics=True))


def request(gzip: bool) -> Request:
    headers = [(b"accept-encoding", b"gzip")] if gzip else []
    return Request({"type": "http", "method": "GET", "path": "/metrics", "headers": headers, "query_string": b""})


async def loop_cost(metrics: Metrics, *, gzip: bool) -> tuple[float, float, int]:
    """(loop thread CPU s, scrape s, body bytes) of one scrape."""
    cpu, started = time.thread_time(), time.perf_counter()
    response = await metrics.endpoint(request(gzip))
    return time.thread_time() - cpu, time.perf_counter() - started, len(response.body)


async def idle_stalls(seconds: float = 0.5) -> tuple[float, float]:
    """(p99, max) stretch of an idle loop, seconds."""
    stalls, last = [], time.perf_counter()
    end = last + seconds
    while time.perf_counter() < end:
        await asyncio.sleep(0)
        now = time.perf_counter()
        stalls.append(now - last)
        last = now
    stalls.sort()
    return stalls[int(len(stalls) * 0.99)], stalls[-1]


async def scrape(metrics: Metrics, *, gzip: bool) -> tuple[float, float, float]:
    """(p99 loop stall s, longest loop stall s, scrape s) of one scrape, with a ticker."""
    stalls: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0)
            now = time.perf_counter()
            stalls.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    started = time.perf_counter()
    response = await metrics.endpoint(request(gzip))
    took = time.perf_counter() - started
    done.set()
    await tick
    assert response.status_code == 200
    stalls.sort()
    return stalls[int(len(stalls) * 0.99)] if stalls else 0.0, max(stalls, default=0.0), took


async def main(workloads: int, scrapes: int) -> None:
    views = [view(i) for i in range(workloads)]
    state = runtime(views)
    metrics = Metrics(lambda: state)
    cpu, took, size = await loop_cost(metrics, gzip=False)
    print(f"workloads {workloads:,}, series {workloads * 8:,} (info 1 + gpus 3 + pods 4 per workload)")
    print(f"first scrape (renders every view): {took * 1000:.0f} ms, event loop CPU {cpu * 1000:.2f} ms, "
          f"{size / 1e6:.1f} MB")
    for n in range(scrapes):
        cpu, took, size = await loop_cost(metrics, gzip=n % 2 == 1)
        print(f"scrape {n + 1} ({'gzip' if n % 2 else 'plain'}): {took * 1000:.0f} ms in the worker thread, "
              f"event loop CPU {cpu * 1000:.2f} ms, {size / 1e6:.2f} MB")
    for i in range(0, workloads, 100):  # 1% of the views change
        views[i] = view(i, version="2")
    before = metrics.series.renders if metrics.series else 0
    cpu, took, _ = await loop_cost(metrics, gzip=False)
    renders = (metrics.series.renders if metrics.series else 0) - before
    print(f"after 1% changed: {took * 1000:.0f} ms, {renders} views rendered again, event loop CPU "
          f"{cpu * 1000:.2f} ms")
    p99, longest = await idle_stalls()
    print(f"idle loop: stall p99 {p99 * 1000:.2f} ms, max {longest * 1000:.2f} ms")
    p99, longest, _ = await scrape(metrics, gzip=True)
    print(f"during a gzip scrape: stall p99 {p99 * 1000:.2f} ms, max {longest * 1000:.2f} ms")


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m benchmarks.metrics_scrape", description=__doc__)
    p.add_argument("--workloads", type=int, default=20_000)
    p.add_argument("--scrapes", type=int, default=5)
    args = p.parse_args()
    asyncio.run(main(args.workloads, min(args.scrapes, 20)))
