"""The page over a real cluster (tests/cluster: etcd + kube-apiserver, no controllers):
``wmap serve --kubeconfig <admin> --stale-after 1`` in a process of its own.

Seed (tests/api/test_cluster_e2e.py create_seed) in a fresh namespace: JobSet ``train``
(leader x1, worker x2, 4 GPUs per pod, pods bound to node-a): 12 GPUs by spec. Then a bare
Pod ``solo`` asking 2 GPUs is created through the API server: a new top-level workload the
page lists without a reload. Last the API server is stopped: after one second the
workload page says the data is stale (``namespace`` starts it again for later tests).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.abuse.server import REPO, Served, _wait_ready, free_port
from tests.api.test_cluster_e2e import create_seed
from tests.ui.conftest import shot
from tests.ui.test_pages import _expect

pytestmark = pytest.mark.cluster


async def _seed(plane: Any, namespace: str) -> None:
    async with plane.async_client() as kube:
        await create_seed(kube, namespace)


def _bare_pod(plane: Any, namespace: str) -> None:
    container = {"name": "main", "image": "x:1", "resources": {"requests": {"nvidia.com/gpu": "2"},
                                                               "limits": {"nvidia.com/gpu": "2"}}}
    with plane.client() as kube:
        made = kube.post(f"/api/v1/namespaces/{namespace}/pods", json={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"},
            "spec": {"nodeName": "node-b", "restartPolicy": "Never", "containers": [container]}})
        assert made.status_code == 201, made.text


def _until_stale(base: str, limit_s: float = 60.0) -> None:
    """Poll the server (every 0.2 s, at most ``limit_s``) until it reports its cluster stale."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        answer = httpx.post(base + "/graphql", json={"query": "{ clusters { stale } }"}, timeout=10).json()
        if all(c["stale"] for c in answer["data"]["clusters"]):
            return
        time.sleep(0.2)
    raise AssertionError(f"the server did not report the cluster stale within {limit_s:g} s")


@pytest.fixture
def cluster_server(k8s_control_plane: Any, namespace: str, tmp_path: Path) -> Iterator[Served]:
    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API holds this thread's event loop
        thread.submit(asyncio.run, _seed(k8s_control_plane, namespace)).result()
    port, log = free_port(), tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_")}
    command = [sys.executable, "-m", "workload_map", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--kubeconfig", str(k8s_control_plane.admin_kubeconfig), "--stale-after", "1",
               "--resolver-workers", "1", "--state-dir", str(tmp_path / "state")]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    served = Served(f"http://127.0.0.1:{port}", port, tmp_path / "state", process, log)
    try:
        _wait_ready(served)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def test_live_cluster_list_updates_and_stale_view(k8s_control_plane: Any, namespace: str,
                                                  cluster_server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(cluster_server.base + f"/ui/#/workloads?namespace={namespace}")
    expect(page.locator("#count")).to_have_text("1–1 of 1")
    expect(page.locator("tr[data-name=train] td").nth(6)).to_have_text("12")  # 3 pods x 4 GPUs by spec
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("() => { window.__notReloaded = true; }")
    _bare_pod(k8s_control_plane, namespace)
    expect(page.locator("#count")).to_have_text("1–2 of 2")  # the new Pod, without a reload
    expect(page.locator("tr[data-name=solo] td").nth(6)).to_have_text("2")
    assert page.evaluate("() => window.__notReloaded === true")
    shot(page, "cluster-live")
    page.get_by_role("link", name="train").click()
    expect(page.locator("#tile-gpus .tile-value")).to_have_text("12")
    k8s_control_plane.stop_apiserver()
    _until_stale(cluster_server.base)
    page.reload()  # the page asks again; the server answers from its cache, flagged stale
    expect(page.locator("#stale")).to_contain_text("Stale: the cache of cluster")
    expect(page.locator("#tile-gpus .tile-value")).to_have_text("12")  # still served
    shot(page, "cluster-stale")
