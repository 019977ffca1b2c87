"""``python -m benchmarks.series``: how many series ``/metrics`` carries, with and without per-pod series.

Serves the bundled sample and a generated cluster (``--workloads``, default 1,000;
benchmarks/generator.py, about 10 pods per workload) in process, scrapes ``/metrics`` once
the views are materialized and prints, per setting (the defaults: per-workload series on,
per-pod off; then ``pod_metrics=True``), the series of each workload family, the total and
the workload series per 1,000 workloads. docs/metrics-series.md quotes the figures.
Bounded: one scrape per run, at most ``--wait`` seconds waiting for the views.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.asgi import in_process_client
from benchmarks.generator import generate
from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings
from workload_map.paths import default_sample_dir
from workload_map.kube.snapshot import SnapshotReader

FAMILIES = ("wmap_workload_info", "wmap_workload_gpus", "wmap_pod_workload_info")


async def count(reader: Any, *, pod_metrics: bool, wait_s: float) -> dict[str, int]:
    settings = Settings(state_dir=Path(tempfile.mkdtemp(prefix="wmap-series-")), pod_metrics=pod_metrics,
                        resolver=ResolverSettings(workers=1, timeout_s=30.0))
    app = create_app(settings, reader=reader)
    async with app.router.lifespan_context(app), in_process_client(app, timeout=5.0) as client:
        service = app.state.runtime.service
        deadline = time.monotonic() + wait_s
        while not service.is_ready() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        text = (await client.get("/metrics")).text
        workloads = len(list(service.workloads()))
    samples = {f.name: len(f.samples) for f in text_string_to_metric_families(text)}
    return {"workloads": workloads, **{name: samples.get(name, 0) for name in FAMILIES},
            "total": sum(samples.values())}


def line(name: str, pods: bool, figures: dict[str, int]) -> str:
    per_workload = sum(figures[f] for f in FAMILIES)
    per_1000 = 1000 * per_workload / max(1, figures["workloads"])
    return (f"{name:<22} pod_metrics={str(pods):<5} workloads={figures['workloads']:>6} "
            f"info={figures['wmap_workload_info']:>6} gpus={figures['wmap_workload_gpus']:>6} "
            f"pods={figures['wmap_pod_workload_info']:>6} total={figures['total']:>6} "
            f"workload series per 1,000 workloads={per_1000:,.0f}")


async def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.series", description=__doc__)
    p.add_argument("--workloads", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the views, per run")
    args = p.parse_args(argv)
    for pods in (False, True):
        print(line("bundled sample", pods, await count(SnapshotReader.from_paths(default_sample_dir()),
                                                       pod_metrics=pods, wait_s=args.wait)), flush=True)
        cluster = generate(args.workloads, seed=args.seed)
        print(line(f"generated ({args.workloads:,})", pods, await count(cluster.reader(), pod_metrics=pods,
                                                                       wait_s=args.wait)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
