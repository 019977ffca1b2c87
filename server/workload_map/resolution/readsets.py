"""Read sets: the fields of an object that resolving a workload can read, per role.

A change of a cached object can only change a workload's view if it changes a field the
resolution reads (issue 23 item 3). Three roles, decided per event (the materializer):

* **root**: the workload object itself. Its view publishes ``metadata.resourceVersion``
  (``WorkloadView.resource_version``), which every change of the object bumps, so every
  change of a root is relevant: the root read set is the whole object.
* **pod** among a workload's descendants: :data:`POD_FIXED` (what the resolver's own code
  reads: identity, labels and annotations (selectors, shared-GPU annotations), owner
  references (attribution walks), ``deletionTimestamp`` (terminating), the whole ``spec``
  (requests, node, DRA claims) and the status fields ``workload_map.resolution.pods`` and
  ``workload_map.resolution.dra`` read) plus, for every definition in force, the read paths
  of its expressions evaluated on pods (component type selectors, instance id and replica
  key paths, gang grouping keys and filters; ``workload_map.jq.reads``). One expression
  that cannot be analysed makes the pod read set the whole pod.
* **child** (any other descendant: a JobSet's Jobs, a Deployment's ReplicaSets):
  :data:`CHILD_FIXED`: identity, labels, annotations, owner references, deletion and
  creation time, ``spec`` and ``status`` (owner walks, live scale
  (``workload_map.resolution.livescale``), failing children
  (``workload_map.resolution.degraded``)). A child of a kind some definition nests
  (``workload-map.run.ai/nested``) is resolved through its own definition: the whole object.
  DRA objects (``resource.k8s.io``) are read whole too.

What no role reads, so a change only there re-resolves nothing: ``resourceVersion`` of a
descendant, ``generation``, ``finalizers``, ``managedFields`` and the pod status fields the
cache keeps but no resolution reads (``startTime``).

Comparison (:func:`differs`): the value at each read path of the old and the new object;
a path whose prefix leads to a non-object compares what was found there, so any
difference a read could see is a difference here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from workload_map.definitions.extensions import extensions_of
from workload_map.definitions.model import Component, Definition
from workload_map.gvk import GVK, POD_GVK
from workload_map.jq.reads import ReadPath, expression_reads

ReadSet = frozenset[ReadPath]
"""Read paths; ``()`` among them means the whole object."""

EVERYTHING: ReadSet = frozenset({()})

_IDENTITY: ReadSet = frozenset({
    ("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"), ("metadata", "uid"),
    ("metadata", "labels"), ("metadata", "annotations"), ("metadata", "ownerReferences"),
    ("metadata", "deletionTimestamp"), ("metadata", "creationTimestamp")})
POD_FIXED: ReadSet = _IDENTITY | {("spec",), ("status", "phase"), ("status", "conditions"), ("status", "reason"),
                                  ("status", "message"), ("status", "resourceClaimStatuses")}
CHILD_FIXED: ReadSet = _IDENTITY | {("spec",), ("status",)}
_WHOLE_GROUPS = frozenset({"resource.k8s.io"})


def _component_pod_expressions(component: Component) -> list[str]:
    selector = component.pod_selector
    if selector is None:
        return []
    out = [e for e in (selector.instance_id_path, selector.replica_key_path) if e]
    if selector.type_selector is not None and selector.type_selector.key_path:
        out.append(selector.type_selector.key_path)
    return out


def pod_expressions(definition: Definition) -> list[str]:
    """Every jq expression ``definition`` evaluates on pods (selectors and gang keys/filters)."""
    out = [e for c in definition.components for e in _component_pod_expressions(c)]
    for group in definition.gang.pod_groups if definition.gang is not None else ():
        for member in group.members:
            out += [*member.group_by_key_paths, *member.filters]
    return out


def pod_reads(definition: Definition) -> ReadSet:
    """What resolving under ``definition`` reads of a pod: :data:`POD_FIXED` and its pod expressions."""
    reads = set(POD_FIXED)
    for expression in pod_expressions(definition):
        paths = expression_reads(expression)
        if paths is None:
            return EVERYTHING
        reads |= paths
    return _minimal(reads)


def _minimal(paths: Iterable[ReadPath]) -> ReadSet:
    """``paths`` without those inside another one (``("a",)`` covers ``("a", "b")``)."""
    ordered = sorted(set(paths), key=len)
    kept: list[ReadPath] = []
    for path in ordered:
        if not any(path[:len(k)] == k for k in kept):
            kept.append(path)
    return frozenset(kept)


class ReadSets:
    """The descendant read sets of a set of definitions (module docstring), by GVK.

    Args:
        definitions: the definitions in force (registry entries, nested ones included).
    """

    def __init__(self, definitions: Iterable[Definition]) -> None:
        pods: set[ReadPath] = set(POD_FIXED)
        self.nested: set[tuple[str, str]] = set()
        for definition in definitions:
            pods |= pod_reads(definition)
            self.nested |= set(extensions_of(definition).nested)
        self.pods = _minimal(pods)

    def descendant_reads(self, gvk: GVK) -> ReadSet:
        """What resolving any workload reads of a descendant of type ``gvk``."""
        if gvk == POD_GVK:
            return self.pods
        if gvk.group_kind in self.nested or gvk.group in _WHOLE_GROUPS:
            return EVERYTHING
        return CHILD_FIXED

    def descendant_changed(self, gvk: GVK, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """True when ``old`` -> ``new`` (a descendant of type ``gvk``) changes a field read."""
        return differs(self.descendant_reads(gvk), old, new)


_MISSING = object()


def _at(obj: Any, path: ReadPath) -> Any:
    for depth, key in enumerate(path):
        if not isinstance(obj, Mapping):
            return ("not an object at", depth, obj)
        if key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def differs(reads: ReadSet, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when ``old`` and ``new`` differ at any path of ``reads`` (``()``: anywhere)."""
    return any(_at(old, path) != _at(new, path) for path in reads)
