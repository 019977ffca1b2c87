"""The workload set: which objects are workloads, what resolving one reads, where its view goes.

The one object the :class:`~workload_map.materialization.materializer.Materializer` and the
read service (``workload_map.service.workloads.WorkloadService``) share, so that neither
reaches into the other: the covered set (the definitions in force, per registry
generation), the top-level rule, the inputs of one resolution, and the two writes to the
:class:`ViewStore` (``record`` and ``forget``), each publishing its :class:`ViewChange`.

Top-level rule: an object is a workload only when no object up its controller chain is
itself covered by a definition (a JobSet's Jobs and a Deployment's pods are not workloads
of their own), as upstream ``kli get --all-types`` does.

Keys: a workload is stored under its uid; each holder of a uid two distinct objects hold
is stored under its own ``holder_key`` (docs/identity.md), so both are listed. ``record``
takes over the record a workload had under its other key (the uid before a conflict, its
holder key after one) as a modification, and a uid's record drops its stale holder records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from workload_map import owners
from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.gvk import GVK
from workload_map.kube.reader import Reader
from workload_map.materialization.feed import ChangeFeed, ViewChange
from workload_map.materialization.views import HOLDER_SEPARATOR, Record, ViewStore, holder_key, uid_of_key
from workload_map.materialization.worker import Inputs
from workload_map.resolution import GpuPolicy, WorkloadView
from workload_map.resolution.dra import claim_inputs
from workload_map.resolution.nesting import nested_definitions


class WorkloadSet:
    """The top-level workloads of one reader under one registry, and their stored views.

    Args:
        registry: definitions in force.
        reader: live informer cache or snapshot.
        policy: GPU resource names.
        cluster: the cluster name stamped on every recorded view ("" for none); may be set
            later, before the first view is recorded.
        feed: where changes are published (several clusters may share one).
    """

    def __init__(self, registry: DefinitionRegistry, reader: Reader, *, policy: GpuPolicy, cluster: str = "",
                 feed: ChangeFeed | None = None) -> None:
        self.registry, self.reader, self.policy, self.cluster = registry, reader, policy, cluster
        self.store = ViewStore()
        self.feed = feed if feed is not None else ChangeFeed()
        self.resolutions = 0
        #: (definition name, registry generation) -> message, for quarantined definitions.
        self.quarantined: dict[tuple[str, int], str] = {}
        #: Called after every recorded view with the view and its seconds (metrics).
        self.on_resolved: Callable[[WorkloadView, float], None] | None = None
        self._covered: tuple[int, set[tuple[str, str]]] = (-1, set())

    # the covered set and the top-level rule

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
        """Every object of a covered GVK with the entry in force for it.

        Also the objects of a version no definition names whose group/kind one covers (a
        JobSet ``jobset.x-k8s.io/v1`` under the catalog's ``v1alpha2``): the registry's lookup
        falls back across versions (``DefinitionRegistry.lookup``), and listing only the
        definitions' own GVKs hid them, their children too (a covered kind's children are
        not top-level).
        """
        entries = list(self.registry.entries())
        for entry in entries:
            for obj in self.reader.list(entry.gvk):
                yield entry, obj
        named = {e.gvk for e in entries}
        covered = {e.gvk.group_kind for e in entries}
        for gvk in sorted(self.reader.states(), key=str):
            fallback = self.registry.lookup(gvk) if gvk not in named and gvk.group_kind in covered else None
            if fallback is not None:
                for obj in self.reader.list(gvk):
                    yield fallback, obj

    # store keys (docs/identity.md)

    def key_of(self, obj: Mapping[str, Any]) -> str:
        """The store key of ``obj``: its uid, or its ``holder_key`` when another object holds the uid too."""
        uid = str(obj.get("metadata", {}).get("uid", ""))
        holders = self.reader.uid_holders(uid) if uid else {}
        meta = obj.get("metadata", {})
        for shown, held in holders.items():
            held_meta = held.get("metadata", {})
            if (held.get("apiVersion"), held.get("kind"), held_meta.get("namespace"), held_meta.get("name")) == \
                    (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name")):
                return holder_key(uid, shown)
        return uid

    def object_of(self, key: str) -> Mapping[str, Any] | None:
        """The cached object stored under ``key``: by uid, or the named holder of a conflicting uid."""
        uid, _, shown = key.partition(HOLDER_SEPARATOR)
        return self.reader.uid_holders(uid).get(shown) if shown else self.reader.by_uid(uid)

    def holds(self, record: Record, uid: str) -> bool:
        """True when the object of ``record`` is one of the current holders of conflicting ``uid``."""
        view, group_kind = record.view, record.entry.gvk.group_kind
        for obj in self.reader.uid_holders(uid).values():
            meta = obj.get("metadata", {})
            if (meta.get("namespace") or None, meta.get("name")) == (view.namespace or None, view.name) \
                    and self._group_kind(obj) == group_kind:
                return True
        return False

    @staticmethod
    def _group_kind(obj: Mapping[str, Any]) -> tuple[str, str] | None:
        try:
            return GVK.of(obj).group_kind
        except ValueError:
            return None

    # the inputs of one resolution: the only place they are gathered

    def inputs(self, obj: Mapping[str, Any], entry: Entry) -> Inputs:
        """What resolving ``obj`` under ``entry`` reads (the resolver's arguments besides the definition)."""
        uid = str(obj.get("metadata", {}).get("uid", ""))
        related = self.reader.descendants(uid) if uid else []
        pods = [o for o in related if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        objects = [o for o in related if not (o.get("kind") == "Pod" and o.get("apiVersion") == "v1")]
        dra = claim_inputs(self.reader, obj.get("metadata", {}).get("namespace"))
        claims = dra["claims"]
        if claims:
            named = _claim_names(pods)
            claims = [c for c in claims if c.get("metadata", {}).get("name") in named]
        nested = nested_definitions(entry.definition, objects, self._definition_of)
        held = self.reader.uid_conflicts(uid) if uid else []  # issue 28: a uid held by two objects
        below = {u: tuple(c) for o in related
                 if (u := o.get("metadata", {}).get("uid")) and u != uid and (c := self.reader.uid_conflicts(u))}
        return Inputs(obj, objects, pods, entry.origin, self.policy, claims, dra["claim_templates"], nested or None,
                      tuple(held), tuple(sorted(below.items())))

    def _definition_of(self, obj: Mapping[str, Any]) -> Definition | None:
        entry = self.entry_for(obj)
        return entry.definition if entry is not None else None

    # the writes to the store

    def record(self, entry: Entry, view: WorkloadView, seconds: float, key: str | None = None) -> None:
        """Stamp ``view`` with the cluster, store it under ``key`` (default its uid) and publish the change.

        The same object's record under the uid's other key is taken over (one ``modified``);
        recorded under the uid itself, the uid's other holder records are removed.
        """
        key = view.uid if key is None else key
        if self.cluster:
            view.cluster = self.cluster
        moved = self._take_over(entry, view, key)
        previous = self.store.put(entry, view, key) or moved
        self.resolutions += 1
        if self.on_resolved is not None:
            self.on_resolved(view, seconds)
        self.feed.publish(ViewChange("added" if previous is None else "modified", view.uid, view.namespace,
                                     view.kind, view.name, previous.view if previous else None, view))
        if key == view.uid:
            for stale in self.store.keys_of(view.uid):
                if stale != key:
                    self.forget(stale)

    def _take_over(self, entry: Entry, view: WorkloadView, key: str) -> Record | None:
        """Remove (unpublished) and return the record of the same object under another key of its uid."""
        for other in self.store.keys_of(view.uid):
            record = self.store.get(other)
            if other != key and record is not None and record.entry.gvk.group_kind == entry.gvk.group_kind \
                    and (record.view.namespace, record.view.name) == (view.namespace, view.name):
                return self.store.remove(other)
        return None

    def forget(self, key: str) -> None:
        """Drop the view under ``key`` (gone or no longer top-level) and publish the removal.

        Forgetting a uid also forgets its holder records (``uid_of_key``).
        """
        previous = self.store.remove(key)
        if previous is not None:
            v = previous.view
            self.feed.publish(ViewChange("removed", v.uid, v.namespace, v.kind, v.name, v, None))
        if key == uid_of_key(key):
            for holder in self.store.keys_of(key):
                self.forget(holder)


def _claim_names(pods: Sequence[Mapping[str, Any]]) -> set[str]:
    """Names of the ResourceClaims ``pods`` use.

    Shared ones are named in ``spec.resourceClaims``, per-pod ones generated from templates in
    ``status.resourceClaimStatuses``; only those cross the process boundary
    (https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/).
    """
    names: set[str] = set()
    for pod in pods:  # spec and status are objects (the store checks it); their lists may be anything
        refs = (pod.get("spec") or {}).get("resourceClaims")
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses")
        for ref in [*(refs if isinstance(refs, list) else ()), *(statuses if isinstance(statuses, list) else ())]:
            if isinstance(ref, Mapping) and ref.get("resourceClaimName"):
                names.add(str(ref["resourceClaimName"]))
    return names
