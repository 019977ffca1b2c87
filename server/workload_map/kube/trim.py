"""Trim objects on ingest so the cache holds only what the server reads.

Every object loses ``metadata.managedFields`` and the
``kubectl.kubernetes.io/last-applied-configuration`` annotation (controller-runtime strips
managedFields for the same memory reason: kubernetes-sigs/controller-runtime
``pkg/cache/cache.go``, ``DefaultTransform``). Pods keep only the fields that pod selectors
and resource aggregation read (pods no controller owns, which may be workloads of their own,
stay whole); CustomResourceDefinitions keep only names, scope, versions
and conditions (their OpenAPI schemas are megabytes).

Trimming never mutates its input and shares nothing with it: the result is rebuilt by
``workload_map.kube.compact`` (interned strings, small string-valued maps shared between cached
objects), so no part of a decoded list page outlives the page. ``apiVersion`` and ``kind`` are always set from the GVK, because list
items of built-in types arrive without them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workload_map.gvk import GVK
from workload_map.kube.compact import compact
from workload_map.owners import controller_uid

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

POD_METADATA = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences",
                "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation")
POD_SPEC = ("resources", "overhead", "nodeName", "schedulerName", "priorityClassName", "resourceClaims")
POD_CONTAINER = ("name", "resources", "restartPolicy")
POD_STATUS = ("phase", "conditions", "reason", "message", "startTime", "resourceClaimStatuses")
POD_CONDITION = ("type", "status", "reason", "message")
"""What a pod condition keeps: the pod row reads Ready and PodScheduled status and reason
(``workload_map.resolution.pods``), a core Pod workload's conditionsDefinition reads type,
status, reason and message; the probe and transition times, different on every pod, would
keep equal conditions from being shared (``workload_map.kube.compact``)."""

CRD_METADATA = ("name", "uid", "resourceVersion", "generation", "deletionTimestamp")

Trimmer = Callable[[GVK, Mapping[str, Any]], dict[str, Any]]


def _pick(source: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The items of ``source`` (a mapping, else nothing) whose key is in ``keys``."""
    if not isinstance(source, Mapping):
        return {}
    return {key: source[key] for key in keys if key in source}


def _clean_metadata(metadata: Any) -> dict[str, Any]:
    """A copy of ``metadata`` without managedFields and the last-applied annotation."""
    if not isinstance(metadata, Mapping):
        return {}
    out = {key: value for key, value in metadata.items() if key != "managedFields"}
    annotations = out.get("annotations")
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def trim_generic(gvk: GVK, obj: Mapping[str, Any]) -> dict[str, Any]:
    """Every field except managedFields and the last-applied annotation."""
    out = dict(obj)
    out["apiVersion"], out["kind"] = gvk.api_version, gvk.kind
    out["metadata"] = _clean_metadata(obj.get("metadata"))
    return out


def trim_pod(gvk: GVK, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The pod fields listed in ``POD_*`` (containers and conditions: ``POD_CONTAINER``, ``POD_CONDITION``).

    A pod without a controller ownerReference is kept whole (``trim_generic``): it may be a
    workload of its own (the core ``Pod`` definition, or a Karta registered for pods), and a
    definition reads its root with any jq path (condition times, ``containerStatuses``) and
    writes its spec (``nodeSelector``, ``tolerations``). Pods a controller owns are read only
    through pod-directed paths (``podSelector``, gangs) and our own pod rows.
    """
    if controller_uid(obj) is None:
        return trim_generic(gvk, obj)
    spec = obj.get("spec")
    trimmed_spec = _pick(spec, POD_SPEC)
    for field in ("containers", "initContainers"):
        containers = spec.get(field) if isinstance(spec, Mapping) else None
        if isinstance(containers, list):
            trimmed_spec[field] = [_pick(c, POD_CONTAINER) for c in containers]
    status = _pick(obj.get("status"), POD_STATUS)
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        status["conditions"] = [_pick(c, POD_CONDITION) for c in conditions]
    return {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": _pick(_clean_metadata(obj.get("metadata")), POD_METADATA),
        "spec": trimmed_spec,
        "status": status,
    }


def trim_crd(gvk: GVK, obj: Mapping[str, Any]) -> dict[str, Any]:
    """group, names (kind, plural), scope, versions (name, served, storage), conditions."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    versions = spec.get("versions")
    versions = versions if isinstance(versions, list) else []
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": _pick(obj.get("metadata"), CRD_METADATA),
        "spec": {
            "group": spec.get("group", ""),
            "scope": spec.get("scope", ""),
            "names": _pick(spec.get("names"), ("kind", "plural", "singular")),
            "versions": [_pick(v, ("name", "served", "storage")) for v in versions],
        },
        "status": {"conditions": [_pick(c, ("type", "status")) for c in conditions or []]},
    }


TRIMMERS: dict[tuple[str, str], Trimmer] = {
    ("", "Pod"): trim_pod,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): trim_crd,
}


def trim(gvk: GVK, obj: Mapping[str, Any], *, full: bool = False) -> dict[str, Any]:
    """The trimmed copy of ``obj`` for the cache.

    Args:
        gvk: the object's type (decides the trimmer; sets ``apiVersion``/``kind``).
        obj: the object as received.
        full: keep every field except managedFields and the last-applied annotation.
    """
    trimmed = trim_generic(gvk, obj) if full else TRIMMERS.get(gvk.group_kind, trim_generic)(gvk, obj)
    return compact(trimmed)  # type: ignore[no-any-return]
