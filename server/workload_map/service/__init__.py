"""WorkloadService: the materialized view of every top-level workload, read by every front door.

Reads (``workloads``, ``workload``, ``gpu_summary``) only read the :class:`ViewStore`; they
never run jq. Two ways the store is filled:

* **started** (the server: ``await service.start()`` in the app lifespan): a
  :class:`~workload_map.service.materializer.Materializer` resolves every workload once after the
  reader has synced, then re-resolves the workloads each change touches, in worker
  processes with a hard time budget, and publishes :class:`ViewChange` events on
  :attr:`feed`. Views may lag a change by the resolver's latency; ``await settled()``
  waits until nothing is pending.
* **not started** (offline CLI, tests that build a service directly): each read brings
  the store up to date synchronously first, through the same worker code, resolving
  only workloads whose cache version or definition changed: in this process when every
  expression of the definitions involved is bounded (no loop, recursion or regular
  expression: ``workload_map.jq.static.is_bounded``), else in one shared worker process
  with the time budget (``BlockingResolver``).

Top-level rule: an object is a workload only when no object up its controller chain is
itself covered by a definition (a JobSet's Jobs and a Deployment's pods are not workloads
of their own), as upstream ``kli get --all-types`` does.
"""

from __future__ import annotations

import atexit
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import WorkloadNotFound
from workload_map.gvk import GVK
from workload_map.kube.reader import Reader
from workload_map import owners
from workload_map.resolution.dra import claim_inputs
from workload_map.resolution.nesting import nested_definitions
from workload_map.resolution import DEFAULT_GPU_POLICY, GpuPolicy, WorkloadView
from workload_map.resolution.resolver import failed_view
from workload_map.service.feed import ChangeFeed, Subscriber, ViewChange
from workload_map.service.pods import PodPlacement, pod_placement
from workload_map.service.views import GROUP_BY, GpuBucket, ViewStore

if TYPE_CHECKING:  # the pool imports multiprocessing: only when a worker process is needed
    from workload_map.service.pool import BlockingResolver

__all__ = ["GROUP_BY", "ChangeFeed", "GpuBucket", "Subscriber", "ViewChange", "WorkloadService"]

log = logging.getLogger(__name__)

POD = GVK("", "v1", "Pod")
DEFAULT_TIMEOUT_S = 2.0
_BLOCKING: dict[float, BlockingResolver] = {}


def _blocking(timeout_s: float) -> BlockingResolver:
    from workload_map.service.pool import BlockingResolver

    resolver = _BLOCKING.get(timeout_s)
    if resolver is None:
        resolver = _BLOCKING[timeout_s] = BlockingResolver(1, timeout_s)
        atexit.register(resolver.close)
    return resolver


_BOUNDED: dict[int, tuple[Definition, bool]] = {}


def _usable_cores() -> int:
    from workload_map.service.pool import usable_cores

    return usable_cores()


def _definition_key(definition: Definition) -> str:
    from workload_map.service.pool import definition_key

    return definition_key(definition)


def _resolve_now(todo: list[tuple[str, Definition, dict[str, Any]]],
                 timeout_s: float) -> list[tuple[str, WorkloadView | None, str | None, float]]:
    """``(uid, view or None, error or None, seconds)`` of each ``(uid, definition, inputs)``.

    For a service that is not started. In this process for a definition whose every
    expression is bounded (``workload_map.jq.static.is_bounded``: no loop, recursion or
    regular expression, so the time is bounded by the input's size and no process is
    needed to keep the time budget), else in the forked worker that enforces
    ``timeout_s`` (the pool and its multiprocessing imports are loaded only then).
    """
    here = [_resolve_here(uid, definition, inputs) for uid, definition, inputs in todo if _is_bounded(definition)]
    rest = [(uid, definition, inputs) for uid, definition, inputs in todo if not _is_bounded(definition)]
    if not rest:
        return here
    from workload_map.service.worker import Job

    jobs = [(Job(uid, _definition_key(definition), inputs), definition) for uid, definition, inputs in rest]
    return here + [(o.uid, o.view, o.error, o.seconds) for o in _blocking(timeout_s).resolve(jobs)]


def _is_bounded(definition: Definition) -> bool:
    """Every jq expression of ``definition`` is bounded (memoized per definition object)."""
    hit = _BOUNDED.get(id(definition))
    if hit is None or hit[0] is not definition:
        from workload_map.definitions.validate import jq_fields
        from workload_map.jq.static import is_bounded

        hit = _BOUNDED[id(definition)] = (definition, all(is_bounded(e) for _, e in jq_fields(definition)))
    return hit[1]


