"""The read side of the kube cache: the ``Reader`` protocol and its value types.

Resolution and service code depend on this module only, never on the informer machinery,
so this module (like ``store``, ``graph`` and ``snapshot``) must not import
``kubernetes_asyncio``. Two implementations exist: ``workload_map.kube.cache.InformerCache``
(live informers) and ``workload_map.kube.snapshot.SnapshotReader`` (objects loaded from files).

Objects are plain ``dict`` trees shaped like the Kubernetes JSON (``apiVersion``, ``kind``,
``metadata``, ...), trimmed on ingest (see ``workload_map.kube.trim``). Returned dicts are shared
with the cache: callers must treat them as read-only. The cache never mutates a stored dict
in place (an update replaces it), so a dict a caller holds stays a consistent snapshot.

Model: kubernetes-sigs/controller-runtime ``pkg/cache/cache.go`` (reader + informer
lifecycle, "ready" means synced, "not started" differs from "not found").
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from msgspec import Struct

from workload_map.gvk import GVK
from workload_map.owners import MAX_OWNER_DEPTH

if TYPE_CHECKING:  # asyncio costs a one-shot command 20 ms to import: annotations only
    import asyncio

KubeObject = dict[str, Any]
"""One Kubernetes object as decoded JSON (trimmed)."""

KubeObjects = list[KubeObject]
"""A list of objects (an alias, because classes here define a method named ``list``)."""

EventType = Literal["ADDED", "MODIFIED", "DELETED"]

InformerState = Literal["not_watched", "syncing", "synced", "crd_missing", "forbidden", "error"]
"""Lifecycle of the informer of one GVK.

- ``not_watched``: nobody called ``watch(gvk)``.
- ``syncing``: resolving the resource or running the first list.
- ``synced``: the first list completed; "no objects" is ``synced`` with ``count == 0``.
- ``crd_missing``: the API server does not serve the GVK (404 on list, absent from
  discovery, or its CRD is deleted / not established / the version is not served).
- ``forbidden``: the credentials may not list or watch it (403).
- ``error``: anything else; ``last_error`` says what. A GVK that has synced once and then
  fails keeps serving the objects it has.
"""

SETTLED_STATES: frozenset[str] = frozenset({"synced", "crd_missing", "forbidden"})
"""States that do not block readiness (``crd_missing`` and ``forbidden`` are reported)."""


class InformerStatus(Struct, frozen=True):
    """Health and counters of the informer of one GVK (all namespaces it covers).

    Attributes:
        gvk: the type.
        state: see ``InformerState``.
        count: objects currently cached.
        has_synced: the first list has completed at least once (readiness).
        last_error: last failure message, ``""`` if none.
        relists: full lists done (the first one included).
        events: watch events applied (ADDED/MODIFIED/DELETED; bookmarks excluded).
        bookmarks: BOOKMARK events received.
        watch_restarts: watch streams reopened (server timeout, inactivity, errors).
        last_event_age: seconds since the last watch event or bookmark, ``None`` if none yet.
        resource: the resource plural (``pods``), ``""`` when not resolved.
        namespaces: namespaces watched, ``()`` for all namespaces / cluster-scoped.
        stale: a list/watch has been failing for longer than the cache's ``stale_after``
            (the cached objects may be out of date).
        down_since: ``time.time()`` of the first failure of the current outage, ``None``
            while the informer is healthy.
        last_success: ``time.time()`` of the last completed list, accepted watch or watch
            event, ``None`` before the first one.
        last_success_age: seconds since ``last_success`` (monotonic), ``None`` before it.
    """

    gvk: GVK
    state: InformerState
    count: int = 0
    has_synced: bool = False
    last_error: str = ""
    relists: int = 0
    events: int = 0
    bookmarks: int = 0
    watch_restarts: int = 0
    last_event_age: float | None = None
    resource: str = ""
    namespaces: tuple[str, ...] = ()
    stale: bool = False
    down_since: float | None = None
    last_success: float | None = None
    last_success_age: float | None = None

    @property
    def is_settled(self) -> bool:
        """True when this informer does not block readiness."""
        return self.has_synced or self.state in ("crd_missing", "forbidden")


class Freshness(Struct, frozen=True):
    """Summary of a cluster's informers.

    Attributes:
        synced: every watched kind listed once (or settled as missing/forbidden).
        stale: some kind's list/watch has failed for longer than the threshold.
        since: while stale, when the oldest outage among the stale kinds began
            (``time.time()`` seconds); ``None`` otherwise.
        error: the last error text of a failing kind (the first stale one, else the first
            one in ``error``), ``""`` when none is failing.
        stale_kinds: ``group/version/Kind`` of every stale kind, sorted.
        last_success: the oldest of the informers' last successful contacts (list,
            accepted watch, event or bookmark; ``time.time()`` seconds): every kind has
            heard from the API server since then. ``None`` until every informer has.
    """

    synced: bool
    stale: bool
    since: float | None
    error: str
    stale_kinds: tuple[str, ...] = ()
    last_success: float | None = None

    @property
    def since_iso(self) -> str | None:
        """``since`` as RFC 3339 UTC (``2026-12-01T10:00:00Z``), ``None`` when not stale."""
        return iso_time(self.since)

    @property
    def last_success_iso(self) -> str | None:
        """``last_success`` as RFC 3339 UTC, ``None`` before every kind has heard from the API server."""
        return iso_time(self.last_success)

    def to_dict(self) -> dict[str, object]:
        """JSON shape: ``{synced, stale, since, error, staleKinds, lastSuccess}`` (times RFC 3339)."""
        return {"synced": self.synced, "stale": self.stale, "since": self.since_iso, "error": self.error,
                "staleKinds": list(self.stale_kinds), "lastSuccess": iso_time(self.last_success)}


FRESH = Freshness(synced=True, stale=False, since=None, error="")
"""What a reader without informers (a snapshot) reports."""


def iso_time(seconds: float | None) -> str | None:
    """``time.time()`` seconds as RFC 3339 UTC with second precision; ``None`` stays ``None``."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ChangeEvent(Struct, frozen=True):
    """One change of the cache, delivered to subscribers.

    Attributes:
        type: ``ADDED``, ``MODIFIED`` or ``DELETED`` (synthetic after a relist, too).
        gvk: the changed object's type.
        obj: the object (its last known state for ``DELETED``).
        root_uids: every uid whose ``version()`` this change bumped, ordered from the
            object itself up its controller-owner chain; ``root_uids[-1]`` is the topmost
            ancestor known (a pod event lists pod, job, jobset).
        old: for ``MODIFIED``, the object as cached just before this change (None when not
            known; given to listeners only, queued events carry None); the materializer
            compares the two on the fields definitions read (``workload_map.resolution.readsets``).
    """

    type: EventType
    gvk: GVK
    obj: KubeObject
    root_uids: tuple[str, ...]
    old: KubeObject | None = None


