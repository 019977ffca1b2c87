"""The ASGI application: ``create_app(settings, *, reader=None, registry=None)``.

Wiring only. Routes and handlers live in ``workload_map.api``; this module chooses the object
source and the definition store, and runs start-up and shutdown in the lifespan:

* a ``reader`` passed in (tests, embedding): served as is, definitions stored in
  ``settings.state_dir``; the caller owns the reader's lifecycle;
* ``settings.kube.snapshot`` paths: a ``SnapshotReader`` over those files, definitions in
  ``settings.state_dir``;
* a cluster configuration (explicit kubeconfig, ``$KUBECONFIG``, ``~/.kube/config`` or
  in-cluster): an ``InformerCache`` watching every definition's kinds, pods and Kartas;
  definitions stored as Karta custom resources (CRD installed only with
  ``settings.kube.install_karta_crd``);
* several contexts or kubeconfigs (``workload_map.kube.clusters``): one informer cache, Karta
  store, definition registry and materialized service per cluster, served together as a
  ``workload_map.service.fleet.Fleet`` (built by ``server.fleet.open_fleet``);
* nothing configured: the bundled sample snapshot (``settings.sample_dir``), logged.

The lifespan starts the service's background resolver (worker processes) and does not
wait for the caches to sync or the views to be resolved (``/livez`` answers at once;
``/readyz`` is 503 until both are done). Only a reader passed in that is already synced
(tests, embedding: a ``SnapshotReader``) is materialized before the lifespan yields
(bounded by ``READER_SETTLE_S``), so its first request sees views. At shutdown the
resolver task ends and every worker process is killed.

Callers (``settings.auth``): with ``none`` every request is the local caller (a warning is
logged when the server listens beyond loopback); with ``kubernetes`` the cluster client
checks tokens and permissions (``workload_map.kube.reviews.KubeReviews`` behind a cached
``workload_map.auth.access.KubernetesAccess``) and, with ``settings.auth.impersonate``, the Karta
store writes through an ``ImpersonatingClient``. Middleware, outermost first: admission
(requests per loop turn, health first), metrics,
CORS (only with ``--cors-origin``), body limit and read timeout, cross-site refusal,
load shedding of expensive requests, time budget, authentication, settle-after-definition-change,
stale-data header.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from pathlib import Path
from collections.abc import AsyncIterator
from functools import partial
from typing import Any, TypedDict, cast

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.auth import AuthMiddleware
from workload_map.api.connections import GuardedH11Protocol, guarded_protocol
from workload_map.api.crosssite import CrossSiteMiddleware, cors_middleware
from workload_map.api.load import AdmissionMiddleware, LoadSheddingMiddleware
from workload_map.api.errors import EXCEPTION_HANDLERS
from workload_map.api.metrics import Metrics
from workload_map.api.middleware import BodyLimitMiddleware, DeadlineMiddleware, MetricsMiddleware, StaleHeaderMiddleware
from workload_map.api.graphiql import GraphiQLPage, graphql_ide_page
from workload_map.api.routes import build_routes
from workload_map.api.runtime import Runtime
from workload_map.api.webhook import create_webhook_app
from workload_map.auth.access import Access, KubernetesAccess, OpenAccess
from workload_map.config import Settings
from workload_map.definitions.catalog import load_catalog, load_definition_dir
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import ServerError
from workload_map.kube.clusters import ClusterTarget, cluster_targets
from workload_map.kube.reader import Reader
from workload_map.kube.snapshot import SnapshotReader
from workload_map.gvk import KARTA_GVK
from workload_map.service import WorkloadService
from workload_map.service.feed import ChangeFeed
from workload_map.service.kartastatus import karta_status
from workload_map.service.fleet import Fleet
from workload_map.service.pool import usable_cores
from workload_map.service.registration import Registrar
from workload_map.service.stores import DefinitionStore, DirectoryStore

log = logging.getLogger(__name__)


AUTH_MODES = ("none", "kubernetes")
READER_SETTLE_S = 60.0
WRITE_SETTLE_S = 10.0


class SettleAfterDefinitionChange:
    """Read-your-writes for definition changes, for every front door at once.

    A request that changed the definition registry (REST or GraphQL registration,
    unregistration) has its response held until the service has re-resolved the
    workloads of the changed kinds (at most ``WRITE_SETTLE_S``), so the caller's next read
    sees them. Other requests pass straight through.
    """

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app, self.runtime = app, runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: hold a changing request's response start until the service has settled."""
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        generation = self.runtime.definitions_generation()

        async def settle_then_send(message: Message) -> None:
            service = self.runtime.service
            if (message["type"] == "http.response.start" and service is not None
                    and self.runtime.definitions_generation() != generation):
                await service.settled(WRITE_SETTLE_S)
            await send(message)

        await self.app(scope, receive, settle_then_send)


