"""WorkloadService: definitions + cache reader + resolver + per-workload memo.

The one place that turns cached objects into views; the API, GraphQL and CLI all call
it. Views are memoized per workload and recomputed only when the workload changed: the
memo key is ``(reader.version(uid), registry.generation)``, and the reader bumps a
workload's version whenever the object or anything in its controller-owner subtree
changes. jq therefore never runs per request for an unchanged workload.

Top-level rule: an object is listed as a workload only when no object up its controller
chain is itself covered by a definition (a JobSet's Jobs and a Deployment's pods are not
workloads of their own), as upstream ``kli get --all-types`` does.
"""

from __future__ import annotations

import time
import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping

import cachetools

from server.definitions.registry import DefinitionRegistry, Entry
from server.errors import WorkloadNotFound
from server.gvk import GVK
from server.kube.reader import Reader
from server.resolution import DEFAULT_GPU_POLICY, GpuPolicy, WorkloadView, resolve
from server.resolution.dra import claim_inputs
from server.resolution.resolver import failed_view
from server.owners import MAX_OWNER_DEPTH, controller_uid
from server.resolution.resources import add_into

log = logging.getLogger(__name__)

POD = GVK("", "v1", "Pod")
GROUP_BY = ("NAMESPACE", "KIND", "NODE", "PHASE")


@dataclass(slots=True)
class GpuBucket:
    """GPU totals of one group in :meth:`WorkloadService.gpu_summary`."""

    key: str
    workloads: int = 0
    spec: dict[str, Decimal] = field(default_factory=dict)
    pods: dict[str, Decimal] = field(default_factory=dict)
    allocated: dict[str, Decimal] = field(default_factory=dict)


