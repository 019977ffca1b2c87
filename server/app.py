"""The ASGI application: ``create_app(settings, *, reader=None, registry=None)``.

Wiring only. Routes and handlers live in ``server.api``; this module chooses the object
source and the definition store, and runs start-up and shutdown in the lifespan:

* a ``reader`` passed in (tests, embedding): served as is, definitions stored in
  ``settings.state_dir``; the caller owns the reader's lifecycle;
* ``settings.kube.snapshot`` paths: a ``SnapshotReader`` over those files, definitions in
  ``settings.state_dir``;
* a cluster configuration (explicit kubeconfig, ``$KUBECONFIG``, ``~/.kube/config`` or
  in-cluster): an ``InformerCache`` watching every definition's kinds, pods and Kartas;
  definitions stored as Karta custom resources (CRD installed only with
  ``settings.kube.install_karta_crd``);
* nothing configured: the bundled sample snapshot (``settings.sample_dir``), logged.

The lifespan does not wait for the caches to sync (``/livez`` answers at once;
``/readyz`` is 503 until they have).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from functools import partial

from starlette.applications import Starlette
from starlette.middleware import Middleware

from server.api.errors import EXCEPTION_HANDLERS
from server.api.metrics import Metrics
from server.api.middleware import BodyLimitMiddleware, MetricsMiddleware
from server.api.routes import build_routes
from server.api.runtime import Runtime
from server.config import Settings
from server.definitions.catalog import load_catalog
from server.definitions.registry import DefinitionRegistry
from server.kube.reader import Reader
from server.kube.snapshot import SnapshotReader
from server.state import KARTA_GVK, DefinitionStore, DirectoryStore

log = logging.getLogger(__name__)


def create_app(settings: Settings, *, reader: Reader | None = None, registry: DefinitionRegistry | None = None,
               store: DefinitionStore | None = None) -> Starlette:
    """Build the app (see module docstring for how the object source is chosen).

    Args:
        settings: configuration.
        reader: serve this reader instead of opening a source in the lifespan.
        registry: definitions (default: the catalog in ``settings.catalog_dir``).
        store: where registrations persist when ``reader`` is given (default: the state
            directory).

    Raises:
        DefinitionError: a built-in catalog definition is invalid.
    """
    runtime = Runtime(settings, registry or DefinitionRegistry(load_catalog(settings.catalog_dir)))
    runtime.metrics = Metrics(lambda: runtime)
    if reader is not None:
        watch = getattr(reader, "watch", None)
        runtime.attach(reader, store or DirectoryStore(settings.state_dir), watch=watch if callable(watch) else None)
        runtime.source, runtime.cluster = "reader", settings.kube.cluster_name or "local"
    routes = build_routes(runtime.metrics)
    app = Starlette(
        routes=routes,
        middleware=[Middleware(MetricsMiddleware, metrics=runtime.metrics, routes=routes),
                    Middleware(BodyLimitMiddleware, max_bytes=settings.http.max_body_bytes)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=partial(_lifespan, runtime),
    )
    app.state.runtime = runtime
    return app


async def _open_cluster(runtime: Runtime) -> object:
    """Attach an ``InformerCache`` and a ``KartaStore``; returns the cache (not started)."""
    from server.kube.cache import CacheOptions, InformerCache
    from server.kube.client import connect
    from server.kube.kartas import KartaStore, ensure_karta_crd

    kube = runtime.settings.kube
    client = await connect(kube.kubeconfig, context=kube.context)
    cache = InformerCache(client, options=CacheOptions(namespaces=tuple(kube.namespaces)), close_client=True)
    runtime.attach(cache, KartaStore(client), watch=cache.watch)
    runtime.source = f"cluster {client.host} ({client.source})"
    runtime.cluster = kube.cluster_name or kube.context or "default"
    runtime.karta_crd = await ensure_karta_crd(client, install=kube.install_karta_crd)
    cache.watch(KARTA_GVK)
    return cache


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
    from server.kube.client import has_cluster_config

    return has_cluster_config()


@contextlib.asynccontextmanager
async def _lifespan(runtime: Runtime, app: Starlette) -> AsyncIterator[None]:
    cache = None
    if runtime.service is None:
        if not runtime.settings.kube.snapshot and has_cluster(runtime.settings):
            cache = await _open_cluster(runtime)
        else:
            _open_snapshot(runtime)
    registrar = runtime.registrar
    assert registrar is not None and runtime.reader is not None
    for entry in runtime.registry.entries():
        registrar.watch_kinds(entry.definition.kinds())
    await registrar.load_stored()
    follow = asyncio.create_task(registrar.follow(runtime.reader), name="wmap-follow-kartas")
    if cache is not None:
        await cache.start()  # type: ignore[attr-defined]
    runtime.started = True
    log.info("serving %s as cluster %r with %d definitions", runtime.source, runtime.cluster,
             len(list(runtime.registry.entries())))
    try:
        yield
    finally:
        runtime.started = False
        follow.cancel()
        await asyncio.gather(follow, return_exceptions=True)
        if cache is not None:
            await cache.stop()  # type: ignore[attr-defined]
