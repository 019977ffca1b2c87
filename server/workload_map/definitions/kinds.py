"""Which definitions in force a type name names: ``wmap get TYPE`` and the REST ``kind`` filter.

A kind (case-insensitive, optionally plural), ``kind.group``, a definition name, or a
catalog alias (``ray``, ``ksvc``, ``deploy``); as kubectl, a kind of a built-in API group
wins over a CRD of the same kind (``prefer_builtin``).
"""

from __future__ import annotations

from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import DefinitionNotFound


def entries_for(registry: DefinitionRegistry, wanted: str) -> list[Entry]:
    """Definitions in force for a TYPE argument.

    By kind (singular or plural), ``kind.group`` (``kind.core`` for the core group; the
    keys of ``gpuSummary(groupBy: KIND)`` are this form) or definition name; failing that,
    by catalog alias (``Catalog.find``), mapped to the group/kind's definitions in force (so
    a registered definition still wins).
    """
    w = wanted.strip().lower()
    direct = [e for e in registry.entries()
              if w in (e.gvk.kind.lower(), e.gvk.kind.lower() + "s", f"{e.gvk.kind}.{e.gvk.group or 'core'}".lower(),
                       f"{e.gvk.kind}.{e.gvk.group}".lower(), e.definition.name.lower())]
    if direct:
        return direct
    try:
        group_kind = registry.catalog.find(w).gvk.group_kind
    except DefinitionNotFound:
        return []
    return [e for e in registry.entries() if e.gvk.group_kind == group_kind]


def prefer_builtin(entries: list[Entry]) -> list[Entry]:
    """``entries`` of one group/kind: the built-in API group's when several share a kind.

    As kubectl: ``kubectl get job`` is batch/v1 Job, not Volcano's batch.volcano.sh Job.
    Entries of several CRD groups are returned unchanged (the name is ambiguous).
    """
    if len({e.gvk.group_kind for e in entries}) <= 1:
        return entries
    builtin = [e for e in entries if is_builtin_group(e.gvk.group)]
    return builtin if len({e.gvk.group_kind for e in builtin}) == 1 else entries


def is_builtin_group(group: str) -> bool:
    """True for the core group and Kubernetes' own API groups.

    Those have no dot, or are a ``*.k8s.io`` group served by kube-apiserver itself such as
    ``networking.k8s.io``; CRD groups are dotted domains.
    """
    return "." not in group or group in ("networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io",
                                         "resource.k8s.io", "scheduling.k8s.io", "node.k8s.io")