def _resolve_here(uid: str, definition: Definition,
                  inputs: dict[str, Any]) -> tuple[str, WorkloadView | None, str | None, float]:
    """One resolution in this process, failures as the worker reports them (``worker.run_job``)."""
    from workload_map.resolution import resolve

    started = time.perf_counter()
    try:
        return uid, resolve(definition, **inputs), None, time.perf_counter() - started
    except Exception as exc:  # noqa: BLE001 - one malformed object must not stop the others
        return uid, None, f"resolution failed: {type(exc).__name__}: {exc}", time.perf_counter() - started


class WorkloadService:
    """Materialized views of the workloads of a :class:`~workload_map.kube.reader.Reader`.

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
        self.registry, self.reader, self.policy, self.cluster = registry, reader, policy, cluster
        self.workers = workers  # 0 until started: the usable cores, counted by the pool module then
        self.timeout_s, self.quarantine_after = timeout_s, quarantine_after
        self.store = ViewStore()
        self.feed = feed if feed is not None else ChangeFeed()
        self.resolutions = 0
        self.quarantined: dict[tuple[str, int], str] = {}
        #: Called after every resolution with the view and its seconds (metrics).
        self.on_resolved: Callable[[WorkloadView, float], None] | None = None
        self.materializer: Any = None
        self._stamps: dict[str, tuple[int, int, str]] = {}
        self._list_cache: dict[tuple[Any, ...], list[WorkloadView]] = {}
        self._summaries: dict[str, tuple[int, list[GpuBucket]]] = {}
        self._covered: tuple[int, set[tuple[str, str]]] = (-1, set())

    # lifecycle

    async def start(self) -> None:
        """Start background materialization (worker processes + resolver task)."""
        from workload_map.service.materializer import Materializer

        if self.materializer is None:
            self.workers = self.workers or _usable_cores()
            self.materializer = Materializer(self, workers=self.workers, timeout_s=self.timeout_s,
                                             quarantine_after=self.quarantine_after)
            self.materializer.start()

    async def stop(self) -> None:
        """Stop materialization and end the worker processes."""
        if self.materializer is not None:
            await self.materializer.stop()

    def is_ready(self) -> bool:
        """True once every workload found after sync has a view (always true when not started)."""
        return self.materializer is None or bool(self.materializer.ready)

    def progress(self) -> tuple[int, int]:
        """``(resolved, known)`` workloads: "resolved N of M"."""
        known = self.materializer.known if self.materializer is not None else len(self.store)
        return len(self.store), max(known, len(self.store))

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until no workload is dirty or being resolved (True at once when not started)."""
        return True if self.materializer is None else bool(await self.materializer.settled(timeout))

    # the inputs of one resolution: the only place they are gathered

    def inputs(self, obj: Mapping[str, Any], entry: Entry) -> dict[str, Any]:
        """Keyword arguments of ``workload_map.resolution.resolve`` (besides the definition) for ``obj``."""
        uid = str(obj.get("metadata", {}).get("uid", ""))
        related = self.reader.descendants(uid) if uid else []
        pods = [o for o in related if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        objects = [o for o in related if not (o.get("kind") == "Pod" and o.get("apiVersion") == "v1")]
        dra = claim_inputs(self.reader, obj.get("metadata", {}).get("namespace"))
        if dra["claims"]:
            named = _claim_names(pods)
            dra["claims"] = [c for c in dra["claims"] if c.get("metadata", {}).get("name") in named]
        nested = nested_definitions(entry.definition, objects, self._definition_of)
        return {"root": obj, "objects": objects, "pods": pods, "origin": entry.origin, "policy": self.policy,
                **dra, **({"nested": nested} if nested else {})}

    def _definition_of(self, obj: Mapping[str, Any]) -> Definition | None:
        entry = self.entry_for(obj)
        return entry.definition if entry is not None else None

    # top-level set

    def covered_group_kinds(self) -> set[tuple[str, str]]:
        """(group, kind) of every definition in force (cached per registry generation)."""
        if self._covered[0] != self.registry.generation:
            self._covered = (self.registry.generation, {g.group_kind for g in self.registry.root_gvks()})
        return self._covered[1]

    def entry_for(self, obj: Mapping[str, Any]) -> Entry | None:
        """The definition in force for ``obj``'s GVK, or None (also for a malformed object)."""
        try:
            return self.registry.lookup(GVK.of(obj))
        except ValueError:
            return None

    def is_top_level(self, obj: Mapping[str, Any], covered: set[GVK] | None = None) -> bool:
        """True when no controller ancestor of ``obj`` is a covered kind.

        ``covered`` defaults to the definitions in force (cached per registry generation).
        The walk is the one owner-chain walk (``workload_map.owners.owner_chain``): same-namespace
        owners only, depth ``MAX_OWNER_DEPTH``, an ownerReference cycle listed once.
        """
        kinds = self.covered_group_kinds() if covered is None else {g.group_kind for g in covered}

        def is_covered(owner: Mapping[str, Any]) -> bool:
            try:
                return GVK.of(owner).group_kind in kinds
            except ValueError:
                return False

        return owners.is_top_level(obj, self.reader.by_uid, is_covered)

    def iter_roots(self) -> Iterator[tuple[Entry, Mapping[str, Any]]]:
        """Every object of a covered GVK with the entry in force for it."""
        for entry in list(self.registry.entries()):
            for obj in self.reader.list(entry.gvk):
                yield entry, obj

    # writes to the store (the materializer and the synchronous refresh)

    def record(self, entry: Entry, view: WorkloadView, seconds: float) -> None:
        """Stamp ``view`` with this service's cluster, store it and publish the change."""
        if self.cluster:
            view.cluster = self.cluster
        previous = self.store.put(entry, view)
        self.resolutions += 1
        if self.on_resolved is not None:
            self.on_resolved(view, seconds)
        self.feed.publish(ViewChange("added" if previous is None else "modified", view.uid, view.namespace,
                                     view.kind, view.name, previous.view if previous else None, view))

    def forget(self, uid: str) -> None:
        """Drop the view of ``uid`` (gone or no longer top-level) and publish the removal."""
        previous = self.store.remove(uid)
        self._stamps.pop(uid, None)
        if previous is not None:
            v = previous.view
            self.feed.publish(ViewChange("removed", uid, v.namespace, v.kind, v.name, v, None))

    def _refresh(self) -> None:
        """Not started: bring the store up to date synchronously (see module docstring)."""
        if self.materializer is not None:
            return
        found: dict[str, tuple[Entry, Mapping[str, Any]]] = {}
        for entry, obj in self.iter_roots():
            uid = str(obj.get("metadata", {}).get("uid", ""))
            if uid and self.is_top_level(obj):
                found[uid] = (entry, obj)
        for uid in [u for u in self.store.uids() if u not in found]:
            self.forget(uid)
        todo: list[tuple[str, Definition, dict[str, Any]]] = []
        for uid, (entry, obj) in found.items():
            stamp = (self.reader.version(uid), self.registry.generation,
                     str(obj.get("metadata", {}).get("resourceVersion", "")))
            if self._stamps.get(uid) != stamp or uid not in self.store:
                self._stamps[uid] = stamp
                todo.append((uid, entry.definition, self.inputs(obj, entry)))
        for uid, resolved, error, seconds in _resolve_now(todo, self.timeout_s):
            entry, obj = found[uid]
            view = resolved or failed_view(entry.definition, obj, error or "resolution failed",
                                           origin=entry.origin, policy=self.policy)
            self.record(entry, view, seconds)

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
        self._refresh()
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
        self._refresh()
        record = self.store.find(group, kind, namespace, name) if self.serves(cluster) else None
        if record is not None and (allow is None or allow(record.gvk, namespace or None)):
            return record.view
        where = f"{namespace}/" if namespace else ""
        raise WorkloadNotFound(f"workload {kind}.{group or 'core'} {where}{name} not found")

    def view_of(self, uid: str) -> WorkloadView | None:
        """The materialized view of ``uid``, or None."""
        self._refresh()
        record = self.store.get(uid)
        return record.view if record is not None else None

    def pod_placement(self, namespace: str, name: str, *, cluster: str | None = None) -> PodPlacement | None:
        """Where pod ``namespace/name`` sits (workload, component, gangs), from the store's pod index.

        None also when ``cluster`` is given and is not this service's cluster.
        """
        if not self.serves(cluster):
            return None
        self._refresh()
        return pod_placement(self.store, namespace, name)

    def serves(self, cluster: str | None) -> bool:
        """True when a ``cluster`` filter keeps this service's workloads (None keeps every cluster)."""
        return cluster is None or not self.cluster or cluster == self.cluster

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
            self._refresh()
            hit = self._summaries.get(group_by)
            if hit is None or hit[0] != self.store.generation:
                hit = self._summaries[group_by] = self.store.summary(group_by)
            return hit[1]
        from workload_map.service.views import Aggregates

        subset = Aggregates()
        for view in views:
            subset.apply(view, 1)
        return subset.summary(group_by)


def _claim_names(pods: Sequence[Mapping[str, Any]]) -> set[str]:
    """Names of the ResourceClaims ``pods`` use.

    Shared ones are named in ``spec.resourceClaims``, per-pod ones generated from templates in
    ``status.resourceClaimStatuses``; only those cross the process boundary
    (https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/).
    """
    names: set[str] = set()
    for pod in pods:
        for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
            if isinstance(ref, Mapping) and ref.get("resourceClaimName"):
                names.add(str(ref["resourceClaimName"]))
        for ref in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            if isinstance(ref, Mapping) and ref.get("resourceClaimName"):
                names.add(str(ref["resourceClaimName"]))
    return names
