"""Series on ``/metrics`` over the bundled sample with the default settings (issue 27 item 4).

The defaults keep the workload series bounded by the number of workloads: one
``wmap_workload_info`` per top-level workload, one ``wmap_workload_gpus`` per workload,
GPU figure (spec, pods, allocated) and GPU resource name, and no per-pod series
(``pod_metrics`` is opt-in). The counts are recounted here from the views themselves and
compared with the figures docs/metrics-series.md quotes (``python -m benchmarks.series``
prints them); a sample file added to ``server/workload_map/sample`` changes them: update the
figures and the doc together.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings
from workload_map.kube.snapshot import SnapshotReader

SAMPLE_WORKLOADS = 141
"""Top-level workloads of the bundled sample (35 files, one per catalog type)."""
SAMPLE_GPU_SERIES = 313
"""Their GPU series: figures x GPU resource names with a known count, summed over workloads."""


async def _scrape(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[dict[str, list[Any]], list[Any]]]:
    config = Settings(state_dir=tmp_path / "state", resolver=ResolverSettings(workers=1, timeout_s=30.0),
                      **settings)
    if not config.sample_dir.is_dir():
        pytest.skip(f"bundled sample missing: {config.sample_dir}")
    app = create_app(config, reader=SnapshotReader.from_paths(config.sample_dir))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        service = app.state.runtime.service
        for _ in range(1500):  # bounded poll: at most ~300 s for the views on a loaded machine
            if service.is_ready():
                break
            await asyncio.sleep(0.2)
        assert service.is_ready(), "the sample's views were not materialized"
        reply = await client.get("/metrics")
        assert reply.status_code == 200
        families = {f.name: f.samples for f in text_string_to_metric_families(reply.text)}
        yield families, list(service.workloads())


def _gpu_series(views: list[Any]) -> int:
    """The rule of ``workload_metrics``, recounted: per workload, every figure's GPU resources with a known count."""
    # GpuFigures attribute -> the key of its unknown-count set
    figures = {"spec": "requestedBySpec", "pods": "requestedByPods", "allocated": "allocated"}
    total = 0
    for view in views:
        for attribute, key in figures.items():
            unknown = view.gpu.unknown.get(key, set())
            total += sum(1 for r in getattr(view.gpu, attribute) if view.policy.is_gpu(r) and r not in unknown)
    return total


async def test_the_defaults_serve_per_workload_series_and_no_per_pod_series(tmp_path: Path) -> None:
    async for families, views in _scrape(tmp_path):
        assert len(views) == SAMPLE_WORKLOADS
        assert len(families["wmap_workload_info"]) == len(views) == SAMPLE_WORKLOADS
        assert len(families["wmap_workload_gpus"]) == _gpu_series(views) == SAMPLE_GPU_SERIES
        assert "wmap_pod_workload_info" not in families
        # bounded by workloads: at most 1 info + 3 figures x the GPU resource names per workload
        names = {s.labels["resource"] for s in families["wmap_workload_gpus"]}
        assert len(families["wmap_workload_gpus"]) <= 3 * len(names) * len(views)


async def test_per_pod_series_are_one_per_distinct_pod_when_asked(tmp_path: Path) -> None:
    async for families, views in _scrape(tmp_path, pod_metrics=True):
        pods = {(p.namespace, p.name) for v in views for p in v.all_pods()}
        assert len(families["wmap_pod_workload_info"]) == len(pods) > 0
        assert len(families["wmap_workload_info"]) == SAMPLE_WORKLOADS
