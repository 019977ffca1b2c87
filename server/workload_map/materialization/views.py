"""The materialized store: the resolved view of every top-level workload.

Views are kept in list order, with GPU aggregates updated by difference.

Why by difference: a summary over 20,000 workloads recomputed per request costs tens of
milliseconds and grows with the cluster; a change touches one workload. :meth:`ViewStore.put`
subtracts the old view's contribution from its buckets and adds the new one (``Decimal``
sums, so subtracting is exact), so ``gpuSummary`` right after a change is a copy of a few
buckets. A bucket and a resource name inside it are dropped when their last contributor
leaves, so the buckets equal a recomputation from scratch exactly (the property test in
tests/service checks it).

Keys: a record is stored under its workload's uid, or, for each holder of a uid two
distinct objects hold (an identity conflict, docs/identity.md), under :func:`holder_key`
(the uid and the holder's group/Kind namespace/name), so both are listed; an index of uid ->
holder keys (empty unless a conflict exists) lets the writers find them.

Ordering: list order is (namespace, kind, name, uid), kept as a list of keys sorted by that
key, updated with ``bisect`` over keys computed from the records (an insert is about 15 key
computations and a memmove, microseconds at 20,000; no key tuple is kept per workload). Lookups by identity go through
an index of (group, kind lower-cased, namespace, name); the scheduler view's pod lookups go
through an index of pod uid and of namespace -> pod name -> workload uid (no key tuple per
pod; the names are the interned strings the object cache holds), kept with the views.

Readers in other threads (GraphQL queries run off the event loop, ``workload_map.api.offload``) see
one consistent state: every change happens under a lock, and :meth:`ViewStore.snapshot`
returns an immutable tuple of the records in list order, built at most once per
generation (under the lock) and shared by every reader of that generation: O(1) per
request once built. :meth:`ViewStore.summary` copies the buckets under the same lock.

Pure data structure: no I/O, no jq, no asyncio.
"""

from __future__ import annotations

import bisect
import sys
import threading
from decimal import Decimal
from typing import Any, Callable, Iterator, Mapping

from msgspec import Struct, field
from msgspec.structs import fields

from workload_map.definitions.registry import Entry
from workload_map.gvk import GVK
from workload_map.resolution import WorkloadView
from workload_map.resolution.resources import gpu_test

GROUP_BY = ("NAMESPACE", "KIND", "NODE", "PHASE", "CLUSTER")
UNSCHEDULED = "<unscheduled>"


class GpuBucket(Struct):
    """GPU totals of one group in ``WorkloadService.gpu_summary``.

    Attributes:
        key: the group (namespace, ``kind.group``, node name, phase or cluster name).
        workloads: workloads counted; for NODE, the workloads with a pod on that node (a
            workload whose pods run on several nodes is counted on each).
        spec / pods / allocated: GPU-class resource name (``GpuPolicy.is_gpu``) -> amount
            (``Decimal``); other resources (cpu, memory) are not summed.
    """

    key: str
    workloads: int = 0
    spec: dict[str, Decimal] = field(default_factory=dict)
    pods: dict[str, Decimal] = field(default_factory=dict)
    allocated: dict[str, Decimal] = field(default_factory=dict)


Contribution = tuple[str, int, Mapping[str, Decimal], Mapping[str, Decimal], Mapping[str, Decimal]]
"""(bucket key, workloads, spec, pods, allocated) one view adds to one bucket."""


def contributions(view: WorkloadView, group_by: str) -> list[Contribution]:
    """What ``view`` adds to the buckets of ``group_by``.

    For NODE, each non-terminated pod counts towards the node it is bound to
    (``<unscheduled>`` for none; allocated only when bound), the workload counts once on
    every node one of its pods is on, and the spec figure is not split (it has no node).
    """
    if group_by == "NODE":
        out: list[Contribution] = []
        nodes: set[str] = set()
        for pod in view.all_pods():
            if not pod.terminated:
                node = pod.node or UNSCHEDULED
                out.append((node, 0 if node in nodes else 1, {}, pod.requests, pod.requests if pod.node else {}))
                nodes.add(node)
        return out
    key = {"NAMESPACE": view.namespace or "", "KIND": f"{view.kind}.{view.group}" if view.group else view.kind,
           "PHASE": view.phase.value, "CLUSTER": view.cluster}.get(group_by, "")
    return [(key, 1, view.gpu.spec, view.gpu.pods, view.gpu.allocated)]


