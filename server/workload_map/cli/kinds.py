"""The TYPE argument of ``wmap get``/``describe``: which definitions in force it names.

A kind (case-insensitive, optionally plural), ``kind.group``, a definition name, or a
catalog alias (``ray``, ``ksvc``, ``deploy``); as kubectl, a kind of a built-in API group
wins over a CRD of the same kind.
"""

from __future__ import annotations

import sys

from workload_map.cli.inputs import EXIT_NO_DEFINITION, EXIT_USAGE
from workload_map.definitions.kinds import entries_for, is_builtin_group
from workload_map.definitions.registry import DefinitionRegistry, Entry

__all__ = ["entries_for", "is_builtin_group", "resolve_kind"]


def resolve_kind(registry: DefinitionRegistry, wanted: str) -> list[Entry] | int:
    """The definitions ``wanted`` names, all of one group/kind, or an exit code (message on stderr).

    Returns ``EXIT_NO_DEFINITION`` when none covers it, ``EXIT_USAGE`` when it is ambiguous.
    """
    entries = entries_for(registry, wanted)
    if not entries:
        print(f'error: no Karta definition covers "{wanted}"', file=sys.stderr)
        return EXIT_NO_DEFINITION
    if len({e.gvk.group_kind for e in entries}) > 1:
        # as kubectl: a kind served by a built-in API group wins over a CRD of the same kind
        # (`kubectl get job` is batch/v1 Job, not Volcano's batch.volcano.sh Job)
        builtin = [e for e in entries if is_builtin_group(e.gvk.group)]
        if len({e.gvk.group_kind for e in builtin}) == 1:
            return builtin
        names = ", ".join(sorted(f"{e.gvk.kind}.{e.gvk.group or 'core'}" for e in entries))
        print(f'error: "{wanted}" matches more than one Karta definition, retry with one of: {names}',
              file=sys.stderr)
        return EXIT_USAGE
    return entries
