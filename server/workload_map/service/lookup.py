"""Definition lookups every front door answers the same way.

GraphQL (``definitions``, ``definition``), REST (``/api/v1/definitions``) and the CLI ask
the :class:`~workload_map.definitions.registry.DefinitionRegistry` through these functions, so
"in force", "shadowed" and name matching mean one thing everywhere.
"""

from __future__ import annotations

from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import DefinitionNotFound


def definitions_in_force(registry: DefinitionRegistry, *, include_shadowed: bool = False,
                         origin: str | None = None) -> list[Entry]:
    """The definitions in force (one per root GVK), optionally with shadowed registered ones.

    Args:
        registry: the definitions registry.
        include_shadowed: also registered definitions another one for the same GVK beats
            (the oldest registration wins).
        origin: only entries of this origin (``catalog``, ``cluster``, ``state``, ``file``).

    Returns:
        Entries in force in registry order, then the shadowed ones.
    """
    entries = list(registry.entries())
    if include_shadowed:
        entries += [e for e in registry.registered() if e.shadowed]
    return [e for e in entries if origin is None or e.origin == origin]


def definition_named(registry: DefinitionRegistry, name: str) -> Entry:
    """The definition whose ``metadata.name`` or store key is ``name`` (in force or shadowed).

    Raises:
        DefinitionNotFound: no definition has that name.
    """
    for entry in [*registry.entries(), *registry.registered()]:
        if entry.definition.name == name or entry.key == name:
            return entry
    raise DefinitionNotFound(f"no definition named {name!r}")


def definition_for(registry: DefinitionRegistry, group: str, kind: str, version: str | None = None) -> Entry | None:
    """The definition in force for a root group and kind (case-insensitive), or None.

    Args:
        registry: the definitions registry.
        group: API group, ``""`` for core.
        kind: the root kind, compared case-insensitively.
        version: the root version; None matches any version of the group/kind.
    """
    for entry in registry.entries():
        gvk = entry.gvk
        if gvk.group == group and gvk.kind.lower() == kind.lower() and version in (None, gvk.version):
            return entry
    return None
