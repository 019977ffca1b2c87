"""WorkloadService: the materialized view of every top-level workload, read by every front door.

Reads (``workloads``, ``workload``, ``gpu_summary``) only read the :class:`ViewStore`; they
never run jq. Two ways the store is filled:

* **started** (the server: ``await service.start()`` in the app lifespan): a
  :class:`~workload_map.materialization.materializer.Materializer` resolves every workload once after the
  reader has synced, then re-resolves the workloads each change touches, in worker
  processes with a hard time budget, and publishes :class:`ViewChange` events on
  :attr:`feed`. Views may lag a change by the resolver's latency; ``await settled()``
  waits until nothing is pending.
* **not started** (offline CLI, tests that build a service directly): each read runs the
  same materializer to completion first (``Materializer.run_to_completion``, the same
  budget, error views and quarantine), resolving only the workloads changes marked since
  the last read: in this process for definitions whose every expression is bounded, else
  in one shared forked worker (``materialization.inline.InlineResolver``).

Which objects are workloads (the top-level rule), what one resolution reads and the writes
to the store live in the :class:`~workload_map.materialization.workset.WorkloadSet` this
service shares with its materializer.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Mapping

from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import WorkloadNotFound
from workload_map.gvk import GVK
from workload_map.kube.reader import Freshness, Reader
from workload_map.logs import logger
from workload_map.materialization.feed import ChangeFeed, Subscriber, ViewChange
from workload_map.materialization.materializer import Materializer
from workload_map.materialization.inline import InlineResolver
from workload_map.materialization.sandbox import Sandbox
from workload_map.materialization.views import GROUP_BY, Aggregates, GpuBucket, ViewStore
from workload_map.materialization.worker import Inputs
from workload_map.materialization.workset import WorkloadSet
from workload_map.resolution import DEFAULT_GPU_POLICY, GpuPolicy, WorkloadView
from workload_map.service.pods import PodPlacement, pod_placement
from workload_map.service.reads import WorkloadReads

__all__ = ["GROUP_BY", "ChangeFeed", "GpuBucket", "Subscriber", "ViewChange", "WorkloadService"]

log = logger(__name__)

POD = GVK("", "v1", "Pod")
DEFAULT_TIMEOUT_S = 2.0
_BLOCKING: dict[float, InlineResolver] = {}


def _blocking(timeout_s: float) -> InlineResolver:
    """The process's one offline resolver for ``timeout_s`` (its worker, if any, shared)."""
    resolver = _BLOCKING.get(timeout_s)
    if resolver is None:
        resolver = _BLOCKING[timeout_s] = InlineResolver(timeout_s)
    return resolver


