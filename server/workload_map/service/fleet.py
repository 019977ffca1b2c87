"""Several clusters served as one: a :class:`Fleet` of one :class:`WorkloadService` per cluster.

``wmap serve --context a --context b`` keeps one informer cache, one materializer and one
view store per cluster (``workload_map.app`` builds them); the fleet answers the front doors'
reads over all of them with the read interface of a single ``WorkloadService`` plus a
``cluster`` filter, so GraphQL, REST and the metrics do not care how many clusters there are.

Identity: uids are unique within one cluster only (the API server generates them), so
nothing here is keyed by uid alone: each member's store keys its own uids, and a merged
list is ordered by (namespace, kind, group, name, cluster). A lookup without ``cluster``
answers from the first cluster (in the order given on the command line) that has the
workload; give ``cluster`` when the same name exists in several.

The members publish on one shared :class:`ChangeFeed`; each view carries its cluster
(``WorkloadView.cluster``), so subscribers tell them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import InvalidRequest, WorkloadNotFound
from workload_map.gvk import GVK
from workload_map.kube.freshness import freshness
from workload_map.kube.reader import FRESH, Freshness, InformerStatus, Reader
from workload_map.materialization.materializer import Materializer
from workload_map.resolution import GpuPolicy, WorkloadView
from workload_map.service.reads import Allow, WorkloadReads
from workload_map.service.workloads import WorkloadService
from workload_map.materialization.feed import ChangeFeed
from workload_map.service.pods import PodPlacement
from workload_map.registration.registrar import Registrar
from workload_map.materialization.views import GpuBucket


def _add(into: dict[str, Decimal], amounts: Mapping[str, Decimal]) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, Decimal(0)) + value


def merge_buckets(lists: Iterable[list[GpuBucket]]) -> list[GpuBucket]:
    """Sum buckets of the same key across clusters (sorted by key).

    Args:
        lists: each member's ``gpu_summary`` answer.

    Returns:
        New buckets: workloads and every GPU figure added per key.
    """
    merged: dict[str, GpuBucket] = {}
    for buckets in lists:
        for bucket in buckets:
            into = merged.get(bucket.key)
            if into is None:
                into = merged[bucket.key] = GpuBucket(bucket.key)
            into.workloads += bucket.workloads
            _add(into.spec, bucket.spec)
            _add(into.pods, bucket.pods)
            _add(into.allocated, bucket.allocated)
    return [merged[k] for k in sorted(merged)]


def combined(states: Mapping[str, Mapping[GVK, InformerStatus]]) -> Freshness:
    """One freshness over several clusters' informer statuses (cluster name -> statuses).

    Synced when every cluster is; stale when any is, since the earliest outage; the error
    and stale kinds are prefixed with their cluster (``b: connection refused``,
    ``b/batch/v1/Job``); last success is the oldest cluster's.
    """
    parts = {name: freshness(s) for name, s in states.items()}
    if not parts:
        return FRESH
    since = [f.since for f in parts.values() if f.since is not None]
    contacts = [f.last_success for f in parts.values()]
    return Freshness(
        synced=all(f.synced for f in parts.values()), stale=any(f.stale for f in parts.values()),
        since=min(since) if since else None,
        error="; ".join(f"{name}: {f.error}" for name, f in parts.items() if f.error),
        stale_kinds=tuple(f"{name}/{kind}" for name, f in parts.items() for kind in f.stale_kinds),
        last_success=None if None in contacts else min(c for c in contacts if c is not None))


def _failing(reader: Reader) -> bool:
    """True when an informer that has not synced yet reports an error (cluster unreachable)."""
    return any(s.last_error and not s.is_settled for s in reader.states().values())


def fleet_order(view: WorkloadView) -> tuple[str, str, str, str, str]:
    """Merged list order: namespace, kind, group, name, cluster."""
    return (view.namespace or "", view.kind, view.group, view.name, view.cluster)


class Fleet(WorkloadReads):
    """The workloads of several clusters (see module docstring).

    Args:
        members: cluster name -> its service (in command-line order; at least one), each
            built with ``cluster`` set to its name and ``feed`` set to ``feed``.
        feed: the change feed every member publishes on.

    Raises:
        ValueError: no member, or a member whose ``cluster`` is not its name.
    """

    def __init__(self, members: Mapping[str, WorkloadService], feed: ChangeFeed) -> None:
        if not members:
            raise ValueError("a fleet needs at least one cluster")
        for name, service in members.items():
            if service.cluster != name:
                raise ValueError(f"the service of cluster {name!r} stamps views with {service.cluster!r}")
        self.members = dict(members)
        self.primary = next(iter(self.members.values()))
        self._feed = feed
        self.writers: dict[str, Any] = {}
        """Cluster name -> the workload writer of that cluster (set by ``workload_map.app``)."""
        self._lists: dict[tuple[Any, ...], list[WorkloadView]] = {}

    # what the front doors read besides the views

    @property
    def registry(self) -> DefinitionRegistry:
        """The first cluster's definitions (the catalog and its Karta objects)."""
        return self.primary.registry

    @property
    def policy(self) -> GpuPolicy:
        """The GPU policy (the same for every cluster)."""
        return self.primary.policy

    @property
    def reader(self) -> Reader:
        """The first cluster's reader (per-cluster readers: ``members[name].reader``)."""
        return self.primary.reader

    @property
    def feed(self) -> ChangeFeed:
        """The change feed every member publishes on."""
        return self._feed

    @property
    def materializer(self) -> Materializer | None:
        """The first cluster's materializer (for the pool metrics)."""
        return self.primary.materializer

    @property
    def resolutions(self) -> int:
        """Resolutions done over every cluster."""
        return sum(s.resolutions for s in self.members.values())

    @property
    def on_resolved(self) -> Callable[[WorkloadView, float], None] | None:
        """The resolution hook (set on every member)."""
        return self.primary.on_resolved

    @on_resolved.setter
    def on_resolved(self, hook: Callable[[WorkloadView, float], None] | None) -> None:
        for service in self.members.values():
            service.on_resolved = hook

    def serves(self, cluster: str | None) -> bool:
        """True for None (every cluster) and for the name of a member."""
        return cluster is None or cluster in self.members

    def readers(self) -> dict[str, Reader]:
        """Cluster name -> its reader, in command-line order."""
        return {name: service.reader for name, service in self.members.items()}

    def freshness(self) -> Freshness:
        """Every cluster's freshness together (:func:`combined`: stale when any is)."""
        return combined({name: reader.states() for name, reader in self.readers().items()})

    def freshness_by_cluster(self) -> dict[str, Freshness]:
        """Cluster name -> how current its cache is (``workload_map.kube.freshness``)."""
        return {name: service.freshness() for name, service in self.members.items()}

    def member(self, cluster: str | None) -> WorkloadService:
        """The service of ``cluster`` (None: the first cluster).

        Raises:
            InvalidRequest: no such cluster (the message lists the configured ones).
        """
        if cluster is None:
            return self.primary
        service = self.members.get(cluster)
        if service is None:
            raise InvalidRequest(f"cluster must be one of {', '.join(self.members)}, got {cluster!r}")
        return service

    def _chosen(self, cluster: str | None) -> list[WorkloadService]:
        if cluster is None:
            return list(self.members.values())
        service = self.members.get(cluster)
        return [service] if service is not None else []

    # lifecycle

    async def start(self) -> None:
        """Start every member's materializer."""
        for service in self.members.values():
            await service.start()

    async def stop(self) -> None:
        """Stop every member's materializer."""
        for service in self.members.values():
            await service.stop()

    def is_ready(self) -> bool:
        """True once every cluster's workloads have views (see README "Several clusters")."""
        return all(s.is_ready() for s in self.members.values())

    def view_generation(self) -> tuple[int, ...]:
        """Every member's :meth:`WorkloadService.view_generation`, in command-line order, flattened."""
        return tuple(g for service in self.members.values() for g in service.view_generation())

    def answering(self) -> bool:
        """True when queries can be answered (a weaker gate than :meth:`is_ready`).

        Every cluster has its views, except clusters that have never synced and whose
        informers are failing (unreachable from the start): those are left out and
        reported (``clusters``, ``/readyz?verbose``); at least one cluster must answer. A
        cluster still syncing without error (a normal start) holds answers back, so no
        answer silently lacks a cluster that is about to arrive.
        """
        answering = 0
        for service in self.members.values():
            synced = service.reader.is_synced()
            if synced and service.is_ready():
                answering += 1
            elif synced or not _failing(service.reader):
                return False
        return answering > 0

    def progress(self) -> tuple[int, int]:
        """``(resolved, known)`` summed over the clusters."""
        pairs = [s.progress() for s in self.members.values()]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until every member has nothing pending (each gets ``timeout``)."""
        results = [await s.settled(timeout) for s in self.members.values()]
        return all(results)

    # reads

    def workloads(self, *, namespace: str | None = None, kind: str | None = None, group: str | None = None,
                  phase: str | None = None, definition: str | None = None,
                  namespaces: Iterable[str] | None = None, allow: Allow | None = None,
                  cluster: str | None = None) -> list[WorkloadView]:
        """Every cluster's (or one cluster's) workloads matching the filters, in :func:`fleet_order`.

        The filters are those of :meth:`WorkloadService.workloads`, applied in each member.

        Args:
            namespace: only this namespace.
            kind: Kind, case-insensitive.
            group: API group ("" for core).
            phase: a matched phase of the workload.
            definition: definition name.
            namespaces: visibility filter by namespace; None = all.
            allow: visibility filter by root GVK and namespace; None = all.
            cluster: only this cluster (an unknown name gives ``[]``, as any other filter).
        """
        filters: dict[str, Any] = {"namespace": namespace, "kind": kind, "group": group, "phase": phase,
                                   "definition": definition, "namespaces": namespaces, "allow": allow}
        cacheable = filters.get("allow") is None and filters.get("namespaces") is None
        # the generations before the lists: a view stored in between makes the key older than
        # the lists (a miss next time), never a list older than its key
        key = (cluster, tuple(sorted((k, v) for k, v in filters.items() if v is not None)),
               tuple(s.store.generation for s in self._chosen(cluster)))
        if cacheable and key in self._lists:
            return self._lists[key]
        parts = [s.workloads(**filters) for s in self._chosen(cluster)]
        out = sorted((v for part in parts for v in part), key=fleet_order)
        if cacheable:
            if len(self._lists) > 64:
                self._lists.clear()
            self._lists[key] = out
        return out

    def workload(self, namespace: str | None, group: str, kind: str, name: str, *,
                 allow: Callable[[GVK, str | None], bool] | None = None, cluster: str | None = None) -> WorkloadView:
        """One workload by identity, from ``cluster`` or the first cluster that has it.

        Raises:
            WorkloadNotFound: in no (chosen) cluster, or hidden by ``allow``.
        """
        for service in self._chosen(cluster):
            try:
                return service.workload(namespace, group, kind, name, allow=allow)
            except WorkloadNotFound:
                continue
        where = f"{namespace}/" if namespace else ""
        suffix = f" in cluster {cluster}" if cluster is not None else ""
        raise WorkloadNotFound(f"workload {kind}.{group or 'core'} {where}{name} not found{suffix}")

    def pod_placement(self, namespace: str, name: str, *, cluster: str | None = None) -> PodPlacement | None:
        """Where a pod sits, from ``cluster`` or the first cluster that has the pod."""
        for service in self._chosen(cluster):
            placement = service.pod_placement(namespace, name)
            if placement is not None:
                return placement
        return None

    def gpu_summary(self, group_by: str, views: Iterable[WorkloadView] | None = None) -> list[GpuBucket]:
        """GPU totals over every cluster, grouped as :meth:`WorkloadService.gpu_summary` (plus CLUSTER).

        Raises:
            KeyError: ``group_by`` is not a known grouping.
        """
        if views is not None:
            return self.primary.gpu_summary(group_by, views)
        return merge_buckets(s.gpu_summary(group_by) for s in self.members.values())


def write_cluster(served: Sequence[str], cluster: str | None, holder: Callable[[], str] | None = None) -> str:
    """The one rule choosing the cluster a write goes to: workload writes and definition writes alike.

    ``cluster`` when given (it must be one served), else the cluster holding the workload
    (``holder``, for a write to a workload), else the first cluster. A single cluster
    without a name (offline) accepts any name.

    Args:
        served: the names of the clusters served, in command-line order (at least one).
        cluster: the cluster asked for, or None.
        holder: the name of the cluster holding the targeted workload (may raise
            ``WorkloadNotFound``); None for a definition write.

    Raises:
        InvalidRequest: ``cluster`` is not served (the message lists the served ones).
        WorkloadNotFound: from ``holder``.
    """
    if cluster is not None:
        if cluster in served or served == [""]:
            return cluster
        raise InvalidRequest(f"cluster must be one of {', '.join(served)}, got {cluster!r}")
    return holder() if holder is not None else served[0]


def route_write(service: WorkloadReads, writer: Any, identity: tuple[str, str, str, str],
                cluster: str | None) -> tuple[WorkloadService, Any]:
    """The service and writer of the cluster a write to a workload goes to (:func:`write_cluster`).

    Writes (pod-template changes, suspend, resume) go to the workload's own cluster: with a
    :class:`Fleet`, its member of that cluster and that member's writer; with one service,
    ``service`` and ``writer`` themselves.

    Args:
        service: a ``WorkloadService`` or a :class:`Fleet` (whose ``writers`` maps cluster
            name -> writer).
        writer: the single cluster's writer (ignored for a fleet).
        identity: (namespace, group, kind, name) of the workload.
        cluster: the cluster asked for, or None.

    Raises:
        WorkloadNotFound: no cluster given, and the workload is in none.
        InvalidRequest: ``cluster`` is not a cluster served.
    """
    namespace, group, kind, name = identity

    def holder() -> str:
        return service.workload(namespace, group, kind, name).cluster

    chosen = write_cluster(list(service.readers()), cluster, holder if isinstance(service, Fleet) else None)
    if isinstance(service, Fleet):
        return service.member(chosen), service.writers.get(chosen)
    assert isinstance(service, WorkloadService), "the read API has two implementations"
    return service, writer


def registrar_for(first: Registrar, registrars: dict[str, Registrar], name: str,
                  cluster: str | None) -> Registrar:
    """The registrar of the cluster a definition write goes to (:func:`write_cluster`).

    Args:
        first: the first cluster's registrar.
        registrars: cluster name -> registrar with several clusters (empty with one).
        name: the single cluster's name.
        cluster: the cluster asked for, or None.

    Raises:
        InvalidRequest: ``cluster`` names no served cluster (the message lists them).
    """
    chosen = write_cluster(list(registrars) or [name], cluster)
    return registrars.get(chosen, first)
