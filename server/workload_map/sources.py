"""The object sources the app opens in its lifespan: one cluster, several clusters, extra definitions.

Split from ``workload_map.app`` (which wires the app and runs the lifespan): an informer
cache with its Karta store and writer for one cluster (``open_cluster``), one cache,
registry and service per cluster as a ``Fleet`` (``open_fleet``), the caller checks of
``--auth kubernetes`` and the definition files of ``settings.definitions_dir``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from workload_map.api.runtime import Runtime, limited
from workload_map.auth.access import KubernetesAccess
from workload_map.config import Settings
from workload_map.definitions.catalog import load_catalog, load_definition_dir
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import ServerError
from workload_map.gvk import KARTA_GVK
from workload_map.kube.clusters import ClusterTarget
from workload_map.logs import logger
from workload_map.materialization.feed import ChangeFeed
from workload_map.materialization.pool import usable_cores
from workload_map.registration.registrar import Registrar
from workload_map.service.fleet import Fleet
from workload_map.service.kartastatus import karta_status
from workload_map.service.workloads import WorkloadService

log = logger(__name__)


def load_extra_definitions(registry: DefinitionRegistry, directory: Path) -> None:
    """Register the definition files of ``directory`` (origin ``file``); skip and log bad ones."""
    loaded, skipped = load_definition_dir(directory)
    for name, definition in loaded:
        registry.register(definition, origin="file", key=definition.name)
        log.info("loaded definition %s (%s) from %s", definition.name, definition.gvk, name)
    for message in skipped:
        log.warning("skipping definition file %s", message)

async def open_cluster(runtime: Runtime) -> object:
    """Attach an ``InformerCache`` and a ``KartaStore``; returns the cache (not started)."""
    from workload_map.kube.cache import CacheOptions, InformerCache
    from workload_map.kube.client import connect
    from workload_map.kube.kartas import KartaStore, ensure_karta_crd
    from workload_map.kube.patches import ClusterWriter

    kube = runtime.settings.kube
    client = await connect(kube.kubeconfig, context=kube.context)
    cache = InformerCache(client, options=CacheOptions(namespaces=tuple(kube.namespaces),
                                                       stale_after=kube.stale_after_s), close_client=True)
    store_client = _store_client(runtime, client)
    runtime.attach(cache, KartaStore(store_client), watch=cache.watch)
    runtime.writer = ClusterWriter(store_client, cache.discovery)  # workload writes, impersonating like Karta writes
    runtime.source = f"cluster {client.host} ({client.source})"
    runtime.cluster = kube.cluster_name or kube.context or "default"
    runtime.karta_crd = await ensure_karta_crd(client, install=kube.install_karta_crd)
    cache.watch(KARTA_GVK)
    if kube.karta_status and runtime.registrar is not None:
        runtime.karta_status = karta_status(runtime.registrar, runtime.service, cache, client, runtime.background,
                                            namespace=kube.lease_namespace)
    return cache


async def open_fleet(runtime: Runtime, targets: list[ClusterTarget]) -> list[Any]:
    """Attach one cache, Karta store, registry and service per cluster as a ``Fleet``.

    Each cluster gets its own definition registry (the catalog, ``definitions_dir`` and that
    cluster's Karta objects: a Karta applies to the workloads of its own cluster) and
    ``max(1, workers // clusters)`` resolver processes. Karta registrations through the API
    go to the cluster named by their ``cluster`` argument, else to the first cluster. A cluster that cannot be reached at
    start is attached all the same: its informers retry and report the error.

    Returns:
        The caches (not started), in ``targets`` order.

    Raises:
        ClusterConfigError: a context's kubeconfig entry is unusable (nothing is contacted).
    """
    from workload_map.kube.cache import CacheOptions, InformerCache
    from workload_map.kube.client import connect
    from workload_map.kube.kartas import KartaStore
    from workload_map.kube.patches import ClusterWriter

    kube, resolver = runtime.settings.kube, runtime.settings.resolver
    feed, members, caches, crds = ChangeFeed(), {}, [], {}
    workers = max(1, (resolver.workers or usable_cores()) // len(targets))
    for index, target in enumerate(targets):
        client = await connect(target.kubeconfig, context=target.context)
        cache = InformerCache(client, options=CacheOptions(namespaces=tuple(kube.namespaces),
                                                           stale_after=kube.stale_after_s), close_client=True)
        registry = runtime.registry if index == 0 else _member_registry(runtime.settings)
        service = WorkloadService(registry, cache, policy=runtime.policy(), workers=workers,
                                  timeout_s=resolver.timeout_s, quarantine_after=resolver.quarantine_after,
                                  cluster=target.name, feed=feed)
        registrar = limited(Registrar(registry, KartaStore(client), watch=cache.watch, sandbox=service.sandbox),
                            runtime.settings)
        runtime.followers.append((registrar, cache))
        runtime.registrars[target.name] = registrar
        members[target.name] = (service, ClusterWriter(client, cache.discovery))
        crds[target.name] = await _karta_crd_state(client, kube.install_karta_crd)
        cache.watch(KARTA_GVK)
        caches.append(cache)
        if kube.karta_status:  # each cluster's Kartas get their status from that cluster's Lease holder
            runtime.karta_statuses[target.name] = karta_status(registrar, service, cache, client, runtime.background,
                                                               namespace=kube.lease_namespace)
    fleet = Fleet({name: m[0] for name, m in members.items()}, feed)
    fleet.writers = {name: m[1] for name, m in members.items()}
    runtime.attach_fleet(fleet, runtime.followers[0][0])
    runtime.karta_crds, runtime.karta_crd = crds, crds[targets[0].name]
    runtime.source = "clusters " + ", ".join(t.name for t in targets)
    runtime.cluster = targets[0].name
    return caches


def _member_registry(settings: Settings) -> DefinitionRegistry:
    """A further cluster's registry: the catalog plus ``definitions_dir``."""
    registry = DefinitionRegistry(load_catalog(settings.catalog_dir))
    if settings.definitions_dir is not None:
        load_extra_definitions(registry, settings.definitions_dir)
    return registry


async def _karta_crd_state(client: Any, install: bool) -> str:
    """``ensure_karta_crd`` bounded to 10 s; an unreachable cluster reports ``error``."""
    from workload_map.kube.kartas import ensure_karta_crd

    try:
        async with asyncio.timeout(10.0):
            return str(await ensure_karta_crd(client, install=install))
    except (TimeoutError, OSError, ServerError) as exc:
        log.warning("cannot check the Karta CRD of a cluster: %s", exc)
        return "error"


def _store_client(runtime: Runtime, client: Any) -> Any:
    """Set up caller checks for ``--auth kubernetes``; the client the Karta store writes with."""
    from workload_map.kube.client import KubeClient
    from workload_map.kube.reviews import ImpersonatingClient, KubeReviews

    auth = runtime.settings.auth
    if auth.mode != "kubernetes":
        return client
    if runtime.access is None:
        runtime.access = KubernetesAccess(KubeReviews(client, audiences=auth.audiences), ttl=auth.cache_ttl_s,
                                          negative_ttl=auth.negative_ttl_s, concurrency=auth.review_concurrency)
    if not auth.impersonate:
        return client
    impersonating = ImpersonatingClient(client)
    runtime.closers.append(impersonating.close)
    return cast(KubeClient, impersonating)

def has_cluster(settings: Settings) -> bool:
    """True when a cluster configuration is available (an explicit kubeconfig always counts)."""
    if settings.kube.kubeconfig:
        return True
    from workload_map.kube.client import has_cluster_config

    return has_cluster_config()
