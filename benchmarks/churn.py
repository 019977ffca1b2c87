"""Churn in process: change -> visible with and without read sets (issue 23 item 3).

``python -m benchmarks.churn [--workloads 1000] [--rate 1000] [--seconds 10] [--seed 1]``

A generator cluster in a ``SnapshotReader``, a started ``WorkloadService`` (2 worker
processes); once ready, pod changes are applied on the event loop at ``--rate`` per second
for ``--seconds`` (bounded in count and time), alternating:

* relevant: the pod's Ready condition flips (its workload's ready count changes);
* irrelevant: resourceVersion and ``status.startTime`` only (no definition and no resolver
  code reads them: ``workload_map.resolution.readsets``).

Relevant changes go to the pods of one half of the workloads, irrelevant ones to the other
half, so an irrelevant change never rides along with a relevant one of the same workload.

Change -> visible is the time from applying a relevant change to the first feed event of
its workload whose view shows the pod in the new state (a subscriber of the same feed as
GraphQL/SSE). Printed for two runs: read sets off (every change marks its workload, the
behaviour before) and on; each with the resolutions run during the churn, the changes that
marked nothing and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from typing import Any

from benchmarks import machine
from benchmarks.generator import generate
from benchmarks.stats import percentile

DRAIN_S = 30.0
READY_S = 300.0


def _registry() -> Any:
    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.registry import DefinitionRegistry

    return DefinitionRegistry(load_catalog(default_catalog_dir()))


def _flipped(pod: Any, versions: Any) -> tuple[dict[str, Any], bool]:
    """``pod`` with its Ready condition flipped, and the new readiness."""
    status = dict(pod.get("status") or {})
    conditions = [dict(c) for c in status.get("conditions") or []]
    ready = not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    conditions = [c for c in conditions if c.get("type") != "Ready"] + [{"type": "Ready",
                                                                         "status": "True" if ready else "False"}]
    status["conditions"] = conditions
    return {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(next(versions))}, "status": status}, ready


def _quiet(pod: Any, versions: Any, n: int) -> dict[str, Any]:
    """``pod`` with a new resourceVersion and startTime: nothing a definition reads."""
    status = {**(pod.get("status") or {}), "startTime": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"}
    return {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(next(versions))}, "status": status}


async def run_once(workloads: int, *, rate: int, seconds: float, seed: int, read_sets: bool) -> dict[str, Any]:
    """One churn run (module docstring); returns its figures."""
    from workload_map.service.workloads import WorkloadService

    reader = generate(workloads, seed=seed).reader()
    service = WorkloadService(_registry(), reader, workers=2)
    await service.start()
    try:
        deadline = time.monotonic() + READY_S
        while not service.is_ready() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await service.settled(READY_S)
        materializer = service.materializer
        assert materializer is not None
        if not read_sets:
            materializer._irrelevant = lambda event: False  # type: ignore[method-assign]  # the behaviour before
        views = [record.view for record in service.store.snapshot().records]
        candidates = [(view.uid, pod.uid) for view in views for pod in view.all_pods()
                      if pod.phase == "Running" and not pod.terminating and pod.uid]
        return await _churn(service, reader, candidates, rate=rate, seconds=seconds)
    finally:
        await service.stop()


async def _churn(service: Any, reader: Any, candidates: list[tuple[str, str]], *, rate: int,
                 seconds: float) -> dict[str, Any]:
    versions = itertools.count(10**12)
    pending: dict[str, dict[str, tuple[bool, float]]] = {}  # workload uid -> pod uid -> (ready, changed at)
    latencies: list[float] = []
    subscriber = service.feed.subscribe(maxsize=1_000_000)

    async def consume() -> None:
        while True:
            change = await subscriber.get()
            waiting = pending.get(change.uid)
            if not waiting or change.view is None:
                continue
            now = time.monotonic()
            shown = {p.uid: p.ready for p in change.view.all_pods()}
            for pod_uid, (ready, at) in list(waiting.items()):
                if shown.get(pod_uid) == ready:
                    latencies.append(now - at)
                    del waiting[pod_uid]

    consumer = asyncio.get_running_loop().create_task(consume())
    resolutions, skipped = service.resolutions, service.materializer.skipped
    load_before = machine.load_average()
    cpu = machine.CpuMeter({"resolver workers": list(service.materializer.pool.pids())})
    started, done, relevant = time.monotonic(), 0, 0
    # relevant changes go to the pods of half the workloads, irrelevant ones to the other half (so they
    # cannot hide behind a relevant change of the same workload); round robin: a pod is not flipped
    # twice while its change is pending
    workloads = sorted({w for w, _ in candidates})
    half = {w for i, w in enumerate(workloads) if i % 2}
    flips = itertools.cycle([c for c in candidates if c[0] not in half])
    quiet = itertools.cycle([c for c in candidates if c[0] in half])
    total = int(rate * seconds)
    while done < total and time.monotonic() - started < seconds * 2:
        due = min(total, int((time.monotonic() - started) * rate))
        while done < due:
            workload_uid, pod_uid = next(flips if done % 2 == 0 else quiet)
            pod = reader.by_uid(pod_uid)
            if pod is not None and done % 2 == 0:
                changed, ready = _flipped(pod, versions)
                pending.setdefault(workload_uid, {})[pod_uid] = (ready, time.monotonic())
                reader.add(changed)
                relevant += 1
            elif pod is not None:
                reader.add(_quiet(pod, versions, done))
            done += 1
        await asyncio.sleep(0.002)
    applied_s = time.monotonic() - started
    drain = time.monotonic() + DRAIN_S
    while any(pending.values()) and time.monotonic() < drain:
        await asyncio.sleep(0.01)
    cpu_used = cpu.used()
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)
    subscriber.close()
    resolved = service.resolutions - resolutions
    return {"changes": done, "relevant": relevant, "rate_per_s": round(done / applied_s),
            "resolutions": resolved,
            "cpu_ms_per_resolution": {name: round(s * 1000 / max(resolved, 1), 3) for name, s in cpu_used.items()},
            "marked_nothing": service.materializer.skipped - skipped,
            "visible": len(latencies), "not_visible": sum(len(w) for w in pending.values()),
            "p50_ms": round(percentile(latencies, 50) * 1000, 1) if latencies else None,
            "p99_ms": round(percentile(latencies, 99) * 1000, 1) if latencies else None,
            "load_before": load_before, "load_after": machine.load_average()}


def main(argv: list[str] | None = None) -> None:
    """Run both churn runs and print their figures."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.churn", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=1000)
    p.add_argument("--rate", type=int, default=1000, help="object changes per second")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    for read_sets in (False, True):
        figures = asyncio.run(run_once(args.workloads, rate=args.rate, seconds=args.seconds, seed=args.seed,
                                       read_sets=read_sets))
        print(f"read sets {'on ' if read_sets else 'off'}: {figures['changes']} changes "
              f"({figures['relevant']} relevant) at {figures['rate_per_s']}/s; resolutions "
              f"{figures['resolutions']}; marked nothing {figures['marked_nothing']}; change->visible "
              f"p50 {figures['p50_ms']} ms p99 {figures['p99_ms']} ms ({figures['visible']} seen, "
              f"{figures['not_visible']} not within {DRAIN_S:g} s); CPU ms per resolution "
              f"{figures['cpu_ms_per_resolution']}; load {figures['load_before']} -> {figures['load_after']}", flush=True)


if __name__ == "__main__":
    main()
