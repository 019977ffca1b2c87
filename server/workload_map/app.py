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
  ``workload_map.service.fleet.Fleet`` (built by ``workload_map.sources.open_fleet``);
* nothing configured: the bundled sample snapshot (``settings.sample_dir``), logged.

The lifespan starts the service's background resolver (worker processes) and does not
wait for the caches to sync or the views to be resolved (``/livez`` answers at once;
``/readyz`` is 503 until both are done). Snapshot files are read in a thread after the
lifespan has yielded (``workload_map.kube.snapshotload``), so the server answers while a
big dump is parsed; a path that does not exist still fails the start-up, a file found
unreadable later is reported by ``/readyz`` and ``runtime.on_startup_failure``. Only a reader passed in that is already synced
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
load shedding of expensive requests, time budget, authentication, stale-data header.
Read-your-writes after a definition change is the registrar's (``Registrar.settle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from functools import partial
from typing import Any, TypedDict

from starlette.applications import Starlette
from starlette.middleware import Middleware

from workload_map.api.auth import AuthMiddleware
from workload_map.api.connections import GuardedH11Protocol, guarded_protocol
from workload_map.api.crosssite import CrossSiteMiddleware, cors_middleware
from workload_map.api.admission import AdmissionMiddleware
from workload_map.api.body_limit import BodyLimitMiddleware
from workload_map.api.deadline import DeadlineMiddleware
from workload_map.api.request_metrics import MetricsMiddleware
from workload_map.api.shedding import LoadSheddingMiddleware
from workload_map.api.stale_header import StaleHeaderMiddleware
from workload_map.api.errors import EXCEPTION_HANDLERS
from workload_map.api.metrics import Metrics
from workload_map.api.graphiql import GraphiQLPage, graphql_ide_page
from workload_map.api.routes import build_routes
from workload_map.api.runtime import Runtime
from workload_map.api.webhook import create_webhook_app
from workload_map.auth.access import Access, OpenAccess
from workload_map.config import Settings
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import ServerError
from workload_map.kube.clusters import cluster_targets
from workload_map.kube.reader import Reader
from workload_map.kube.snapshotload import check_paths, load_snapshot
from workload_map.logs import logger
from workload_map.materialization.pool import boot_fork_server
from workload_map.registration.stores import DefinitionStore, DirectoryStore
from workload_map.service.reads import WorkloadReads
from workload_map.service.workloads import WorkloadService
from workload_map.sources import has_cluster, load_extra_definitions, open_cluster, open_fleet

__all__ = ["create_app", "has_cluster", "uvicorn_limits", "warn_if_exposed"]

log = logger(__name__)


AUTH_MODES = ("none", "kubernetes")
READER_SETTLE_S = 60.0


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
        load_extra_definitions(runtime.registry, settings.definitions_dir)
    runtime.metrics = Metrics(lambda: runtime)
    runtime.access = access if access is not None else (OpenAccess() if settings.auth.mode == "none" else None)
    if reader is not None:
        if runtime.access is None:
            raise ValueError("auth mode kubernetes over a given reader needs an access policy")
        from workload_map.kube.cache import InformerCache  # kubernetes_asyncio only once there is a cache

        watch = reader.watch if isinstance(reader, InformerCache) else None  # a snapshot watches nothing
        runtime.attach(reader, store or DirectoryStore(settings.state_dir), watch=watch)
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
                    Middleware(CrossSiteMiddleware, allowed_origins=settings.http.cors_origins,
                               allowed_hosts=(*settings.http.allowed_hosts, settings.http.host)),
                    Middleware(LoadSheddingMiddleware, slots=settings.http.max_expensive,
                               queue=settings.http.expensive_queue, wait_s=settings.http.expensive_wait_s),
                    Middleware(DeadlineMiddleware, seconds=settings.http.request_timeout_s),
                    Middleware(AuthMiddleware, runtime=runtime),
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


def _snapshot_paths(runtime: Runtime) -> list[str]:
    """The snapshot paths to serve (user paths, else the bundled sample); sets the source names.

    Raises:
        SnapshotError: a given path does not exist.
    """
    settings = runtime.settings
    paths = list(settings.kube.snapshot)
    if paths:
        check_paths(paths)
        runtime.source, runtime.cluster = f"snapshot {', '.join(paths)}", settings.kube.cluster_name or "snapshot"
        return paths
    sample = settings.sample_dir
    runtime.source, runtime.cluster = f"bundled sample {sample}", settings.kube.cluster_name or "sample"
    log.info("no cluster configured: serving the bundled sample snapshot in %s", sample)
    if not sample.exists():
        log.warning("the bundled sample %s is missing: serving no objects", sample)
        return []
    return [str(sample)]


async def _serve_snapshot(runtime: Runtime, paths: list[str]) -> list[asyncio.Task[None]]:
    """Read the snapshot off the event loop, attach it with a directory store, then start.

    A snapshot that cannot be read is logged, kept in ``runtime.startup_error`` (``/readyz``
    shows it) and handed to ``runtime.on_startup_failure``; so is any other exception of the
    load (a defect, logged with its traceback), which would otherwise end this task
    unseen and leave ``/readyz`` at "startup in progress" for good.
    """
    try:
        reader, _ = await asyncio.gather(load_snapshot(paths), asyncio.to_thread(_boot_fork_server))
    except Exception as exc:
        runtime.startup_error = f"{type(exc).__name__}: {exc}"
        log.error("cannot serve the snapshot: %s", runtime.startup_error,
                  exc_info=None if isinstance(exc, ServerError) else exc)
        if runtime.on_startup_failure is not None:
            runtime.on_startup_failure(runtime.startup_error)
        return []
    runtime.attach(reader, DirectoryStore(runtime.settings.state_dir))
    return await _start(runtime, [])