def _load_extra_definitions(registry: DefinitionRegistry, directory: Path) -> None:
    """Register the definition files of ``directory`` (origin ``file``); skip and log bad ones."""
    loaded, skipped = load_definition_dir(directory)
    for name, definition in loaded:
        registry.register(definition, origin="file", key=definition.name)
        log.info("loaded definition %s (%s) from %s", definition.name, definition.gvk, name)
    for message in skipped:
        log.warning("skipping definition file %s", message)


def create_app(settings: Settings, *, reader: Reader | None = None, registry: DefinitionRegistry | None = None,
               store: DefinitionStore | None = None, access: Access | None = None) -> Starlette:
    """Build the app (see module docstring for how the object source is chosen).

    Args:
        settings: configuration.
        reader: serve this reader instead of opening a source in the lifespan.
        registry: definitions (default: the catalog in ``settings.catalog_dir``).
        store: where registrations persist when ``reader`` is given (default: the state
            directory).
        access: the caller policy (default: from ``settings.auth``; required with a
            ``reader`` and ``auth.mode`` ``kubernetes``, as no cluster client is opened).

    Raises:
        DefinitionError: a built-in catalog definition is invalid.
        ValueError: an unknown ``auth.mode``, or ``kubernetes`` with a reader but no ``access``.
    """
    if settings.auth.mode not in AUTH_MODES:
        raise ValueError(f"auth mode must be one of {', '.join(AUTH_MODES)}, got {settings.auth.mode!r}")
    runtime = Runtime(settings, registry or DefinitionRegistry(load_catalog(settings.catalog_dir)))
    if settings.definitions_dir is not None:
        _load_extra_definitions(runtime.registry, settings.definitions_dir)
    runtime.metrics = Metrics(lambda: runtime)
    runtime.access = access if access is not None else (OpenAccess() if settings.auth.mode == "none" else None)
    if reader is not None:
        if runtime.access is None:
            raise ValueError("auth mode kubernetes over a given reader needs an access policy")
        watch = getattr(reader, "watch", None)
        runtime.attach(reader, store or DirectoryStore(settings.state_dir), watch=watch if callable(watch) else None)
        runtime.source, runtime.cluster = "reader", settings.kube.cluster_name or "local"
    warn_if_exposed(settings)
    graphiql = GraphiQLPage(graphql_ide_page(), settings.graphiql_assets_dir) if settings.graphiql else None
    if graphiql is not None:
        graphiql.log_source()
    routes = build_routes(runtime.metrics, max_subscriptions=settings.http.max_subscriptions,
                          allowed_origins=settings.http.cors_origins, graphiql=graphiql,
                          graphiql_enabled=settings.graphiql)
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AdmissionMiddleware),
                    Middleware(MetricsMiddleware, metrics=runtime.metrics, routes=routes),
                    *cors_middleware(settings.http.cors_origins),
                    Middleware(BodyLimitMiddleware, max_bytes=settings.http.max_body_bytes,
                               timeout_s=settings.http.body_timeout_s),
                    Middleware(CrossSiteMiddleware, allowed_origins=settings.http.cors_origins),
                    Middleware(LoadSheddingMiddleware, slots=settings.http.max_expensive,
                               queue=settings.http.expensive_queue, wait_s=settings.http.expensive_wait_s),
                    Middleware(DeadlineMiddleware, seconds=settings.http.request_timeout_s),
                    Middleware(AuthMiddleware, runtime=runtime),
                    Middleware(SettleAfterDefinitionChange, runtime=runtime),
                    Middleware(StaleHeaderMiddleware, runtime=runtime)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=partial(_lifespan, runtime),
    )
    app.state.runtime = runtime
    return app


def warn_if_exposed(settings: Settings) -> bool:
    """Log a warning (and return True) when ``--auth none`` listens beyond loopback."""
    if settings.auth.mode != "none" or settings.http.is_loopback:
        return False
    log.warning("authentication is off (--auth none) and the server listens on %s: anyone who can reach it "
                "sees every workload the server can read and may register definitions; use --auth kubernetes",
                settings.http.host)
    return True


async def _open_cluster(runtime: Runtime) -> object:
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
        registrar = Registrar(registry, KartaStore(client), watch=cache.watch)
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
        _load_extra_definitions(registry, settings.definitions_dir)
    return registry


async def _karta_crd_state(client: Any, install: bool) -> str:
    """``ensure_karta_crd`` bounded to 10 s; an unreachable cluster reports ``error``."""
    from workload_map.kube.kartas import ensure_karta_crd

    try:
        return str(await asyncio.wait_for(ensure_karta_crd(client, install=install), 10.0))
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