_ZERO = Decimal(0)


class _Bucket:
    """One group's sums.

    ``sums``: GPU resource name -> ``[spec, pods, allocated]`` totals followed by how many
    contributions named it in each figure (a name leaves a figure with its last one).
    """

    __slots__ = ("contributors", "workloads", "sums")

    def __init__(self) -> None:
        self.contributors = 0
        self.workloads = 0
        self.sums: dict[str, list[Any]] | None = None  # None while no GPU resource is summed

    def add(self, figure: int, amounts: Mapping[str, Decimal], sign: int, is_gpu: Callable[[str], bool]) -> None:
        for name, value in amounts.items():
            sums = self.sums
            row = sums.get(name) if sums is not None else None
            if row is None:
                if sign < 0 or not is_gpu(name):
                    continue
                if sums is None:
                    sums = self.sums = {}
                row = sums[name] = [_ZERO, _ZERO, _ZERO, 0, 0, 0]
            count = row[figure + 3] + sign
            row[figure + 3] = max(count, 0)
            row[figure] = row[figure] + sign * value if count > 0 else _ZERO
            if not (row[3] or row[4] or row[5]) and sums is not None:
                del sums[name]
                if not sums:
                    self.sums = None

    def figure(self, figure: int) -> dict[str, Decimal]:
        """``{name: total}`` of one figure (0 spec, 1 pods, 2 allocated)."""
        return {name: row[figure] for name, row in (self.sums or {}).items() if row[figure + 3]}


class Aggregates:
    """Buckets of every ``GROUP_BY`` dimension, updated by difference.

    Only GPU-class resources (``GpuPolicy.is_gpu`` of the view) are summed: the summary
    reports GPU figures, and CPU or memory sums per node would cost about a kilobyte per
    node for nothing.
    """

    def __init__(self) -> None:
        self._buckets: dict[str, dict[str, _Bucket]] = {g: {} for g in GROUP_BY}

    def apply(self, view: WorkloadView, sign: int) -> None:
        """Add (``sign`` 1) or subtract (-1) ``view``'s contributions."""
        is_gpu = gpu_test(view.policy)  # remembered per name
        for group_by, buckets in self._buckets.items():
            for key, workloads, spec, pods, allocated in contributions(view, group_by):
                bucket = buckets.get(key)
                if bucket is None:
                    bucket = buckets[key] = _Bucket()
                bucket.contributors += sign
                bucket.workloads += sign * workloads
                bucket.add(0, spec, sign, is_gpu)
                bucket.add(1, pods, sign, is_gpu)
                bucket.add(2, allocated, sign, is_gpu)
                if bucket.contributors <= 0:
                    del buckets[key]

    def summary(self, group_by: str) -> list[GpuBucket]:
        """Fresh ``GpuBucket`` copies sorted by key.

        Raises:
            KeyError: ``group_by`` is not one of ``GROUP_BY``.
        """
        buckets = self._buckets[group_by]
        return [GpuBucket(k, b.workloads, b.figure(0), b.figure(1), b.figure(2)) for k, b in sorted(buckets.items())]


ENTRY_TABLE_CAPACITY = 256
"""Definitions (and entries per definition) the store's entry table remembers."""

_ENTRY_FIELDS = tuple(f.name for f in fields(Entry) if f.name not in ("definition", "sequence"))
"""Fields two entries of one definition (bucketed by identity) are compared on."""

SortKey = tuple[str, str, str, str]
IdentityKey = tuple[str, str, str | None, str]


def sort_key(view: WorkloadView) -> SortKey:
    """List order: namespace, kind, name (uid breaks ties)."""
    return (view.namespace or "", view.kind, view.name, view.uid)


HOLDER_SEPARATOR = "\x00"
"""Between the uid and the holder's identity in a :func:`holder_key` (never in a uid or name)."""


