"""Per-workload series on ``/metrics`` over the JobSet fixture (1 JobSet "train", 3 pods of
4 nvidia.com/gpu; train-worker-1-0 is not bound to a node), checked against the views.

This module's app serves the per-pod series too (``pod_metrics=True``; off by default, see
``test_pod_series_are_opt_in``)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from workload_map.app import create_app
from workload_map.cli import main as cli_main
from workload_map.cli.live import serve_settings
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET

@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", pod_metrics=True)


WORKLOAD = {"namespace": "ml", "group": "jobset.x-k8s.io", "kind": "JobSet", "name": "train"}


async def series(client: httpx.AsyncClient) -> dict[str, list]:
    reply = await client.get("/metrics")
    assert reply.status_code == 200
    return {family.name: family.samples for family in text_string_to_metric_families(reply.text)}


async def test_workload_gpu_and_pod_series_match_the_view(client: httpx.AsyncClient) -> None:
    families = await series(client)
    (info,) = families["wmap_workload_info"]
    assert info.value == 1.0
    assert info.labels == {**WORKLOAD, "phase": "Initializing", "definition": "jobset-x-k8s-io-jobset-v1alpha2"}
    gpus = {s.labels["figure"]: s.value for s in families["wmap_workload_gpus"]}
    # spec 4 x (1 leader + 2 workers) = 12; pods 3 live pods x 4 = 12; allocated: 2 bound pods x 4 = 8
    assert gpus == {"requested_by_spec": 12.0, "requested_by_pods": 12.0, "allocated": 8.0}
    assert {s.labels["resource"] for s in families["wmap_workload_gpus"]} == {"nvidia.com/gpu"}
    assert all(s.labels | {"figure": "", "resource": ""} == {**WORKLOAD, "figure": "", "resource": ""}
               for s in families["wmap_workload_gpus"])
    pods = sorted((s.labels["pod"], s.labels["component"], s.labels["instance"], s.value)
                  for s in families["wmap_pod_workload_info"])
    assert pods == [("train-leader-0-0", "replicatedjob", "leader", 1.0),
                    ("train-worker-0-0", "replicatedjob", "worker", 1.0),
                    ("train-worker-1-0", "replicatedjob", "worker", 1.0)]
    assert {s.labels["workload"] for s in families["wmap_pod_workload_info"]} == {"train"}


async def test_the_view_and_the_series_agree(app: Starlette, client: httpx.AsyncClient) -> None:
    view = app.state.runtime.service.workload("ml", "jobset.x-k8s.io", "JobSet", "train")
    gpu = view.gpu.to_dict()
    families = await series(client)
    values = {s.labels["figure"]: s.value for s in families["wmap_workload_gpus"]}
    assert (values["requested_by_spec"], values["requested_by_pods"], values["allocated"]) == \
        (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"])
    assert len(families["wmap_pod_workload_info"]) == len(view.all_pods()) == 3


async def test_the_switch_turns_them_off(tmp_path: Path) -> None:
    app = create_app(Settings(state_dir=tmp_path / "s", workload_metrics=False), reader=SnapshotReader.from_paths(JOBSET))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        families = await series(client)
    assert "wmap_views_materialized" in families
    assert not {"wmap_workload_info", "wmap_workload_gpus", "wmap_pod_workload_info"} & set(families)


def test_flag_and_environment_set_the_switch() -> None:
    parser = cli_main.parser()
    assert serve_settings(parser.parse_args(["serve"]), {}).workload_metrics is True
    assert serve_settings(parser.parse_args(["serve"]), {"WMAP_WORKLOAD_METRICS": "false"}).workload_metrics is False
    assert serve_settings(parser.parse_args(["serve", "--workload-metrics"]),
                          {"WMAP_WORKLOAD_METRICS": "0"}).workload_metrics is True
    assert serve_settings(parser.parse_args(["serve", "--no-workload-metrics"]), {}).workload_metrics is False


def _prometheus_text(views: list) -> bytes:  # type: ignore[type-arg]
    """The families rendered by prometheus_client itself (the reference)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from workload_map.api.metrics import workload_metrics

    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            return workload_metrics(views)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    return generate_latest(registry)


async def test_the_kept_text_is_what_prometheus_client_renders(app: Starlette) -> None:
    from workload_map.api.workload_series import WorkloadSeries

    views = app.state.runtime.service.workloads()
    kept = WorkloadSeries()
    assert kept.text(views) == _prometheus_text(views)
    assert kept.renders == 1  # the one JobSet
    assert kept.text(views) == _prometheus_text(views) and kept.renders == 1  # unchanged: not rendered again
    assert kept.text([]).count(b"\n") == 6  # no workload left: the three HELP and TYPE lines


async def test_a_scrape_is_gzipped_when_asked(client: httpx.AsyncClient) -> None:
    import gzip

    plain = await client.get("/metrics", headers={"Accept-Encoding": "identity"})
    zipped = await client.get("/metrics", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert b"wmap_workload_info{" in plain.content and b"wmap_workload_info{" in zipped.content  # httpx decodes
    assert int(zipped.headers["content-length"]) < len(plain.content)
    assert gzip.decompress(gzip.compress(plain.content)) == plain.content


async def test_pod_series_are_opt_in(tmp_path: Path) -> None:
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=SnapshotReader.from_paths(JOBSET))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        families = await series(client)
    # the defaults: 1 info series and 3 GPU figures of nvidia.com/gpu for the one JobSet, no pod series
    assert (len(families["wmap_workload_info"]), len(families["wmap_workload_gpus"])) == (1, 3)
    assert "wmap_pod_workload_info" not in families


def test_flag_and_environment_set_the_pod_switch() -> None:
    parser = cli_main.parser()
    assert serve_settings(parser.parse_args(["serve"]), {}).pod_metrics is False
    assert serve_settings(parser.parse_args(["serve"]), {"WMAP_POD_METRICS": "true"}).pod_metrics is True
    assert serve_settings(parser.parse_args(["serve", "--no-pod-metrics"]),
                          {"WMAP_POD_METRICS": "1"}).pod_metrics is False
    assert serve_settings(parser.parse_args(["serve", "--pod-metrics"]), {}).pod_metrics is True
