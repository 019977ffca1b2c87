"""Owner kinds for the live CLI's top-level rule (``wmap get`` / ``describe`` on a cluster).

The server watches every kind of every definition in force, so ``WorkloadService.is_top_level``
finds each covered controller owner in its cache. The CLI starts with only the requested
type's kinds; :func:`watch_owner_kinds` adds, round by round, the kinds that the cached
objects' controller ownerReferences name, so the same rule gives the same answer
(``wmap get job`` equals the server's Job list). Owners are matched by uid, as the garbage
collector does (https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/);
an ownerReference's ``apiVersion`` may be an older version than the one watched, so kinds are
mapped by group/kind to the GVK the definitions use.
"""

from __future__ import annotations

import sys
from typing import Any

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.owners import MAX_OWNER_DEPTH


async def watch_owner_kinds(cache: Any, registry: DefinitionRegistry, *, timeout: float = 30.0) -> list[GVK]:
    """Watch the owner kinds the top-level rule needs; return the GVKs added.

    Round by round (at most ``MAX_OWNER_DEPTH``): collect the controller ownerReferences of
    every cached object, map each ``apiVersion``/``kind`` to the GVK the definitions in force
    watch for that group/kind (the server watches exactly those; an owner of a kind no
    definition involves is neither watched by the server nor here), watch the new ones and
    wait for them to sync. Stops when a round adds nothing.

    Args:
        cache: a started ``InformerCache``.
        registry: the definitions in force (catalog plus cluster Kartas).
        timeout: seconds to wait for each round's informers to sync.
    """
    served = _served(registry)
    added: list[GVK] = []
    for _ in range(MAX_OWNER_DEPTH):
        watched = set(cache.watched())
        wanted: set[GVK] = set()
        for gvk in watched:
            for obj in cache.list(gvk):
                ref = _controller_ref(obj)
                owner = served.get(_group_kind(ref)) if ref is not None else None
                if owner is not None and owner not in watched:
                    wanted.add(owner)
        if not wanted:
            break
        for gvk in sorted(wanted):
            cache.watch(gvk)
        added += sorted(wanted)
        if not await cache.wait_synced(timeout):
            print(f"warning: owner kinds not synced after {timeout:g}s; results may be incomplete", file=sys.stderr)
    return added


def _controller_ref(obj: Any) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (the one rule of ``workload_map.owners``)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid"):
            return ref
    return None


def _group_kind(ref: dict[str, Any]) -> tuple[str, str]:
    """(group, kind) of an ownerReference (``apps/v1`` -> ``apps``; ``v1`` -> core)."""
    api_version = str(ref.get("apiVersion") or "")
    return (api_version.rpartition("/")[0], str(ref.get("kind") or ""))



def _served(registry: DefinitionRegistry) -> dict[tuple[str, str], GVK]:
    """group/kind -> the GVK the definitions in force watch (what the server watches)."""
    return {g.group_kind: g for e in registry.entries() for g in (e.gvk, *e.definition.kinds())}


def report_unreadable_owners(cache: Any, registry: DefinitionRegistry) -> int:
    """Warn (stderr) about objects whose controller owner's kind cannot be read; return their count.

    Their owner may exist, but the cache cannot see it (``forbidden``, ``crd_missing``): the
    rule treats them as top-level, as the server does, and says why here.
    """
    served = _served(registry)
    unreadable: dict[GVK, int] = {}
    for gvk in cache.watched():
        for obj in cache.list(gvk):
            ref = _controller_ref(obj)
            owner = served.get(_group_kind(ref)) if ref is not None else None
            if owner is not None and ref is not None and cache.by_uid(str(ref["uid"])) is None:
                state = cache.state(owner).state
                if state in ("forbidden", "crd_missing"):
                    unreadable[owner] = unreadable.get(owner, 0) + 1
    for owner, count in sorted(unreadable.items()):
        print(f"warning: {count} object(s) have a controller owner of kind {owner.kind}.{owner.group or 'core'} "
              f"that cannot be read ({cache.state(owner).state}); they are listed as workloads", file=sys.stderr)
    return sum(unreadable.values())