class WorkloadService:
    """Lists and resolves workloads from a :class:`~server.kube.reader.Reader`.

    Args:
        registry: definitions in force.
        reader: live informer cache or snapshot.
        policy: GPU resource names.
        memo_size: most views kept (LRU).
    """

    def __init__(self, registry: DefinitionRegistry, reader: Reader, *, policy: GpuPolicy = DEFAULT_GPU_POLICY,
                 memo_size: int = 100_000, slow_resolution_s: float = 1.0) -> None:
        self.registry = registry
        self.reader = reader
        self.policy = policy
        self._memo: cachetools.LRUCache[str, tuple[tuple[int, int], WorkloadView]] = cachetools.LRUCache(memo_size)
        self.resolutions = 0
        #: A resolution slower than this quarantines its definition until the registry
        #: changes: jq cannot be interrupted and holds the event loop, so a pathological
        #: definition costs at most one slow evaluation, not one per object and request.
        self.slow_resolution_s = slow_resolution_s
        self.quarantined: dict[tuple[str, int], str] = {}
        self._top_cache: tuple[tuple[object, int], list[tuple[Entry, Mapping[str, Any]]]] | None = None
        # Filtered lists and GPU summaries per generation: a warm list or summary over
        # unchanged caches is a dict hit (the results are treated as read-only).
        self._list_cache: dict[tuple[Any, ...], list[WorkloadView]] = {}
        self._summary_cache: tuple[list[WorkloadView], str, list[GpuBucket]] | None = None
        #: Called after every (non-memoized) resolution with the view and its seconds (metrics).
        self.on_resolved: Callable[[WorkloadView, float], None] | None = None

    def view(self, obj: Mapping[str, Any], entry: Entry | None = None) -> WorkloadView:
        """The (memoized) view of a root object.

        Raises:
            WorkloadNotFound: no definition covers the object's GVK.
        """
        gvk = GVK.of(obj)
        entry = entry or self.registry.lookup(gvk)
        if entry is None:
            raise WorkloadNotFound(f"no definition covers {gvk}")
        uid = str(obj.get("metadata", {}).get("uid", ""))
        key = (self.reader.version(uid), self.registry.generation)
        hit = self._memo.get(uid)
        if hit is not None and hit[0] == key and hit[1].resource_version == str(
                obj.get("metadata", {}).get("resourceVersion", "")):
            return hit[1]
        related = self.reader.descendants(uid) if uid else []
        pods = [o for o in related if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        objects = [o for o in related if not (o.get("kind") == "Pod" and o.get("apiVersion") == "v1")]
        quarantined = self.quarantined.get((entry.definition.name, self.registry.generation))
        if quarantined is not None:
            return failed_view(entry.definition, obj, quarantined, origin=entry.origin, policy=self.policy)
        started = time.perf_counter()
        try:
            view = resolve(entry.definition, obj, objects=objects, pods=pods, origin=entry.origin, policy=self.policy,
                           **claim_inputs(self.reader, obj.get("metadata", {}).get("namespace")))
        except Exception as exc:  # noqa: BLE001 - one malformed object must not fail a whole list
            log.exception("resolving %s %s/%s failed", gvk, obj.get("metadata", {}).get("namespace"),
                          obj.get("metadata", {}).get("name"))
            view = failed_view(entry.definition, obj, f"resolution failed: {type(exc).__name__}: {exc}",
                               origin=entry.origin, policy=self.policy)
        self.resolutions += 1
        seconds = time.perf_counter() - started
        if seconds > self.slow_resolution_s:
            message = (f"definition {entry.definition.name} quarantined: resolving {obj.get('metadata', {}).get('name')}"
                       f" took {seconds:.1f} s (limit {self.slow_resolution_s:g} s); register it again once fixed")
            log.error("%s", message)
            self.quarantined[(entry.definition.name, self.registry.generation)] = message
        if self.on_resolved is not None:
            self.on_resolved(view, seconds)
        if uid:
            self._memo[uid] = (key, view)
        return view

    def is_top_level(self, obj: Mapping[str, Any], covered: set[GVK]) -> bool:
        """True when no controller ancestor of ``obj`` is a covered kind."""
        current: Mapping[str, Any] | None = obj
        for _ in range(MAX_OWNER_DEPTH):
            owner_uid = controller_uid(current) if current is not None else None
            if not owner_uid:
                return True
            current = self.reader.by_uid(owner_uid)
            if current is None:
                return True
            try:
                owner_kind = GVK.of(current).group_kind
            except ValueError:
                return True
            if any(g.group_kind == owner_kind for g in covered):
                return False
        return True

    def workloads(self, *, namespace: str | None = None, kind: str | None = None, group: str | None = None,
                  phase: str | None = None, definition: str | None = None,
                  namespaces: Iterable[str] | None = None,
                  allow: Callable[[GVK, str | None], bool] | None = None) -> list[WorkloadView]:
        """Top-level workloads matching the filters, sorted by namespace, kind, name.

        Args:
            namespace: only this namespace.
            kind: Kind, case-insensitive.
            group: API group ("" for core).
            phase: keep a workload when any of its matched phases equals this one.
            definition: definition name.
            namespaces: visibility filter (the caller may list only these); None = all.
            allow: visibility filter by root GVK and namespace (None for cluster-scoped),
                checked before a view is resolved; None = all.
        """
        cacheable = allow is None and namespaces is None
        pairs = self._top_level()
        key = (self._top_cache[0] if self._top_cache else None, len(self.quarantined), namespace, kind, group, phase,
               definition)
        if cacheable and key[0] is not None and key[0][0] is not None:
            hit = self._list_cache.get(key)
            if hit is not None:
                return hit
        out = self._filter(pairs, namespace, kind, group, phase, definition, namespaces, allow)
        if cacheable and key[0] is not None and key[0][0] is not None:
            if len(self._list_cache) > 64:
                self._list_cache.clear()
            self._list_cache[key] = out
        return out

    def _filter(self, pairs: list[tuple[Entry, Mapping[str, Any]]], namespace: str | None, kind: str | None,
                group: str | None, phase: str | None, definition: str | None, namespaces: Iterable[str] | None,
                allow: Callable[[GVK, str | None], bool] | None) -> list[WorkloadView]:
        allowed = set(namespaces) if namespaces is not None else None
        out: list[WorkloadView] = []
        for entry, obj in pairs:
            gvk = entry.gvk
            if kind and gvk.kind.lower() != kind.lower():
                continue
            if group is not None and gvk.group != group:
                continue
            if definition and entry.definition.name != definition:
                continue
            ns = obj.get("metadata", {}).get("namespace")
            if namespace is not None and ns != namespace:
                continue
            if allowed is not None and ns not in allowed:
                continue
            if allow is not None and not allow(gvk, ns):
                continue
            view = self.view(obj, entry)
            if phase and all(p.value.lower() != phase.lower() for p in view.phases):
                continue
            out.append(view)
        return out

    def _top_level(self) -> list[tuple[Entry, Mapping[str, Any]]]:
        """Every top-level ``(definition entry, root object)``, sorted by namespace, kind, name.

        Recomputed only when the reader's generation (any cached object changed) or the
        registry's generation changed: owner walks over every object are the dominant cost
        of a list otherwise. Readers without a ``generation`` are not cached.
        """
        generation = getattr(self.reader, "generation", None)
        key = (generation, self.registry.generation)
        if generation is not None and self._top_cache is not None and self._top_cache[0] == key:
            return self._top_cache[1]
        entries = list(self.registry.entries())
        covered = {e.gvk for e in entries}
        pairs = [(entry, obj) for entry in entries for obj in self.reader.list(entry.gvk)
                 if self.is_top_level(obj, covered)]
        pairs.sort(key=lambda p: (p[1].get("metadata", {}).get("namespace") or "", p[0].gvk.kind,
                                  p[1].get("metadata", {}).get("name", "")))
        self._top_cache = (key, pairs)
        return pairs

    def workload(self, namespace: str | None, group: str, kind: str, name: str, *,
                 allow: Callable[[GVK, str | None], bool] | None = None) -> WorkloadView:
        """One workload by identity (any served version of group/kind).

        ``allow`` (root GVK, namespace) hides what the caller may not see: a hidden
        workload raises the same error as a missing one.

        Raises:
            WorkloadNotFound: no definition for the kind, no such object, or not allowed.
        """
        for entry in self.registry.entries():
            gvk = entry.gvk
            if gvk.group == group and gvk.kind.lower() == kind.lower():
                if allow is not None and not allow(gvk, namespace or None):
                    continue
                obj = self.reader.get(gvk, namespace, name)
                if obj is not None:
                    return self.view(obj, entry)
        where = f"{namespace}/" if namespace else ""
        raise WorkloadNotFound(f"workload {kind}.{group or 'core'} {where}{name} not found")

    def gpu_summary(self, group_by: str, views: Iterable[WorkloadView] | None = None) -> list[GpuBucket]:
        """GPU totals grouped by NAMESPACE, KIND, NODE or PHASE (sorted by key).

        For NODE, pods are grouped by the node they are bound to (``<unscheduled>`` for
        none) and the spec figure is not split (it has no node).
        """
        group_by = group_by.upper()
        if views is None:
            views = self.workloads()
        if isinstance(views, list) and self._summary_cache is not None and self._summary_cache[0] is views \
                and self._summary_cache[1] == group_by:
            return self._summary_cache[2]
        result = self._summarize(group_by, views)
        if isinstance(views, list):
            self._summary_cache = (views, group_by, result)
        return result

    def _summarize(self, group_by: str, views: Iterable[WorkloadView]) -> list[GpuBucket]:
        buckets: dict[str, GpuBucket] = {}
        for view in views:
            if group_by == "NODE":
                for pod in view.all_pods():
                    if pod.terminated:
                        continue
                    bucket = buckets.setdefault(pod.node or "<unscheduled>", GpuBucket(pod.node or "<unscheduled>"))
                    add_into(bucket.pods, pod.requests)
                    if pod.node:
                        add_into(bucket.allocated, pod.requests)
                continue
            key = {"NAMESPACE": view.namespace or "", "KIND": f"{view.kind}.{view.group}" if view.group else view.kind,
                   "PHASE": view.phase.value}.get(group_by, "")
            bucket = buckets.setdefault(key, GpuBucket(key))
            bucket.workloads += 1
            add_into(bucket.spec, view.gpu.spec)
            add_into(bucket.pods, view.gpu.pods)
            add_into(bucket.allocated, view.gpu.allocated)
        return [buckets[k] for k in sorted(buckets)]
