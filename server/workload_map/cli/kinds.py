"""The TYPE argument of ``wmap get``/``describe``: which definitions in force it names.

A kind (case-insensitive, optionally plural), ``kind.group``, a definition name, or a
catalog alias (``ray``, ``ksvc``, ``deploy``); as kubectl, a kind of a built-in API group
wins over a CRD of the same kind.
"""

from __future__ import annotations

from typing import Any

from workload_map.cli.failures import fail
from workload_map.cli.inputs import EXIT_NO_DEFINITION, EXIT_USAGE
from workload_map.definitions.kinds import entries_for, is_builtin_group
from workload_map.definitions.registry import DefinitionRegistry, Entry

__all__ = ["entries_for", "is_builtin_group", "resolve_kind"]


def resolve_kind(registry: DefinitionRegistry, wanted: str, *, output: Any = None) -> list[Entry] | int:
    """The definitions ``wanted`` names, all of one group/kind, or an exit code.

    Returns ``EXIT_NO_DEFINITION`` when none covers it, ``EXIT_USAGE`` when it is ambiguous;
    the message goes to stderr, or with ``output`` json/yaml as an error object to stdout
    (``workload_map.cli.failures``).
    """
    entries = entries_for(registry, wanted)
    if not entries:
        return fail("no_definition_for_type", f'no Karta definition covers "{wanted}"', EXIT_NO_DEFINITION,
                    output=output, extra={"type": wanted}, hint="`wmap definitions` lists the covered types")
    if len({e.gvk.group_kind for e in entries}) > 1:
        # as kubectl: a kind served by a built-in API group wins over a CRD of the same kind
        # (`kubectl get job` is batch/v1 Job, not Volcano's batch.volcano.sh Job)
        builtin = [e for e in entries if is_builtin_group(e.gvk.group)]
        if len({e.gvk.group_kind for e in builtin}) == 1:
            return builtin
        names = ", ".join(sorted(f"{e.gvk.kind}.{e.gvk.group or 'core'}" for e in entries))
        return fail("ambiguous_type", f'"{wanted}" matches more than one Karta definition, retry with one of: {names}',
                    EXIT_USAGE, output=output, extra={"type": wanted})
    return entries
