"""Helpers of the Karta status and webhook tests on the real control plane."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from workload_map.app import create_app
from workload_map.config import KubeSettings, Settings
from tests.api.live import serving
from tests.cluster.crds import CrdSpec, minimal_crd

KARTAS = "/apis/run.ai/v1alpha1/kartas"


def widget_kind() -> tuple[str, str]:
    """A fresh API group (no CRD yet) and the Widget kind of it."""
    return f"w{secrets.token_hex(4)}.wmap.test", "Widget"


def widget_karta(name: str, group: str, *, running_phase: str = "Running") -> dict[str, Any]:
    """A minimal valid Karta for ``group/v1 Widget``: a root with a phase mapping only."""
    return {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": name},
            "spec": {"structureDefinition": {"rootComponent": {
                "name": "widget", "kind": {"group": group, "version": "v1", "kind": "Widget"},
                "statusDefinition": {"phaseDefinition": {"path": ".status.phase"},
                                     "statusMappings": {"running": [{"byPhase": running_phase}]}}}}}}


def widget_crd(group: str) -> dict[str, Any]:
    """The minimal CRD serving ``group/v1 Widget`` (namespaced, plural ``widgets``)."""
    return minimal_crd(CrdSpec(group, "v1", "Widget", "widgets"))


def conditions(karta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Condition type -> condition of a Karta object's status ({} without status)."""
    return {c["type"]: c for c in (karta.get("status") or {}).get("conditions") or []}


async def patch_karta(kube: httpx.AsyncClient, name: str, patch: dict[str, Any]) -> httpx.Response:
    """JSON merge patch of the Karta ``name`` (no resourceVersion: the status writer may write meanwhile)."""
    return await kube.patch(f"{KARTAS}/{name}", json=patch, headers={"Content-Type": "application/merge-patch+json"})


async def get_karta(kube: httpx.AsyncClient, name: str) -> dict[str, Any]:
    response = await kube.get(f"{KARTAS}/{name}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def poll(check: Callable[[], Any], timeout: float = 60.0, step: float = 0.2) -> Any:
    """Await ``check()`` until it returns something truthy (bounded); returns it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s (last value {value!r})")
        await asyncio.sleep(step)


async def karta_when(kube: httpx.AsyncClient, name: str, predicate: Callable[[dict[str, Any]], bool],
                     timeout: float = 60.0) -> dict[str, Any]:
    """The Karta ``name`` once ``predicate(karta)`` holds (polled, bounded)."""
    async def check() -> dict[str, Any] | None:
        karta = await get_karta(kube, name)
        return karta if predicate(karta) else None

    result: dict[str, Any] = await poll(check, timeout)
    return result


@contextlib.asynccontextmanager
async def wmap_server(cp: Any, tmp: Path, lease_namespace: str) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    """A server over the control plane (admin kubeconfig, status Lease in ``lease_namespace``);
    yields ``(app, client)`` once ``/readyz`` is 200."""
    settings = Settings(kube=KubeSettings(kubeconfig=str(cp.admin_kubeconfig), lease_namespace=lease_namespace),
                        state_dir=tmp)
    app = create_app(settings)
    async with serving(app, timeout=30) as host, httpx.AsyncClient(base_url=f"http://{host}", timeout=30) as client:
        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await poll(ready, 60)
        yield app, client
