"""Which workloads a cache change marks dirty: the materializer's listener on the reader.

A change event marks the covered objects on its owner chain (the changed object and its
ancestors, ``ChangeEvent.root_uids``); an addition or deletion also marks the covered
descendants of the changed object (their top-level status may flip: a LeaderWorkerSet's
leader pod owns its worker StatefulSet).

Read sets: a ``MODIFIED`` event that changes no field any definition in force reads of a
descendant (``workload_map.resolution.readsets``: old and new compared on that set) marks
nothing, unless the object is a workload itself (its view publishes its resourceVersion).

Shared ResourceClaims: a claim named by pods' ``spec.resourceClaims[].resourceClaimName`` has
no owner, so its change reaches no workload through the owner graph. ``ClaimDependents``
keeps (namespace, claim name) -> pods naming it, from pod events (rebuilt from the cache by
:meth:`EventMarking.start`); a claim event marks the covered objects on each such pod's owner
chain. Claims generated from templates are owned by their pod and need nothing extra.

Every hook here is synchronous and only marks (dict lookups and owner walks): it runs on
the event loop inside the reader's listener call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from workload_map.gvk import POD_GVK
from workload_map.kube.reader import ChangeEvent
from workload_map.materialization.claims import ClaimDependents
from workload_map.materialization.workset import WorkloadSet
from workload_map.owners import owner_chain
from workload_map.resolution.dra import RESOURCE_CLAIM
from workload_map.resolution.readsets import ReadSets

START_YIELD_EVERY = 2_000
"""Pods indexed between two yields of :meth:`EventMarking.start_steps`."""


class EventMarking:
    """Turns the reader's change events into marks of store keys (see module docstring).

    Args:
        service: the workload set (covered kinds, top-level rule, store keys, the reader).
        mark: called with each store key (a uid or a holder key) to re-resolve.
    """

    def __init__(self, service: WorkloadSet, mark: Callable[[str], None]) -> None:
        self.service = service
        self._mark = mark
        self.claims = ClaimDependents()
        self.listening = False  # events before start() are covered by the full pass
        self.skipped = 0  # MODIFIED events that changed no field a definition reads (marked nothing)
        self._read_sets: tuple[int, ReadSets] | None = None

    def read_sets(self) -> ReadSets:
        """The descendant read sets of the definitions in force (rebuilt per registry generation)."""
        registry = self.service.registry
        if self._read_sets is None or self._read_sets[0] != registry.generation:
            self._read_sets = (registry.generation, ReadSets(e.definition for e in registry.entries()))
        return self._read_sets[1]

    def definitions_changed(self) -> None:
        """Forget the read sets: derived again from the definitions now in force on the next event."""
        self._read_sets = None

    def start(self) -> None:
        """Start listening and index the shared claims of the pods held now (:meth:`start_steps` at once)."""
        for _ in self.start_steps():
            pass

    def start_steps(self) -> Iterator[None]:
        """:meth:`start`, yielding every :data:`START_YIELD_EVERY` pods (the event loop serves between).

        Listening starts first: an event between two steps is indexed as it comes, and each
        pod listed is indexed from the object the reader holds for it at its step (gone: not
        at all), so an older copy never undoes a newer event. In one piece on the event loop
        the index of 20,000 pods stalled ``/livez`` by 40-100 ms at the cold start.
        """
        self.listening = True
        reader = self.service.reader
        for count, listed in enumerate(reader.list(POD_GVK), start=1):
            meta = listed.get("metadata") or {}
            pod = reader.get(POD_GVK, meta.get("namespace"), str(meta.get("name") or ""))
            if pod is not None:
                self.claims.update(pod)
            if count % START_YIELD_EVERY == 0:
                yield

    def on_event(self, event: ChangeEvent) -> None:
        """The reader listener: mark what ``event`` may change (nothing before :meth:`start`)."""
        if not self.listening:
            return
        if self.irrelevant(event):
            self.skipped += 1
            return
        if event.gvk == POD_GVK:
            self.claims.update(event.obj, deleted=event.type == "DELETED")
        elif event.gvk.group_kind == RESOURCE_CLAIM.group_kind:
            self.on_claim(event.obj)
        service = self.service
        covered = service.covered_group_kinds()
        for index, uid in enumerate(event.root_uids):
            obj: Mapping[str, Any] | None = event.obj if index == 0 else service.reader.by_uid(uid)
            if obj is not None and group_kind(obj) in covered:  # a changed holder of a conflicting uid: itself only
                self._mark(service.key_of(obj) if index == 0 and event.type == "MODIFIED" else uid)
        first = event.root_uids[0] if event.root_uids else None
        if first and event.type != "MODIFIED":  # a pod too: a LeaderWorkerSet's leader pod owns its worker StatefulSet
            for child in service.reader.descendants(first):  # top-level status may flip below
                if group_kind(child) in covered:
                    self._mark(str(child.get("metadata", {}).get("uid", "")))

    def irrelevant(self, event: ChangeEvent) -> bool:
        """True for a ``MODIFIED`` event that no view can see (``workload_map.resolution.readsets``).

        The change must touch no field read of a descendant, and the object must not be a
        workload itself (a root's view publishes its resourceVersion). Owner references are
        read, so an irrelevant change leaves the object's top-level status as it was.
        """
        if event.type != "MODIFIED" or event.old is None:
            return False
        if self.read_sets().descendant_changed(event.gvk, event.old, event.obj):
            return False
        return not (event.gvk.group_kind in self.service.covered_group_kinds()
                    and self.service.is_top_level(event.obj))

    def on_claim(self, claim: Mapping[str, Any]) -> None:
        """Mark the workloads whose pods name the changed shared ``claim``."""
        meta = claim.get("metadata") or {}
        reader, covered = self.service.reader, self.service.covered_group_kinds()
        for pod_uid in self.claims.pods_of(str(meta.get("namespace") or ""), str(meta.get("name") or "")):
            pod = reader.by_uid(pod_uid)
            if pod is None:
                continue
            for obj in (pod, *owner_chain(pod, reader.by_uid).ancestors):
                if group_kind(obj) in covered:
                    self._mark(str(obj.get("metadata", {}).get("uid", "")))


def group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(group, kind)`` of ``obj`` from its ``apiVersion`` and ``kind`` (``""`` for what is missing)."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return group, str(obj.get("kind", ""))
