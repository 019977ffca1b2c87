"""JSON row shapes shared by the front doors (REST and ``wmap``), so none imports another.

Each function turns a domain value into the plain ``dict`` a response or ``-o json``
prints; the keys are camelCase as in Kubernetes API objects.
"""

from __future__ import annotations

from typing import Any

from workload_map.definitions.catalog import CatalogEntry
from workload_map.definitions.registry import Entry
from workload_map.resolution import WorkloadView


def summary(view: WorkloadView) -> dict[str, Any]:
    """The workload list row (as ``kli get -o json`` plus GPU figures).

    Returns:
        ``{name, namespace, kind, apiVersion, group, uid, cluster?, createdAt, definition,
        origin, phase, phases, replicas, gpu}``; ``gpu`` holds GPU counts (devices, as
        floats) under the view's GPU policy; ``cluster`` is the view's cluster (absent
        offline, where views have none).
    """
    return {"name": view.name, "namespace": view.namespace, "kind": view.kind, "apiVersion": view.api_version,
            "group": view.group, "uid": view.uid, **({"cluster": view.cluster} if view.cluster else {}),
            "createdAt": view.created_at, "definition": view.definition,
            "origin": view.origin, "phase": view.phase.value, "phases": [p.value for p in view.phases],
            "replicas": view.replicas.to_dict(), "gpu": view.gpu.to_dict(view.policy)}


def phase_state(view: WorkloadView) -> dict[str, Any]:
    """A workload's phases: ``{phase, phases}`` (the headline phase and every matched one)."""
    return {"phase": view.phase.value, "phases": [p.value for p in view.phases]}


def definition_dict(entry: Entry) -> dict[str, Any]:
    """A definition: identity, origin, state and the Karta manifest.

    Returns:
        ``{name, group, version, kind, origin, shadowed, registeredAt, sourceVersion,
        components, manifest}``.
    """
    gvk = entry.gvk
    return {"name": entry.definition.name, "group": gvk.group, "version": gvk.version, "kind": gvk.kind,
            "origin": entry.origin, "shadowed": entry.shadowed, "registeredAt": entry.registered_at,
            "sourceVersion": entry.source_version, "components": [c.name for c in entry.definition.components],
            "manifest": entry.definition.manifest}


def catalog_row(entry: CatalogEntry) -> dict[str, Any]:
    """A built-in definition as ``wmap catalog -o json`` lists it.

    Returns:
        ``{name, group, version, kind, aliases, sourceVersion, components}``; ``aliases``
        are the short type names ``wmap get`` accepts (``ray``, ``lws``, ...).
    """
    return {"name": entry.definition.name, "group": entry.gvk.group, "version": entry.gvk.version,
            "kind": entry.gvk.kind, "aliases": list(entry.aliases), "sourceVersion": entry.source_version,
            "components": [c.name for c in entry.definition.components]}