def _boot_fork_server() -> None:
    """The resolver workers' fork server booted while the snapshot loads (a failure: the pool reports it)."""
    try:
        boot_fork_server()
    except OSError as exc:
        log.warning("the resolver fork server could not be started early (%s): the pool tries again", exc)


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
    loading: asyncio.Task[list[asyncio.Task[None]]] | None = None
    if runtime.service is None:
        targets = cluster_targets(runtime.settings.kube.kubeconfigs, runtime.settings.kube.contexts)
        if not runtime.settings.kube.snapshot and targets:
            caches = await open_fleet(runtime, targets)
        elif not runtime.settings.kube.snapshot and has_cluster(runtime.settings):
            caches = [await open_cluster(runtime)]
        elif runtime.access is None:
            raise RuntimeError("--auth kubernetes needs a cluster (it checks callers with the API server); "
                               "serve snapshots with --auth none")
        else:  # served at once: the files are read in a thread while /livez answers
            loading = asyncio.create_task(_serve_snapshot(runtime, _snapshot_paths(runtime)),
                                          name="wmap-load-snapshot")
    follows = await _start(runtime, caches) if loading is None else []
    try:
        yield
    finally:
        runtime.started = False
        if loading is not None:
            loading.cancel()
            done = (await asyncio.gather(loading, return_exceptions=True))[0]
            follows = done if isinstance(done, list) else []
        await _cancel_all(follows)
        if runtime.service is not None:
            await runtime.service.stop()
        for cache in caches:
            await cache.stop()
        for close in runtime.closers:
            await close()


FOLLOW_STOP_S = 10.0
"""Seconds the lifespan waits for its cancelled background tasks before it stops the rest."""


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait for them, at most :data:`FOLLOW_STOP_S` seconds.

    A task that does not end (one that lost its cancellation, as a loop around Python 3.11's
    ``asyncio.wait_for`` did) is logged by name and left behind: the service, the caches
    and the clients still stop, so a server told to stop does. It is also unregistered from
    the loop's tasks (``asyncio.tasks._unregister_task``, the hook asyncio exports for task
    implementations): ``asyncio.run`` cancels every registered task once more as it closes
    the loop and waits for them without a limit, so a task that swallows every cancellation
    kept the process alive after "Application shutdown complete" until a second signal.
    """
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    done, stuck = await asyncio.wait(tasks, timeout=FOLLOW_STOP_S)
    for task in done:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.warning("background task %s failed while stopping: %r", task.get_name(), error)
    for task in stuck:
        log.error("background task %s did not stop within %g s of its cancellation; stopping without it",
                  task.get_name(), FOLLOW_STOP_S)
        asyncio.tasks._unregister_task(task)


async def _start(runtime: Runtime, caches: list[Any]) -> list[asyncio.Task[None]]:
    """Follow the stored definitions, start the caches and the service; the follow tasks."""
    service = runtime.service
    assert service is not None and runtime.registrar is not None and runtime.reader is not None
    if not runtime.followers:
        runtime.followers = [(runtime.registrar, runtime.reader)]
        if isinstance(service, WorkloadService) and not service.cluster:  # one cluster: named after the runtime's
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
        follows.append(asyncio.create_task(freeze_when_settled(service), name="wmap-freeze-views"))
    log.info("serving %s as cluster %r with %d definitions", runtime.source, runtime.cluster,
             len(list(runtime.registry.entries())))
    return follows


FREEZE_EVERY_VIEWS = 2000
"""During the cold pass, what is alive is kept out of the collector every this many new views."""


async def freeze_when_settled(service: WorkloadReads, *, every: int = FREEZE_EVERY_VIEWS, poll_s: float = 0.5) -> None:
    """Keep the views of the cold pass out of the collector: as they come, and once settled.

    The views of the cold pass are made after start-up's ``gc.freeze()`` and live until
    their workload changes. Left in the collector's oldest generation, every full collection
    walked them all with every thread stopped: with 20,000 generated workloads (2.1 million
    tracked objects) a GraphQL page that ran into one took 2.5 s instead of 60 ms, and
    ``/livez`` waited as long; during the cold pass the same collections ran again and again
    as the views grew. So every ``every`` views stored (progress read each ``poll_s``
    seconds) and once the pass is over (settled, or ready under churn), the young
    generations are collected (cheap) and what is alive is frozen (``gc.freeze``: O(1)); a
    full collection here would be that very stall. Views replaced later are freed by their reference counts (a view holds no cycle);
    what is made after the cold pass is collected as usual.
    https://docs.python.org/3/library/gc.html#gc.freeze
    """
    frozen_at = 0
    while not (await service.settled(poll_s) or service.is_ready()):  # ready: every workload has its view
        resolved, _known = service.progress()
        if resolved - frozen_at >= every:
            gc.collect(1)
            gc.freeze()
            frozen_at = resolved
    gc.collect(1)
    gc.freeze()


def webhook_app(app: Starlette) -> Starlette:
    """The admission webhook app (``workload_map.api.webhook``) sharing ``app``'s runtime."""
    return create_webhook_app(app.state.runtime)
