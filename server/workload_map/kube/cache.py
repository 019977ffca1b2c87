"""``InformerCache``: live informers for the watched GVKs behind the ``Reader`` protocol.

The server calls ``watch(gvk)`` for every kind its definitions need (root kinds, child
kinds, additionalChildKinds, ``v1 Pod``, ``run.ai/v1alpha1 Karta``); each watched GVK is
resolved through ``Discovery`` and gets one ``Reflector`` (or one per allowed namespace
when a namespace allow-list is configured and the kind is namespaced). All reflectors feed
one ``ObjectGraph`` (this class inherits its read methods), so owner walks cross types.

Lifecycle: ``await start()`` (starts the CRD reflector, resolves and starts every watched
GVK, starts a recheck loop), ``await stop()`` (cancels everything; closes the client only
when the cache created it, see ``from_config``). ``watch``/``unwatch`` are idempotent and
may be called before or after ``start``.

CRDs: a reflector on ``customresourcedefinitions`` notifies the cache when a CRD appears,
changes or goes: a kind whose CRD appears later starts being watched, one whose CRD is
deleted is dropped (objects deleted with events, state back to ``crd_missing``). When the
credentials may not watch CRDs, missing and failed kinds are re-resolved every
``recheck_interval`` seconds instead (the negative discovery TTL).

Versions: of several watched versions of one kind only one is listed and watched
(``workload_map.kube.versions``: highest priority among the served ones).

Readiness: ``is_synced()`` is true once every watched GVK has listed once or settled as
``crd_missing``/``forbidden`` (reported by ``states()``, not blocking). A GVK whose
list/watch has failed for longer than ``stale_after`` seconds reports ``stale``
(``workload_map.kube.freshness`` sums that up per cluster).

Recovery (``workload_map.kube.recovery``): while a reflector fails, ``GET /readyz`` every
``probe_interval`` s; the first answer after a failed probe wakes every failing reflector.
Model: kubernetes-sigs/controller-runtime ``pkg/cache/informer_cache.go``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping

from msgspec import Struct, field
from msgspec.structs import replace

from workload_map.gvk import GVK
from workload_map.kube.api import KubeApi, ResourceClient
from workload_map.kube.client import KubeClient, connect
from workload_map.kube.discovery import CRD_GVK, CRD_PLURAL, CrdIndex, Discovery, ResourceInfo
from workload_map.kube.errors import KubeApiError
from workload_map.kube.graph import DEFAULT_QUEUE_SIZE, GraphSink, ObjectGraph
from workload_map.kube.freshness import FreshnessMemo, aggregate
from workload_map.kube.reader import Freshness, InformerState, InformerStatus, Reader
from workload_map.kube.listing import ListWatch
from workload_map.kube.recovery import Probe, Recovery, readyz_probe
from workload_map.kube.reflector import Reflector, ReflectorOptions
from workload_map.kube.versions import elect
from workload_map.logs import logger

log = logger(__name__)

SourceFactory = Callable[[ResourceInfo, "str | None"], ListWatch]
"""Builds the list/watch calls of one resource in one namespace (``None``: all)."""




class CacheOptions(Struct, frozen=True):
    """Cache settings.

    Attributes:
        namespaces: namespace allow-list; empty means all namespaces.
        reflector: reflector tunables.
        watch_crds: watch CRDs to follow kinds appearing and disappearing.
        full_objects: keep whole objects (minus managedFields) instead of trimming.
        recheck_interval: seconds between re-resolutions of missing or failed kinds.
        stale_after: seconds a list/watch may fail before its data is flagged stale.
        probe_interval: seconds between API server probes while a reflector is failing.
        queue_size: capacity of each ``subscribe()`` queue (see ``ObjectGraph``).
    """

    namespaces: tuple[str, ...] = ()
    reflector: ReflectorOptions = field(default_factory=ReflectorOptions)
    watch_crds: bool = True
    full_objects: bool = False
    recheck_interval: float = 60.0
    stale_after: float = 30.0
    probe_interval: float = 0.5
    queue_size: int = DEFAULT_QUEUE_SIZE


class _Informer(Struct, eq=False):
    """Book-keeping of one watched GVK."""

    gvk: GVK
    info: ResourceInfo | None = None
    reflectors: dict[str | None, Reflector] = field(default_factory=dict)
    state: InformerState = "syncing"
    error: str = ""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    elected: GVK | None = None
    """The other version of the kind watched instead (``workload_map.kube.versions``)."""


class InformerCache(ObjectGraph, Reader):
    """Live ``Reader``: one reflector per watched GVK (and allowed namespace).

    Args:
        client: the API client (used unless ``discovery`` and ``sources`` are given).
        options: see ``CacheOptions``.
        discovery: GVK resolution (default: ``Discovery`` over ``client``).
        sources: list/watch factory (default: ``ResourceClient`` over ``client``).
        close_client: close ``client`` in ``stop()``.
        probe: "does the API server answer" check (default: ``GET /readyz`` over ``client``;
            ``None`` without a client: failing reflectors then wait their backoff).
    """

    def __init__(
        self, client: KubeClient | None = None, *, options: CacheOptions | None = None,
        discovery: Discovery | None = None, sources: SourceFactory | None = None,
        close_client: bool = False, probe: Probe | None = None,
    ) -> None:
        self.options = options or CacheOptions()
        super().__init__(full=self.options.full_objects, queue_size=self.options.queue_size)
        if discovery is None or sources is None:
            if client is None:
                raise ValueError("InformerCache needs a client, or both discovery and sources")
            api = KubeApi(client)
            discovery = discovery or Discovery(api)
            sources = sources or _resource_clients(api)
        self._client, self._close_client = client, close_client
        probe = probe or (readyz_probe(KubeApi(client)) if client is not None else None)
        self._recovery = Recovery(probe, self.options.probe_interval, self._failing) if probe is not None else None
        self.discovery: Discovery = discovery
        self._sources: SourceFactory = sources
        self.discovery.crds.add_listener(self._on_crd_change)
        self._informers: dict[GVK, _Informer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._crd_reflector: Reflector | None = None
        self._rng = random.Random()
        self._started = False
        self._status_version = 0  # what freshness() reads changed (FreshnessMemo)
        self._freshness = FreshnessMemo()

    @classmethod
    async def from_config(
        cls, kubeconfig: str | None = None, *, context: str | None = None, options: CacheOptions | None = None
    ) -> InformerCache:
        """A cache over ``connect(kubeconfig, context=...)``; ``stop()`` closes the client.

        Raises:
            ClusterConfigError: no usable cluster configuration.
        """
        return cls(await connect(kubeconfig, context=context), options=options, close_client=True)

    # lifecycle

    async def start(self) -> None:
        """Start CRD tracking, every watched GVK and the recheck loop (idempotent)."""
        if self._started:
            return
        self._started = True
        if self.options.watch_crds:
            crd_info = ResourceInfo(CRD_GVK, CRD_PLURAL, False)
            self._crd_reflector = self._reflector(crd_info, None, self.discovery.crds)
            self._crd_reflector.start()
        for gvk in list(self._informers):
            self._spawn(self._reconcile(gvk))
        self._spawn(self._recheck_loop())
        if self._recovery is not None:
            self._spawn(self._recovery.run())

    async def stop(self) -> None:
        """Stop every reflector and task; close the client if owned (idempotent)."""
        self._started = False
        tasks, self._tasks = list(self._tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        reflectors = [r for inf in self._informers.values() for r in inf.reflectors.values()]
        if self._crd_reflector is not None:
            reflectors.append(self._crd_reflector)
            self._crd_reflector = None
        await asyncio.gather(*(r.stop() for r in reflectors))
        for inf in self._informers.values():
            inf.reflectors.clear()
            inf.info, inf.state = None, "syncing"
        self._status_changed()
        if self._client is not None and self._close_client:
            await self._client.close()

    def watch(self, gvk: GVK) -> None:
        """Cache objects of ``gvk`` from now on (idempotent)."""
        if gvk in self._informers:
            return
        self._informers[gvk] = _Informer(gvk)
        self._status_changed()
        self.store(gvk)
        self._reconcile_kind(gvk)

    def unwatch(self, gvk: GVK) -> None:
        """Stop caching ``gvk`` and drop its objects (with DELETED events; idempotent)."""
        inf = self._informers.pop(gvk, None)
        if inf is None:
            return
        self._status_changed()
        for reflector in inf.reflectors.values():
            reflector.cancel()  # synchronous: no event reaches the graph after this line
            self._spawn(reflector.stop())
        inf.reflectors.clear()
        self.clear(gvk, drop=True)
        self._reconcile_kind(gvk)

    def watched(self) -> list[GVK]:
        """The watched GVKs, sorted."""
        return sorted(self._informers)

    # status

    def states(self) -> dict[GVK, InformerStatus]:
        """``InformerStatus`` of every watched GVK."""
        return {gvk: self._status(inf) for gvk, inf in sorted(self._informers.items())}

    def freshness(self) -> Freshness:
        """``freshness(self.states())``, summed up again only after a status changed (``FreshnessMemo``)."""
        return self._freshness.read(self._status_version, self.states, self._contact_reflectors)

    def _status_changed(self) -> None:
        self._status_version += 1

    def _contact_reflectors(self, states: Mapping[GVK, InformerStatus]) -> list[Reflector] | None:
        """The reflectors whose ``last_success`` the summary of ``states`` reads.

        Those of every kind neither ``crd_missing`` nor ``forbidden`` (``freshness``'s
        contacts); None when such a kind has no reflector (its status has no last success).
        """
        found: list[Reflector] = []
        for gvk, status in states.items():
            if status.state in ("crd_missing", "forbidden"):
                continue
            inf = self._informers[gvk]
            reflectors = (self._elected(inf) or inf).reflectors
            if not reflectors:
                return None
            found.extend(reflectors.values())
        return found

    def state(self, gvk: GVK) -> InformerStatus:
        """See ``Reader.state``."""
        inf = self._informers.get(gvk)
        return self._status(inf) if inf is not None else InformerStatus(gvk, "not_watched")

    def is_synced(self) -> bool:
        """See ``Reader.is_synced``."""
        return all(status.is_settled for status in self.states().values())

    async def wait_synced(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``is_synced()``; return its final value."""
        deadline = time.monotonic() + timeout
        while not self.is_synced() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        return self.is_synced()

    def crd_status(self) -> InformerStatus | None:
        """Status of the CRD reflector (``None`` when CRDs are not watched)."""
        r = self._crd_reflector
        return aggregate(CRD_GVK, [r], len(self.discovery.crds), "crd") if r is not None else None

    def _elected(self, inf: _Informer) -> _Informer | None:
        """The informer whose status ``inf`` reports: the elected version's, when it is watched itself."""
        elected = self._informers.get(inf.elected) if inf.elected is not None else None
        return elected if elected is not None and elected.elected is None else None

    def _status(self, inf: _Informer) -> InformerStatus:
        elected = self._elected(inf)
        if elected is not None:
            return replace(self._status(elected), gvk=inf.gvk, count=0)
        if not inf.reflectors:
            return InformerStatus(inf.gvk, inf.state, last_error=inf.error)
        plural = inf.info.plural if inf.info is not None else ""
        return aggregate(inf.gvk, list(inf.reflectors.values()), self.count(inf.gvk), plural,
                          self.options.stale_after)

    @property
    def probes(self) -> int:
        """``/readyz`` probes sent while a reflector was failing (``Recovery``)."""
        return self._recovery.probes if self._recovery is not None else 0

    @property
    def wakeups(self) -> int:
        """Times the failing reflectors were woken because the API server answered again."""
        return self._recovery.wakeups if self._recovery is not None else 0

    def _failing(self) -> list[Reflector]:
        return [r for r in self._all_reflectors() if r.down_since_mono is not None]

    def _all_reflectors(self) -> list[Reflector]:
        found = [r for inf in self._informers.values() for r in inf.reflectors.values()]
        return found + ([self._crd_reflector] if self._crd_reflector is not None else [])

    # resolution and reflectors

    async def _reconcile(self, gvk: GVK) -> None:
        """Make the reflectors of ``gvk`` match what discovery says about it now."""
        inf = self._informers.get(gvk)
        if inf is None:
            return
        async with inf.lock:
            try:
                info = await self.discovery.resolve(gvk)
            except KubeApiError as exc:
                # A kind settled as missing or forbidden stays so while the API server does not answer
                # (a recheck during an outage learns nothing about it; readiness must not drop for that)
                if not inf.reflectors and (exc.answered or inf.state not in ("crd_missing", "forbidden")):
                    inf.state, inf.error = ("forbidden" if exc.is_forbidden else "error"), str(exc)
                    self._status_changed()
                log.warning("discovery of %s failed: %s", gvk, exc)
                return
            if self._informers.get(gvk) is not inf or not self._started:
                return
            if info != inf.info:
                await self._stop_reflectors(inf)
            if info is None:
                inf.state, inf.error = "crd_missing", "not served by the API server"
                self._status_changed()
                self.clear(gvk)
                return
            inf.elected = None
            self._status_changed()
            primary = await elect(gvk, self._informers, self.discovery.resolve)
            if primary != gvk:  # another version of the kind is watched instead: cached once
                await self._stop_reflectors(inf)
                self.clear(gvk)
                inf.elected, inf.state, inf.error = primary, "synced", ""
                self._status_changed()
                return
            inf.info, inf.state, inf.error = info, "syncing", ""
            self._status_changed()
            if not inf.reflectors:
                self._start_reflectors(inf, info)

    def _start_reflectors(self, inf: _Informer, info: ResourceInfo) -> None:
        allowed = self.options.namespaces if info.namespaced else ()
        namespaces: Iterable[str | None] = allowed or [None]
        for namespace in namespaces:
            reflector = self._reflector(info, namespace, GraphSink(self, info.gvk))
            inf.reflectors[namespace] = reflector
            reflector.start()
        self._status_changed()
        log.info("watching %s as %s in %s", info.gvk, info.plural, ", ".join(allowed) or "all namespaces")

    async def _stop_reflectors(self, inf: _Informer) -> None:
        reflectors = list(inf.reflectors.values())
        inf.reflectors.clear()
        inf.info = None
        self._status_changed()
        await asyncio.gather(*(r.stop() for r in reflectors))

    def _reflector(self, info: ResourceInfo, namespace: str | None, sink: GraphSink | CrdIndex) -> Reflector:
        source = self._sources(info, namespace)
        return Reflector(info.gvk, source, sink, namespace=namespace, options=self.options.reflector, rng=self._rng,
                         on_status=self._status_changed)

    def _on_crd_change(self, group: str, kind: str) -> None:
        if not self._started:
            return
        for gvk in [g for g in self._informers if g.group_kind == (group, kind)]:
            self._spawn(self._reconcile(gvk))

    def _reconcile_kind(self, gvk: GVK) -> None:
        """Re-resolve every watched version of ``gvk``'s kind (the elected one may change)."""
        self._on_crd_change(*gvk.group_kind)

    async def _recheck_loop(self) -> None:
        """Every ``recheck_interval``: re-resolve kinds that are missing or failing."""
        while True:
            await asyncio.sleep(self.options.recheck_interval)
            for gvk, inf in list(self._informers.items()):
                reflector_missing = any(r.state == "crd_missing" for r in inf.reflectors.values())
                unresolved = not inf.reflectors and inf.state in ("crd_missing", "error", "forbidden")
                if reflector_missing:
                    self.discovery.invalidate(gvk.group)
                if reflector_missing or unresolved:
                    self._spawn(self._reconcile(gvk))

    def _spawn(self, coroutine: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("informer cache task failed", exc_info=task.exception())


def _resource_clients(api: KubeApi) -> SourceFactory:
    """The production ``SourceFactory``: ``ResourceClient`` over ``api``."""

    def make(info: ResourceInfo, namespace: str | None) -> ListWatch:
        return ResourceClient(api, info.gvk, info.plural, namespace)

    return make
