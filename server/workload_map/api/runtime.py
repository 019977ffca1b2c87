"""``Runtime``: everything request handlers need, attached to ``app.state.runtime``.

Built by ``workload_map.app.create_app``; the reader (and with it the service and registrar)
is attached either at once (a reader passed in, as tests do) or in the lifespan (live
cluster or snapshot files). Handlers read it through :func:`runtime_of`.
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from starlette.requests import HTTPConnection

from workload_map.auth.access import Access
from workload_map.config import Settings
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import CacheNotReady
from workload_map.api.answers import AnswerCache
from workload_map.api.waits import ClientWaits
from workload_map.gvk import GVK
from workload_map.kube.reader import FRESH, Freshness, InformerStatus, Reader
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, gpu_policy
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from workload_map.service.actions import SnapshotWriter
from workload_map.service.fleet import combined, registrar_for
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DefinitionStore
from workload_map.service.reads import WorkloadReads

if TYPE_CHECKING:
    from workload_map.service.fleet import Fleet


DRAIN_S = 2.0
"""Longest wait of :meth:`Runtime.drain` for the requests held on the change feed to end."""
DRAIN_TURNS = 5
"""Loop turns :meth:`Runtime.drain` gives their last messages once they let go of the feed."""


class Runtime(Struct, eq=False):
    """Shared state of one app instance.

    Attributes:
        settings: configuration.
        registry: definitions in force.
        service / registrar: set by :meth:`attach`.
        source: human description of the object source (``cluster ...``, ``snapshot ...``).
        cluster: name reported in the ``cluster`` field and accepted by the filter.
        started: the lifespan finished start-up (stored definitions loaded, cache started).
        karta_crd: state of the Karta CRD (``present``, ``installed``, ``missing``, ...;
            empty offline).
        extra_states: informer-like statuses to report besides the reader's.
        access: the caller policy (``OpenAccess`` for ``--auth none``; ``KubernetesAccess``
            once the cluster client exists); None while starting.
        closers: coroutine functions run at shutdown (extra API clients).
        writer: writes workload objects (``ClusterWriter`` against a cluster; None means a
            ``SnapshotWriter`` over the reader when it is a snapshot, see :meth:`require_writer`).
            With several clusters the writers are the fleet's (``Fleet.writers``).
        followers: (registrar, reader) pairs whose Karta objects the lifespan follows: one
            per cluster with several clusters; filled with the single pair otherwise.
        karta_crds: cluster name -> Karta CRD state, with several clusters.
        waits: ``?wait=`` requests held per client address (``settings.http.max_waits_per_client``).
        startup_error: why a start-up finished in the background failed (a snapshot that
            cannot be read); "" while none.
        on_startup_failure: called with that error (``wmap serve`` stops the server).
        background: coroutine functions the lifespan runs as tasks once the caches started
            (the Karta status controller and its Lease elector), cancelled at shutdown.
        karta_status: the ``KartaStatusController`` (one cluster), else None.
        karta_statuses: cluster name -> its ``KartaStatusController``, with several clusters.
        answers: GraphQL answers of view-only queries kept per view generation
            (:mod:`workload_map.api.answers`).
    """

    settings: Settings
    registry: DefinitionRegistry
    service: WorkloadReads | None = None
    registrar: Registrar | None = None
    source: str = ""
    cluster: str = ""
    started: bool = False
    karta_crd: str = ""
    metrics: Any = None
    tasks: list[Any] = field(default_factory=list)
    access: Access | None = None
    closers: list[Callable[[], Any]] = field(default_factory=list)
    writer: Any = None
    followers: list[tuple[Registrar, Reader]] = field(default_factory=list)
    karta_crds: dict[str, str] = field(default_factory=dict)
    registrars: dict[str, Registrar] = field(default_factory=dict)
    background: list[Callable[[], Any]] = field(default_factory=list)
    karta_status: Any = None
    karta_statuses: dict[str, Any] = field(default_factory=dict)
    waits: ClientWaits = field(default_factory=lambda: ClientWaits(0))
    startup_error: str = ""
    on_startup_failure: Callable[[str], None] | None = None
    answers: AnswerCache = field(default_factory=AnswerCache)

    def __post_init__(self) -> None:
        self.waits = ClientWaits(self.settings.http.max_waits_per_client)

    def definitions_generation(self) -> int:
        """A number that changes whenever any cluster's definitions change (read-your-writes)."""
        registries = {id(r.registry): r.registry for r, _ in self.followers} or {id(self.registry): self.registry}
        return sum(r.generation for r in registries.values())

    async def drain(self, within: float = DRAIN_S) -> None:
        """The server is stopping: end every request and stream held on the change feed now.

        Called as uvicorn's shutdown begins (``workload_map.cli.serving.drained_first``),
        before it closes connections: a ``?wait=`` answers 503 (``ServerStopping``), a
        subscription completes. Waits up to ``within`` seconds for them to let go of the
        feed, and a few loop turns more, so that a WebSocket subscription's ``complete``
        is sent before uvicorn closes the socket (1012). Nothing happens before a service is
        attached (no one waits then).
        """
        if self.service is None:
            return
        feed = self.service.feed
        feed.end()
        deadline = asyncio.get_running_loop().time() + within
        while feed.subscribers and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for _ in range(DRAIN_TURNS):  # their last messages: a WebSocket ``complete``, an SSE end
            await asyncio.sleep(0)

    def policy(self) -> GpuPolicy:
        """The GPU policy of the settings."""
        return _policy(self.settings)

    def attach_fleet(self, fleet: Fleet, registrar: Registrar) -> None:
        """Serve a ``workload_map.service.fleet.Fleet`` (several clusters); ``registrar`` is the first cluster's."""
        self.service = fleet
        self.registrar = registrar
        for member in {id(r): r for r in (registrar, *self.registrars.values())}.values():
            member.settle = fleet.settled  # read-your-writes over every cluster
        if self.metrics is not None:
            fleet.on_resolved = self.metrics.observe_resolution

    def cluster_readers(self) -> dict[str, Reader]:
        """Cluster name -> reader: every member of a fleet, else the one reader as ``cluster``."""
        service = self.service
        if service is None:
            return {}
        readers = service.readers()
        return readers if len(readers) > 1 else {self.cluster: service.reader}

    def cluster_states(self) -> dict[str, dict[GVK, InformerStatus]]:
        """Cluster name -> informer statuses of its reader (empty for readers without informers)."""
        out: dict[str, dict[GVK, InformerStatus]] = {}
        for name, reader in self.cluster_readers().items():
            out[name] = dict(reader.states())
        return out

    def freshness(self) -> Freshness:
        """How current the served data is: the reader's, or with several clusters all of them together."""
        if self.karta_crds:
            return combined(self.cluster_states())
        return self.reader.freshness() if self.reader is not None else FRESH

    def is_synced(self) -> bool:
        """True when every cluster's reader has synced once."""
        readers = self.cluster_readers()
        return bool(readers) and all(r.is_synced() for r in readers.values())

    def attach(self, reader: Reader, store: DefinitionStore, *, watch: Callable[[GVK], None] | None = None,
               trial_timeout: float | None = None) -> None:
        """Create the service and registrar over ``reader`` and ``store``."""
        resolver = self.settings.resolver
        self.service = WorkloadService(self.registry, reader, policy=_policy(self.settings), workers=resolver.workers,
                                       timeout_s=resolver.timeout_s, quarantine_after=resolver.quarantine_after)
        registrar = Registrar(self.registry, store, watch=watch, sandbox=self.service.sandbox)  # one budget
        if trial_timeout is not None:
            registrar.trial_timeout = trial_timeout  # 0 disables the trial
        self.registrar = limited(registrar, self.settings)
        self.registrar.settle = self.service.settled  # read-your-writes
        if self.metrics is not None:
            self.service.on_resolved = self.metrics.observe_resolution

    @property
    def reader(self) -> Reader | None:
        """The attached reader."""
        return self.service.reader if self.service is not None else None

    def is_ready(self) -> bool:
        """True once the server can answer from complete data.

        That is: started, every informer listed once (or settled as missing/forbidden), and
        every workload found then has a materialized view.
        """
        return self.started and self.service is not None and self.is_synced() and self.service.is_ready()

    def can_answer(self) -> bool:
        """True once queries are answered.

        That is :meth:`is_ready`, or with several clusters ``Fleet.answering`` (clusters
        unreachable since the start are left out, and reported).
        """
        if self.started and self.service is not None:
            return self.service.answering()
        return self.is_ready()

    def require_service(self) -> WorkloadReads:
        """The service, once it answers (:meth:`can_answer`).

        Raises:
            CacheNotReady: before start-up finished, before the caches synced or before every
                workload has a view.
        """
        if not self.can_answer() or self.service is None:
            if self.service is not None and self.started and self.is_synced():
                resolved, known = self.service.progress()
                raise CacheNotReady(f"resolving workloads (resolved {resolved} of {known}); retry shortly")
            raise CacheNotReady("informer caches are not synced yet; retry shortly")
        return self.service

    def require_registrar(self, cluster: str | None = None) -> Registrar:
        """The registrar of ``cluster`` (None: the first cluster), once a reader is attached.

        Raises:
            CacheNotReady: before start-up attached a reader.
            InvalidRequest: ``cluster`` is not a cluster this server reads.
        """
        if self.registrar is None:
            raise CacheNotReady("the server is starting; retry shortly")
        return registrar_for(self.registrar, self.registrars, self.cluster, cluster)

    def require_writer(self) -> Any:
        """The workload writer: the cluster's, or one over the snapshot reader.

        Raises:
            CacheNotReady: no writer (still starting, or a reader that cannot be written).
        """
        if self.writer is None and isinstance(self.reader, SnapshotReader):
            self.writer = SnapshotWriter(self.reader)
        if self.writer is None:
            raise CacheNotReady("workload writes are not available yet; retry shortly")
        return self.writer

    def states(self) -> dict[GVK, InformerStatus]:
        """Informer statuses of the reader (empty for readers that do not report them)."""
        return dict(self.reader.states()) if self.reader is not None else {}


def _policy(settings: Settings) -> GpuPolicy:
    """The GPU policy: defaults plus the configured whole, shared and DRA GPU names."""
    if not settings.gpu_resources and not settings.shared_gpu_resources and settings.dra_gpu_classes is None:
        return DEFAULT_GPU_POLICY
    return gpu_policy(settings.gpu_resources, settings.shared_gpu_resources, settings.dra_gpu_classes)


def limited(registrar: Registrar, settings: Settings) -> Registrar:
    """``registrar`` with the definition count and size limits of ``settings.http``."""
    registrar.max_definitions = settings.http.max_definitions
    registrar.max_definitions_bytes = settings.http.max_definitions_bytes
    return registrar


def runtime_of(conn: HTTPConnection) -> Runtime:
    """The runtime of the app serving ``conn``."""
    runtime: Runtime = conn.app.state.runtime
    return runtime
