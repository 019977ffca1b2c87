"""The workloads read API: what every front door (GraphQL, REST, metrics, health) asks.

Two implementations declare it: ``workload_map.service.workloads.WorkloadService`` (one
cluster) and ``workload_map.service.fleet.Fleet`` (several clusters as one). A front door
holds a :class:`WorkloadReads` and never asks which one it has: cluster-aware answers
(``readers``, ``freshness_by_cluster``, the ``cluster`` filters) have one entry per cluster
served, one entry for a single cluster.

``Freshness`` (how current the served data is, ``workload_map.kube.freshness``) is
re-exported so that the GraphQL layer, which never imports the cache, can name it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.reader import Freshness, Reader
from workload_map.materialization.feed import ChangeFeed
from workload_map.materialization.materializer import Materializer
from workload_map.materialization.views import GpuBucket
from workload_map.resolution import GpuPolicy, WorkloadView
from workload_map.service.pods import PodPlacement

__all__ = ["Allow", "Freshness", "WorkloadReads"]

Allow = Callable[[GVK, str | None], bool]
"""A visibility filter: (root GVK, namespace or None for cluster-scoped) -> may the caller see it."""


class WorkloadReads(Protocol):
    """The read interface of the materialized workload views (see module docstring)."""

    @property
    def registry(self) -> DefinitionRegistry:
        """The definitions in force (the first cluster's with several)."""
        ...

    @property
    def policy(self) -> GpuPolicy:
        """The GPU resource names."""
        ...

    @property
    def reader(self) -> Reader:
        """The cache reader (the first cluster's with several; all of them: :meth:`readers`)."""
        ...

    @property
    def feed(self) -> ChangeFeed:
        """The change feed every view change is published on."""
        ...

    @property
    def materializer(self) -> Materializer | None:
        """The (first cluster's) background materializer, None before ``start``."""
        ...

    @property
    def resolutions(self) -> int:
        """Views resolved and stored so far (all clusters)."""
        ...

    @property
    def on_resolved(self) -> Callable[[WorkloadView, float], None] | None:
        """Called after every resolution with the view and its seconds (metrics)."""
        ...

    @on_resolved.setter
    def on_resolved(self, hook: Callable[[WorkloadView, float], None] | None) -> None: ...

    # lifecycle

    async def start(self) -> None:
        """Start background materialization."""
        ...

    async def stop(self) -> None:
        """Stop materialization and end the worker processes."""
        ...

    def is_ready(self) -> bool:
        """True once every workload found after sync has a view."""
        ...

    def view_generation(self) -> tuple[int, ...]:
        """A value that changes whenever a view or a definition in force changes.

        Shape: ``(registry generation, view store generation)`` per cluster, flattened in
        command-line order. Answers computed from the views at one value stay right while it
        holds (``workload_map.api.answers``).
        """
        ...

    def answering(self) -> bool:
        """True when queries can be answered (several clusters: unreachable ones left out)."""
        ...

    def progress(self) -> tuple[int, int]:
        """``(resolved, known)`` workloads."""
        ...

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until nothing is pending; False on timeout."""
        ...

    # clusters

    def serves(self, cluster: str | None) -> bool:
        """True when a ``cluster`` filter can match workloads served here (None matches every cluster)."""
        ...

    def readers(self) -> dict[str, Reader]:
        """Cluster name -> its cache reader, in command-line order."""
        ...

    def freshness(self) -> Freshness:
        """How current the served data is (several clusters together: stale when any is)."""
        ...

    def freshness_by_cluster(self) -> dict[str, Freshness]:
        """Cluster name -> how current its cache is."""
        ...

    # reads

    def workloads(self, *, namespace: str | None = None, kind: str | None = None, group: str | None = None,
                  phase: str | None = None, definition: str | None = None,
                  namespaces: Iterable[str] | None = None, allow: Allow | None = None,
                  cluster: str | None = None) -> list[WorkloadView]:
        """Top-level workloads matching every filter given (``WorkloadService.workloads``)."""
        ...

    def workload(self, namespace: str | None, group: str, kind: str, name: str, *, allow: Allow | None = None,
                 cluster: str | None = None) -> WorkloadView:
        """One workload by identity.

        Raises:
            WorkloadNotFound: no such workload, hidden by ``allow``, or not in ``cluster``.
        """
        ...

    def pod_placement(self, namespace: str, name: str, *, cluster: str | None = None) -> PodPlacement | None:
        """Where pod ``namespace/name`` sits (workload, component, gangs), or None."""
        ...

    def gpu_summary(self, group_by: str, views: Iterable[WorkloadView] | None = None) -> list[GpuBucket]:
        """GPU totals grouped by NAMESPACE, KIND, NODE, PHASE or CLUSTER.

        Raises:
            KeyError: an unknown ``group_by``.
        """
        ...