def _open_snapshot(runtime: Runtime) -> None:
    """Attach a ``SnapshotReader`` (user paths, else the bundled sample) and a directory store."""
    settings = runtime.settings
    paths = list(settings.kube.snapshot)
    if paths:
        runtime.source, runtime.cluster = f"snapshot {', '.join(paths)}", settings.kube.cluster_name or "snapshot"
    else:
        sample = settings.sample_dir
        paths = [str(sample)] if sample.exists() else []
        runtime.source, runtime.cluster = f"bundled sample {sample}", settings.kube.cluster_name or "sample"
        log.info("no cluster configured: serving the bundled sample snapshot in %s", sample)
        if not paths:
            log.warning("the bundled sample %s is missing: serving no objects", sample)
    runtime.attach(SnapshotReader.from_paths(*paths), DirectoryStore(settings.state_dir))


def has_cluster(settings: Settings) -> bool:
    """True when a cluster configuration is available (an explicit kubeconfig always counts)."""
    if settings.kube.kubeconfig:
        return True
    from workload_map.kube.client import has_cluster_config

    return has_cluster_config()


class UvicornLimits(TypedDict):
    """``uvicorn.Config`` keyword arguments for the connection guards (:func:`uvicorn_limits`)."""

    http: type[GuardedH11Protocol]
    timeout_keep_alive: int
    h11_max_incomplete_event_size: int


def uvicorn_limits(settings: Settings) -> UvicornLimits:
    """Uvicorn options for the connection guards of :mod:`workload_map.api.connections`.

    The guarded h11 protocol (header timeout ``settings.http.header_timeout_s`` seconds, at
    most ``settings.http.max_connections`` open connections), keep-alive 5 s, and 16 KiB of
    incomplete headers at most. The CLI reaches these through ``workload_map.app`` (it never
    imports ``workload_map.api``: the import contracts in pyproject.toml).

    Args:
        settings: the server settings; only ``settings.http`` is read.

    Returns:
        Keyword arguments for ``uvicorn.Config(app, ..., **uvicorn_limits(settings))``.
    """
    http = settings.http
    return {"http": guarded_protocol(header_timeout_s=http.header_timeout_s, max_connections=http.max_connections),
            "timeout_keep_alive": 5, "h11_max_incomplete_event_size": 16 * 1024}


@contextlib.asynccontextmanager
async def _lifespan(runtime: Runtime, app: Starlette) -> AsyncIterator[None]:
    caches: list[Any] = []
    if runtime.service is None:
        targets = cluster_targets(runtime.settings.kube.kubeconfigs, runtime.settings.kube.contexts)
        if not runtime.settings.kube.snapshot and targets:
            caches = await open_fleet(runtime, targets)
        elif not runtime.settings.kube.snapshot and has_cluster(runtime.settings):
            caches = [await _open_cluster(runtime)]
        elif runtime.access is None:
            raise RuntimeError("--auth kubernetes needs a cluster (it checks callers with the API server); "
                               "serve snapshots with --auth none")
        else:
            _open_snapshot(runtime)
    service = runtime.service
    assert service is not None and runtime.registrar is not None and runtime.reader is not None
    if not runtime.followers:
        runtime.followers = [(runtime.registrar, runtime.reader)]
        if not getattr(service, "cluster", True):
            service.cluster = runtime.cluster
    follows = []
    for registrar, reader in runtime.followers:
        for entry in registrar.registry.entries():
            registrar.watch_kinds(entry.definition.kinds())
        await registrar.load_stored()
        follows.append(asyncio.create_task(registrar.follow(reader), name="wmap-follow-kartas"))
    for cache in caches:
        await cache.start()
    await service.start()
    follows += [asyncio.create_task(run(), name="wmap-background") for run in runtime.background]
    if runtime.source == "reader" and runtime.reader.is_synced():
        await service.settled(READER_SETTLE_S)
    runtime.started = True
    if runtime.source != "reader":  # a reader passed in (tests, embedding): not our process to tune
        # Start-up objects (modules, catalog, GraphQL schema, cached objects) live as long as
        # the server: kept out of the collector, a full collection no longer walks them (94,000
        # objects over the sample: 70-110 ms with every thread stopped, a /livez stall; issue
        # 12). Garbage is collected first so none of it is kept for good.
        # https://docs.python.org/3/library/gc.html#gc.freeze
        gc.collect()
        gc.freeze()
    log.info("serving %s as cluster %r with %d definitions", runtime.source, runtime.cluster,
             len(list(runtime.registry.entries())))
    try:
        yield
    finally:
        runtime.started = False
        for follow in follows:
            follow.cancel()
        await asyncio.gather(*follows, return_exceptions=True)
        await service.stop()
        for cache in caches:
            await cache.stop()
        for close in runtime.closers:
            await close()


def webhook_app(app: Starlette) -> Starlette:
    """The admission webhook app (``workload_map.api.webhook``) sharing ``app``'s runtime."""
    return create_webhook_app(app.state.runtime)