def holder_key(uid: str, shown: str) -> str:
    """The store key of one holder of a conflicting ``uid``; ``shown`` is its ``group/Kind ns/name``."""
    return f"{uid}{HOLDER_SEPARATOR}{shown}"


def uid_of_key(key: str) -> str:
    """The uid of a store key (the key itself, or the uid part of a :func:`holder_key`)."""
    return key.partition(HOLDER_SEPARATOR)[0]


def identity_key(group: str, kind: str, namespace: str | None, name: str) -> IdentityKey:
    """Lookup key of one workload by group, kind (case-insensitive), namespace and name."""
    return (group, sys.intern(kind.lower()), namespace or None, name)


class Record(Struct, frozen=True):
    """One materialized workload: its definition entry in force and its view."""

    entry: Entry
    view: WorkloadView

    @property
    def gvk(self) -> GVK:
        """The root GVK of the definition in force."""
        return self.entry.gvk


class Snapshot(Struct, frozen=True):
    """The records of one store generation in list order (immutable, shared by readers).

    Attributes:
        generation: the :attr:`ViewStore.generation` these records are of.
        records: every record, sorted by (namespace, kind, name, uid).
    """

    generation: int
    records: tuple[Record, ...]


class ViewStore:
    """key (uid, or :func:`holder_key`) -> :class:`Record`, in list order, with :class:`Aggregates` and an identity index.

    :attr:`generation` is bumped on every change (list caches above key on it). Changes
    (``put``, ``remove``) hold the store's lock; readers in other threads use
    :meth:`snapshot` and :meth:`summary` (see the module docstring).
    """

    def __init__(self) -> None:
        self._records: dict[str, Record] = {}
        self._order: list[str] = []  # store keys in list order (their sort keys are computed, not kept)
        self._holders: dict[str, set[str]] = {}  # uid -> holder keys, only for conflicting uids
        self._entries: dict[int, list[Entry]] = {}  # id(definition) -> the entries records share
        self._by_identity: dict[IdentityKey, str] = {}
        self._by_pod: dict[str, dict[str, str]] = {}  # namespace -> pod name -> workload key
        self._by_pod_uid: dict[str, str] = {}
        self.aggregates = Aggregates()
        self.generation = 0
        self._lock = threading.Lock()
        self._snapshot = Snapshot(0, ())

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, uid: object) -> bool:
        return uid in self._records

    def get(self, key: str) -> Record | None:
        """The record stored under ``key`` (a uid or a :func:`holder_key`), or None."""
        return self._records.get(key)

    def keys_of(self, uid: str) -> list[str]:
        """The keys of ``uid``'s records: the uid when stored, then its holder keys (sorted)."""
        plain = [uid] if uid in self._records else []
        holders = self._holders.get(uid)
        return plain + sorted(holders) if holders else plain

    def find(self, group: str, kind: str, namespace: str | None, name: str) -> Record | None:
        """The record of one workload by identity, or None."""
        uid = self._by_identity.get(identity_key(group, kind, namespace, name))
        return self._records.get(uid) if uid is not None else None

    def owner_of_pod(self, namespace: str, name: str) -> Record | None:
        """The record of the workload whose view holds pod ``namespace/name``, or None (O(1))."""
        names = self._by_pod.get(namespace)
        uid = names.get(name) if names is not None else None
        return self._records.get(uid) if uid is not None else None

    def owner_of_pod_uid(self, pod_uid: str) -> Record | None:
        """The record of the workload whose view holds the pod of uid ``pod_uid``, or None (O(1))."""
        uid = self._by_pod_uid.get(pod_uid)
        return self._records.get(uid) if uid is not None else None

    def uids(self) -> list[str]:
        """Every store key (a copy): the uids, and the holder keys of conflicting uids."""
        return list(self._records)

    def records(self) -> Iterator[Record]:
        """Records in list order (those of :meth:`snapshot`: safe while another thread writes)."""
        return iter(self.snapshot().records)

    def snapshot(self) -> Snapshot:
        """The records of the current generation in list order, immutable.

        O(1) when this generation's snapshot exists; else built once, under the lock (one
        pass over the records: about 1 ms at 20,000 workloads), for every later reader.
        """
        snapshot = self._snapshot
        if snapshot.generation == self.generation:
            return snapshot
        with self._lock:
            if self._snapshot.generation != self.generation:
                records = self._records
                self._snapshot = Snapshot(self.generation, tuple(records[uid] for uid in self._order))
            return self._snapshot

    def summary(self, group_by: str) -> tuple[int, list[GpuBucket]]:
        """``(generation, buckets)``: :meth:`Aggregates.summary` copied under the lock.

        Raises:
            KeyError: ``group_by`` is not one of ``GROUP_BY``.
        """
        with self._lock:
            return self.generation, self.aggregates.summary(group_by)

    def put(self, entry: Entry, view: WorkloadView, key: str | None = None) -> Record | None:
        """Store ``view`` under ``key`` (default ``view.uid``); returns the record it replaced."""
        with self._lock:
            return self._put(entry, view, view.uid if key is None else key)

    def _put(self, entry: Entry, view: WorkloadView, key: str) -> Record | None:
        previous = self._records.get(key)
        in_place = previous is not None and sort_key(previous.view) == sort_key(view)  # a re-resolution
        if previous is not None:
            self._unlink(previous, key, keep_place=in_place)
        record = Record(self._shared_entry(entry), view)
        self._records[key] = record
        if key != view.uid:
            self._holders.setdefault(view.uid, set()).add(key)
        if not in_place:
            bisect.insort(self._order, key, key=self._sort_key_of)
        self._by_identity[identity_key(entry.gvk.group, view.kind, view.namespace, view.name)] = key
        for pod in view.all_pods():
            self._by_pod.setdefault(pod.namespace, {})[pod.name] = key
            if pod.uid:
                self._by_pod_uid[pod.uid] = key
        self.aggregates.apply(view, 1)
        self.generation += 1
        return previous

    def _sort_key_of(self, key: str) -> SortKey:
        return sort_key(self._records[key].view)

    def _shared_entry(self, entry: Entry) -> Entry:
        """One ``Entry`` object per distinct entry (the registry builds one per catalog lookup).

        Entries of one definition are the same when every field but ``sequence`` (the
        registry's own registration order, which no record reads) is equal.
        """
        same = self._entries.get(id(entry.definition))
        if same is None:
            if len(self._entries) >= ENTRY_TABLE_CAPACITY:
                self._entries.clear()
            same = self._entries[id(entry.definition)] = []  # the entries keep the definition (and id) alive
        for known in same:
            if all(getattr(known, name) == getattr(entry, name) for name in _ENTRY_FIELDS):
                return known
        if len(same) < ENTRY_TABLE_CAPACITY:
            same.append(entry)
        return entry

    def remove(self, key: str) -> Record | None:
        """Forget the record under ``key`` (a uid or a :func:`holder_key`); returns it (None when absent)."""
        with self._lock:
            previous = self._records.get(key)
            if previous is not None:
                self._unlink(previous, key)  # while the record is there: list order reads its key
                del self._records[key]
                self.generation += 1
            return previous

    def _unlink(self, record: Record, key: str, keep_place: bool = False) -> None:
        view = record.view
        if not keep_place:  # keep_place: its successor has the same sort key and takes this place in the order
            order, wanted = self._order, sort_key(view)
            index = bisect.bisect_left(order, wanted, key=self._sort_key_of)
            while index < len(order) and order[index] != key and self._sort_key_of(order[index]) == wanted:
                index += 1  # holders of one uid told apart by group only share a sort key
            if index < len(order) and order[index] == key:
                del order[index]
        holders = self._holders.get(view.uid) if key != view.uid else None
        if holders is not None:
            holders.discard(key)
            if not holders:
                del self._holders[view.uid]
        identity = identity_key(record.entry.gvk.group, view.kind, view.namespace, view.name)
        if self._by_identity.get(identity) == key:
            del self._by_identity[identity]
        for pod in view.all_pods():
            names = self._by_pod.get(pod.namespace)
            if names is not None and names.get(pod.name) == key:
                del names[pod.name]
                if not names:
                    del self._by_pod[pod.namespace]
            if pod.uid and self._by_pod_uid.get(pod.uid) == key:
                del self._by_pod_uid[pod.uid]
        self.aggregates.apply(view, -1)
