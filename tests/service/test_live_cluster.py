"""Live path on the real test control plane: a pod status change reaches the materialized
view and a change-feed subscriber, through informers, the dirty set and the worker pool."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest


from workload_map.definitions import Phase
from tests.api.test_cluster_e2e import live_app, wait_until_async

pytestmark = pytest.mark.cluster

GPU = "nvidia.com/gpu"


def _pod(name: str) -> dict[str, Any]:
    """A bare pod (no owner: a top-level workload of the catalog's Pod definition), bound to a node
    (no scheduler runs), asking for 2 GPUs."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "main", "image": "trainer:1", "resources": {
                "requests": {GPU: "2"}, "limits": {GPU: "2"}}}]}}


async def test_a_pod_status_change_reaches_the_view_and_the_feed(k8s_control_plane: Any, namespace: str,
                                                                 tmp_path: Path) -> None:
    async with k8s_control_plane.async_client() as kube, live_app(k8s_control_plane, tmp_path) as (app, client):
        app_service = app.state.runtime.service
        subscriber = app_service.feed.subscribe(namespace=namespace)
        created = await kube.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("p1"))
        assert created.status_code == 201, created.text

        async def has_view() -> bool:
            return app_service.store.find("", "Pod", namespace, "p1") is not None

        await wait_until_async(has_view, 30)
        first = await asyncio.wait_for(subscriber.get(), 5)
        assert first.type == "added" and first.name == "p1"
        current = (await kube.get(f"/api/v1/namespaces/{namespace}/pods/p1")).json()
        current["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        assert (await kube.put(f"/api/v1/namespaces/{namespace}/pods/p1/status", json=current)).status_code == 200
        change = await asyncio.wait_for(_until_phase(subscriber, Phase.RUNNING), 30)
        assert change.previous_phase is not Phase.RUNNING and change.previous is not None
        view = app_service.store.find("", "Pod", namespace, "p1").view
        assert view.phase is Phase.RUNNING
        # 1 pod x 2 GPUs, bound to gpu-node-1 and not terminated: requested 2, allocated 2
        assert view.gpu.pods == {GPU: Decimal(2)} and view.gpu.allocated == {GPU: Decimal(2)}
        phase = (await client.get(f"/api/v1/namespaces/{namespace}/workloads/core/Pod/p1/phase")).json()
        assert phase["phase"] == "Running"
        subscriber.close()


async def _until_phase(subscriber: Any, phase: Phase) -> Any:
    while True:
        change = await subscriber.get()
        if change.phase is phase:
            return change