@runtime_checkable
class Reader(Protocol):
    """Read access to cached cluster objects (live informers or a static snapshot).

    Declared by both implementations, ``InformerCache`` and ``SnapshotReader``; everything
    above the cache reads objects, health and changes through these members only.

    Attributes:
        dropped_events: change events dropped for subscribers too slow to keep up.
    """

    dropped_events: int

    def get(self, gvk: GVK, namespace: str | None, name: str) -> KubeObject | None:
        """The object ``namespace/name`` (``namespace`` None or "" for cluster-scoped)."""
        ...

    def list(
        self, gvk: GVK, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> KubeObjects:
        """Objects of ``gvk``, optionally in one namespace and matching every label pair.

        Sorted by (namespace, name). An unwatched GVK gives ``[]`` (see ``state``).
        """
        ...

    def by_uid(self, uid: str) -> KubeObject | None:
        """The cached object with this ``metadata.uid``, any GVK."""
        ...

    def owned_by(self, uid: str) -> KubeObjects:
        """Objects of any watched GVK with an ownerReference (controller or not) to ``uid``."""
        ...

    def descendants(self, uid: str, max_depth: int = MAX_OWNER_DEPTH) -> KubeObjects:
        """Transitive controller-owned objects of ``uid`` (pods included), breadth first."""
        ...

    def uid_conflicts(self, uid: str) -> builtins.list[str]:
        """The objects (``group/Kind ns/name``) holding ``uid`` when two or more distinct ones do, else []."""
        ...

    def uid_holders(self, uid: str) -> dict[str, KubeObject]:
        """The objects holding ``uid`` when two or more distinct ones do, keyed by ``group/Kind ns/name``, else {}.

        The keys are those of :meth:`uid_conflicts`, in its order.
        """
        ...

    def root_of(self, obj: Mapping[str, Any], max_depth: int = MAX_OWNER_DEPTH) -> KubeObject | None:
        """The topmost cached ancestor via controller ownerReferences.

        ``None`` when ``obj`` has no cached controller owner (it is its own root).
        """
        ...

    def state(self, gvk: GVK) -> InformerStatus:
        """Informer health of ``gvk`` (``not_watched`` when it is not watched)."""
        ...

    def states(self) -> dict[GVK, InformerStatus]:
        """``InformerStatus`` of every watched GVK (of every GVK held, for a snapshot)."""
        ...

    def freshness(self) -> Freshness:
        """How current the data is: ``workload_map.kube.freshness.freshness(self.states())``.

        Read once or twice per HTTP request, so not summed up afresh each time: the informer
        cache keeps the sum while no status changes; a snapshot's is always ``FRESH``.
        """
        ...

    def is_synced(self) -> bool:
        """True when every watched GVK has listed once or settled as missing/forbidden."""
        ...

    def version(self, uid: str) -> int:
        """Change counter of ``uid``: grows when it or any controller descendant changes.

        Values come from one process-wide counter, so ``(uid, version)`` never repeats;
        ``0`` for a uid never seen.
        """
        ...

    def subscribe(self) -> asyncio.Queue[ChangeEvent]:
        """A new bounded queue receiving every later ``ChangeEvent``."""
        ...

    def unsubscribe(self, queue: asyncio.Queue[ChangeEvent]) -> None:
        """Stop delivering to ``queue`` (idempotent)."""
        ...

    def subscriber_depths(self) -> builtins.list[int]:
        """Events waiting in each subscriber queue (metrics)."""
        ...

    def add_listener(self, listener: Callable[[ChangeEvent], None]) -> None:
        """Call ``listener(event)`` synchronously for every later change (lossless)."""
        ...

    def remove_listener(self, listener: Callable[[ChangeEvent], None]) -> None:
        """Stop calling ``listener`` (no error when it is not registered)."""
        ...