class WorkloadService(WorkloadReads):
    """Materialized views of the workloads of a :class:`~workload_map.kube.reader.Reader` (one cluster).

    Args:
        registry: definitions in force.
        reader: live informer cache or snapshot.
        policy: GPU resource names.
        workers: resolver processes once started (0: usable CPU cores).
        timeout_s: hard budget of one resolution, seconds.
        quarantine_after: timeouts of one definition that quarantine it.
        cluster: the cluster name stamped on every stored view (``WorkloadView.cluster``;
            the kubeconfig context name against a cluster, "" offline); may be set later,
            before the first view is stored.
        feed: publish changes on this feed (several clusters' services share one, see
            :mod:`workload_map.service.fleet`); default a new one.
    """

    def __init__(self, registry: DefinitionRegistry, reader: Reader, *, policy: GpuPolicy = DEFAULT_GPU_POLICY,
                 workers: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, quarantine_after: int = 3,
                 cluster: str = "", feed: ChangeFeed | None = None) -> None:
        self.workset = WorkloadSet(registry, reader, policy=policy, cluster=cluster, feed=feed)
        self.workers = workers  # 0 until started: then the usable cores (counted by the pool module)
        self.timeout_s, self.quarantine_after = timeout_s, quarantine_after
        self._materializer: Materializer | None = None
        self._offline: Materializer | None = None
        self._offline_lock = threading.Lock()  # reads from several threads run it one at a time
        self._list_cache: dict[tuple[Any, ...], list[WorkloadView]] = {}
        self._summaries: dict[str, tuple[int, list[GpuBucket]]] = {}
        self.sandbox = Sandbox(timeout_s, offline=_blocking(timeout_s).worker)
        """Where trial and studio jobs run: this service's pool once started, its offline worker before."""

    # lifecycle

    async def start(self) -> None:
        """Start background materialization (worker processes + resolver task)."""
        if self._materializer is None:
            if self._offline is not None:  # read before the start: the background one takes over
                self._offline.unhook()
            import asyncio  # here: an offline service (the one-shot CLI) never starts

            from workload_map.materialization.pool import usable_cores

            self.workers = self.workers or usable_cores()
            self._materializer = Materializer(self.workset, workers=self.workers, timeout_s=self.timeout_s,
                                              quarantine_after=self.quarantine_after)
            self._materializer.start()
            self.sandbox.attach(self._materializer.pool, asyncio.get_running_loop())

    async def stop(self) -> None:
        """Stop materialization and end the worker processes."""
        if self.materializer is not None:
            self.sandbox.detach()
            await self.materializer.stop()

    def unhook(self) -> None:
        """Not started: stop following the reader and the registry (idempotent).

        For a service dropped while its registry lives on (``wmap describe -f`` resolves a
        big input with one service per namespace group): the registry would keep it alive.
        """
        if self._offline is not None:
            self._offline.unhook()

    def is_ready(self) -> bool:
        """True once every workload found after sync has a view (always true when not started)."""
        return self.materializer is None or bool(self.materializer.ready)

    def view_generation(self) -> tuple[int, ...]:
        """``(registry generation, view store generation)``: changes with every view or definition change."""
        return (self.registry.generation, self.store.generation)

    def progress(self) -> tuple[int, int]:
        """``(resolved, known)`` workloads: "resolved N of M"."""
        known = self.materializer.known if self.materializer is not None else len(self.store)
        return len(self.store), max(known, len(self.store))

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until no workload is dirty or being resolved (True at once when not started)."""
        return True if self.materializer is None else bool(await self.materializer.settled(timeout))

    def answering(self) -> bool:
        """One cluster: the same as :meth:`is_ready`."""
        return self.is_ready()

    # the shared workload set (``workload_map.materialization.workset``)

    @property
    def registry(self) -> DefinitionRegistry:
        """The definitions in force."""
        return self.workset.registry

    @property
    def reader(self) -> Reader:
        """The cache reader (live informers or a snapshot)."""
        return self.workset.reader

    @property
    def policy(self) -> GpuPolicy:
        """The GPU resource names."""
        return self.workset.policy

    @property
    def feed(self) -> ChangeFeed:
        """The change feed views are published on."""
        return self.workset.feed

    @property
    def store(self) -> ViewStore:
        """The materialized views."""
        return self.workset.store

    @property
    def quarantined(self) -> dict[tuple[str, int], str]:
        """(definition name, registry generation) -> message, for quarantined definitions."""
        return self.workset.quarantined

    @property
    def materializer(self) -> Materializer | None:
        """The background materializer, None before :meth:`start`."""
        return self._materializer

    @property
    def cluster(self) -> str:
        """The cluster name stamped on every stored view ("" offline)."""
        return self.workset.cluster

    @cluster.setter
    def cluster(self, value: str) -> None:
        self.workset.cluster = value

    @property
    def on_resolved(self) -> Callable[[WorkloadView, float], None] | None:
        """Called after every resolution with the view and its seconds (metrics)."""
        return self.workset.on_resolved

    @on_resolved.setter
    def on_resolved(self, hook: Callable[[WorkloadView, float], None] | None) -> None:
        self.workset.on_resolved = hook

    @property
    def resolutions(self) -> int:
        """Views resolved and stored so far."""
        return self.workset.resolutions

    def covered_group_kinds(self) -> set[tuple[str, str]]:
        """(group, kind) of every definition in force (cached per registry generation)."""
        return self.workset.covered_group_kinds()

    def entry_for(self, obj: Mapping[str, Any]) -> Entry | None:
        """The definition in force for ``obj``'s GVK, or None (also for a malformed object)."""
        return self.workset.entry_for(obj)

    def is_top_level(self, obj: Mapping[str, Any], covered: set[GVK] | None = None) -> bool:
        """True when no controller ancestor of ``obj`` is a covered kind (``WorkloadSet.is_top_level``)."""
        return self.workset.is_top_level(obj, covered)

    def inputs(self, obj: Mapping[str, Any], entry: Entry) -> Inputs:
        """What resolving ``obj`` under ``entry`` reads (``WorkloadSet.inputs``)."""
        return self.workset.inputs(obj, entry)

    def forget(self, uid: str) -> None:
        """Drop the view of ``uid`` (gone or no longer top-level) and publish the removal."""
        self.workset.forget(uid)

    def _complete(self) -> None:
        """Not started: run the offline materializer to completion (see module docstring)."""
        if self._materializer is not None:
            return
        with self._offline_lock:
            if self._offline is None:
                self._offline = Materializer(self.workset, workers=1, timeout_s=self.timeout_s,
                                             quarantine_after=self.quarantine_after,
                                             resolver=_blocking(self.timeout_s))
            self._offline.run_to_completion()

    # reads

    def workloads(self, *, namespace: str | None = None, kind: str | None = None, group: str | None = None,
                  phase: str | None = None, definition: str | None = None,
                  namespaces: Iterable[str] | None = None,
                  allow: Callable[[GVK, str | None], bool] | None = None,
                  cluster: str | None = None) -> list[WorkloadView]:
        """Top-level workloads matching the filters, sorted by namespace, kind, name.

        Args:
            namespace: only this namespace.
            kind: Kind, case-insensitive.
            group: API group ("" for core).
            phase: keep a workload when any of its matched phases equals this one.
            definition: definition name.
            namespaces: visibility filter (the caller may list only these); None = all.
            allow: visibility filter by root GVK and namespace (None for cluster-scoped); None = all.
            cluster: only this cluster's workloads: all of them when it is this service's
                cluster (or this service has none), none otherwise.
        """
        if not self.serves(cluster):
            return []
        self._complete()
        cacheable = allow is None and namespaces is None
        snapshot = self.store.snapshot()  # one consistent generation, also for readers in other threads
        key = (snapshot.generation, namespace, kind, group, phase, definition)
        if cacheable and key in self._list_cache:
            return self._list_cache[key]
        allowed = set(namespaces) if namespaces is not None else None
        kind_l, phase_l = (kind or "").lower(), (phase or "").lower()
        out: list[WorkloadView] = []
        for record in snapshot.records:
            view, gvk = record.view, record.gvk
            if (kind and gvk.kind.lower() != kind_l) or (group is not None and gvk.group != group) \
                    or (definition and record.entry.definition.name != definition) \
                    or (namespace is not None and view.namespace != namespace) \
                    or (allowed is not None and view.namespace not in allowed) \
                    or (allow is not None and not allow(gvk, view.namespace)) \
                    or (phase and all(p.value.lower() != phase_l for p in view.phases)):
                continue
            out.append(view)
        if cacheable:
            if len(self._list_cache) > 64:
                self._list_cache.clear()
            self._list_cache[key] = out
        return out

    def workload(self, namespace: str | None, group: str, kind: str, name: str, *,
                 allow: Callable[[GVK, str | None], bool] | None = None, cluster: str | None = None) -> WorkloadView:
        """One workload by identity (any served version of group/kind).

        ``allow`` (root GVK, namespace) hides what the caller may not see: a hidden
        workload raises the same error as a missing one.

        Raises:
            WorkloadNotFound: no definition for the kind, no such workload (yet), not allowed,
                or ``cluster`` is given and is not this service's cluster.
        """
        self._complete()
        record = self.store.find(group, kind, namespace, name) if self.serves(cluster) else None
        if record is not None and (allow is None or allow(record.gvk, namespace or None)):
            return record.view
        where = f"{namespace}/" if namespace else ""
        raise WorkloadNotFound(f"workload {kind}.{group or 'core'} {where}{name} not found")

    def view_of(self, uid: str) -> WorkloadView | None:
        """The materialized view of ``uid``, or None; for a uid two objects hold, the first holder's (docs/identity.md)."""
        self._complete()
        keys = self.store.keys_of(uid)
        record = self.store.get(keys[0]) if keys else None
        return record.view if record is not None else None

    def pod_placement(self, namespace: str, name: str, *, cluster: str | None = None) -> PodPlacement | None:
        """Where pod ``namespace/name`` sits (workload, component, gangs), from the store's pod index.

        None also when ``cluster`` is given and is not this service's cluster.
        """
        if not self.serves(cluster):
            return None
        self._complete()
        return pod_placement(self.store, namespace, name)

    def serves(self, cluster: str | None) -> bool:
        """True when a ``cluster`` filter keeps this service's workloads (None keeps every cluster)."""
        return cluster is None or not self.cluster or cluster == self.cluster

    def readers(self) -> dict[str, Reader]:
        """This cluster's name -> its reader (one entry)."""
        return {self.cluster: self.reader}

    def freshness(self) -> Freshness:
        """How current the reader's data is (``workload_map.kube.freshness``)."""
        return self.reader.freshness()

    def freshness_by_cluster(self) -> dict[str, Freshness]:
        """This cluster's name -> :meth:`freshness` (one entry)."""
        return {self.cluster: self.freshness()}

    def gpu_summary(self, group_by: str, views: Iterable[WorkloadView] | None = None) -> list[GpuBucket]:
        """GPU totals grouped by NAMESPACE, KIND, NODE, PHASE or CLUSTER (sorted by key).

        Without ``views`` the store's incremental aggregates answer (no pass over the
        workloads); with ``views`` (a caller's visible subset) they are summed over it.
        For NODE, pods are grouped by the node they are bound to (``<unscheduled>`` for
        none) and the spec figure is not split (it has no node).

        Raises:
            KeyError: ``group_by`` is not one of NAMESPACE, KIND, NODE, PHASE, CLUSTER.
        """
        group_by = group_by.upper()
        if views is not None and views is self._list_cache.get((self.store.generation, None, None, None, None, None)):
            views = None  # the unfiltered list: the aggregates are the same sums
        if views is None:
            self._complete()
            hit = self._summaries.get(group_by)
            if hit is None or hit[0] != self.store.generation:
                hit = self._summaries[group_by] = self.store.summary(group_by)
            return hit[1]
        subset = Aggregates()
        for view in views:
            subset.apply(view, 1)
        return subset.summary(group_by)

